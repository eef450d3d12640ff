"""`ModelWork`: what the three parts that run candidate models share (questions answered, builds scored, shadow
checks), so each is built from the same four pieces and reads the same ledger as the builds."""

from __future__ import annotations

from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.cache_folder import CacheFolder
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.functions.prediction.model_pool import ModelPool
from auto_runtime.ledger import PlaybookScope
from auto_runtime.sandbox.fair_queue import JobOwner


def job_owner(scope: PlaybookScope) -> JobOwner:
    """Whom a model job is for: the org and playbook whose turn it waits for in the pool's fair queue."""
    return JobOwner(scope.org, scope.playbook)


class ModelWork:
    """The builds, the datasets, the pool of model processes and the cache folder of candidates' files."""

    def __init__(self, builds: Builds, datasets: Datasets, pool: ModelPool, cache: CacheFolder) -> None:
        self.builds = builds
        self.datasets = datasets
        self.pool = pool
        self.cache = cache
        self.ledger = builds.ledger
