"""The computation type's core, below HTTP: documents, save-time checks, runs and their endings."""

from auto_runtime.functions.computation.check import CheckResult, check_document, check_document_now
from auto_runtime.functions.computation.document import ComputationDocument, parse_document, problem_details
from auto_runtime.functions.computation.run import Succeeded, describe, run_computation
from auto_runtime.problems import InputIssue as Issue
from auto_runtime.problems import Rejection

__all__ = [
    "CheckResult",
    "ComputationDocument",
    "Issue",
    "Rejection",
    "Succeeded",
    "check_document",
    "check_document_now",
    "describe",
    "parse_document",
    "problem_details",
    "run_computation",
]
