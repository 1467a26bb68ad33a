"""Where independent pieces of work run: in this process (default) or on a Ray cluster."""

from spurious.execution.executor import (
    EXECUTORS,
    Executor,
    LocalExecutor,
    RayExecutor,
    make_executor,
)

__all__ = ["EXECUTORS", "Executor", "LocalExecutor", "RayExecutor", "make_executor"]
