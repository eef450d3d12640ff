"""prediction-format §5 and §8.6 steps 1–3: a candidate's file read without running it."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, external_data_helper, helper, numpy_helper

from auto_runtime.functions.prediction.model_file import NotLoadable, opset_problem, read_model_file, signature_problem
from tests.functions.prediction.onnx_models import candidate


def _with_opsets(*opsets: tuple[str, int]) -> bytes:
    model = onnx.load_from_string(candidate([[1], [0]], [0.5]))
    del model.opset_import[:]
    model.opset_import.extend(helper.make_opsetid(domain, version) for domain, version in opsets)
    return model.SerializeToString()


def test_the_highest_default_domain_version_counts_and_ai_onnx_ml_is_allowed() -> None:
    model = read_model_file(_with_opsets(("", 12), ("ai.onnx", 17), ("ai.onnx.ml", 3)))
    assert model.opsets == {"": 17, "ai.onnx.ml": 3} and opset_problem(model) is None


def test_other_domains_and_old_or_missing_default_domains_are_refused() -> None:
    assert "com.microsoft" in str(opset_problem(read_model_file(_with_opsets(("", 17), ("com.microsoft", 1)))))
    assert "version 12" in str(
        opset_problem(
            read_model_file(
                _with_opsets(
                    ("", 12),
                )
            )
        )
    )
    assert "does not import" in str(
        opset_problem(
            read_model_file(
                _with_opsets(
                    ("ai.onnx.ml", 3),
                )
            )
        )
    )


def test_tensors_stored_outside_the_file_are_found() -> None:
    model = onnx.load_from_string(candidate([[1], [0]], [0.5]))
    external_data_helper.set_external_data(model.graph.initializer[0], location="weights.bin")
    model.graph.initializer[0].data_location = TensorProto.EXTERNAL
    assert read_model_file(model.SerializeToString()).external


def test_a_fixed_first_dimension_or_a_missing_output_is_a_signature_problem() -> None:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["history", "w"], ["value"]), helper.make_node("Identity", ["value"], ["low"])],
        "g",
        [helper.make_tensor_value_info("history", TensorProto.FLOAT, [4, 2])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", 1]) for name in ("value", "low")],
        initializer=[numpy_helper.from_array(np.ones((2, 1), np.float32), "w")],
    )
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()
    assert "fixed at 4" in str(signature_problem(read_model_file(data), 2, 0, 1))
    signature = signature_problem(read_model_file(candidate([[1], [0]], [0.5])), 2, 1, 1)
    assert signature == "the model has no input covariates"


def test_bytes_that_are_not_a_model_are_not_loadable() -> None:
    with pytest.raises(NotLoadable):
        read_model_file(b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")
    with pytest.raises(NotLoadable):
        read_model_file(b"")
