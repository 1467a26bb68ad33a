"""Where independent pieces of work run: in this process (default) or on a Ray cluster.

:mod:`~spurious.execution.executor` holds the executors; :mod:`~spurious.execution.scope`
the executor of a run, which steps shared by every analysis (the sentence encoding) use.
"""

from spurious.execution.executor import (
    EXECUTORS,
    Executor,
    LocalExecutor,
    RayExecutor,
    available_cores,
    executor_config,
    make_executor,
)
from spurious.execution.scope import current_executor, resolve_executor, use_executor

__all__ = [
    "EXECUTORS",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "available_cores",
    "current_executor",
    "executor_config",
    "make_executor",
    "resolve_executor",
    "use_executor",
]
