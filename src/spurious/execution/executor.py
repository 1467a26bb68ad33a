"""Executors: run independent pieces of work locally or on Ray.

The heavy steps of an audit are maps of independent tasks: AFLite's partition fits,
partial input's out-of-fold fits, the sentence encoding of distinct texts (in chunks),
cartography's null-permutation trainings and minority's clusterings.

An :class:`Executor` maps a function over a list of items and returns the results in
item order. Big read-only inputs (a feature matrix) are handed over once with
:meth:`Executor.put` and passed to every call as ``shared``; on Ray that places them in
the object store a single time, and workers read them without copying.

Functions given to :meth:`Executor.map` must be importable module-level functions
(Ray ships them to worker processes by reference) and must be pure: the same item and
shared input give the same result wherever they run.
"""

from __future__ import annotations

import contextvars
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from typing import Any

from spurious.exceptions import ParameterError, missing_dependency

logger = logging.getLogger(__name__)

__all__ = [
    "EXECUTORS",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "available_cores",
    "carry_to_workers",
    "check_ray_address",
    "executor_config",
    "make_executor",
]

#: Short names accepted by :func:`make_executor` (and the CLI's ``--executor``).
EXECUTORS = ("local", "ray")


class Executor:
    """Maps a function over items, in order. Subclasses implement :meth:`map`.

    Examples
    --------
    >>> LocalExecutor().map(lambda item, shared: item * shared, [1, 2, 3], shared=10)
    [10, 20, 30]
    """

    #: Short name (``"local"``, ``"ray"``), recorded in provenance.
    name: str = ""

    def put(self, obj: Any) -> Any:
        """Hand a big read-only object over once; pass the result as ``shared`` to :meth:`map`."""
        return obj

    @property
    def remote(self) -> bool:
        """Whether calls run in other processes (then progress bars and thread settings
        of this process do not reach them)."""
        return False

    def start(self) -> Executor:
        """Connect now rather than at the first call (a bad address then fails early)."""
        return self

    def map(
        self,
        fn: Callable[..., Any],
        items: Sequence[Any],
        *,
        shared: Any = None,
        side_by_side: bool = False,
    ) -> list:
        """``[fn(item, shared) for item in items]``, possibly in parallel, in item order.

        Parameters
        ----------
        fn : callable
            ``fn(item, shared)``; a module-level function when the executor is remote.
        items : sequence
            One call per item.
        shared : object, optional
            A value (or what :meth:`put` returned) given to every call.
        side_by_side : bool, default=False
            The calls are single-threaded units that may run at once in this process
            (torch and numpy release the GIL; each call's seeding is its own) and each
            needs little memory beyond ``shared``: the local executor then runs them
            on one worker thread per core, one intra-op thread each. Remote
            executors run calls in parallel anyway.
        """
        raise NotImplementedError  # pragma: no cover  (abstract)

    @property
    def n_workers(self) -> int:
        """How many calls can run at once (used to size chunks of work)."""
        return 1

    def close(self) -> None:
        """Release what the executor started (no-op by default)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalExecutor(Executor):
    """Runs every call in this process, one after another (the default).

    Linear algebra inside each call (numpy, PyTorch) already uses the machine's cores.

    Examples
    --------
    >>> LocalExecutor().map(divmod, [7, 9], shared=4)
    [(1, 3), (2, 1)]
    """

    name = "local"

    def map(
        self,
        fn: Callable[..., Any],
        items: Sequence[Any],
        *,
        shared: Any = None,
        side_by_side: bool = False,
    ) -> list:
        workers = min(len(items), available_cores()) if side_by_side else 1
        if workers <= 1:
            return [fn(item, shared) for item in items]
        from concurrent.futures import ThreadPoolExecutor

        from spurious.utils.threads import limit_threads

        def one(job: tuple[contextvars.Context, Any]) -> Any:
            with limit_threads(1):  # this thread's torch / OpenMP count only
                return job[0].run(fn, job[1], shared)

        # Each call runs in a copy of the caller's context (a new thread starts with an
        # empty one), so context variables set around the map, such as the run's
        # device (spurious.models.runtime.use_device), hold inside the calls too.
        jobs = [(contextvars.copy_context(), item) for item in items]
        # The process-wide BLAS pools are limited here, in the calling thread, around
        # the workers (a worker may only change its own thread's settings).
        with limit_threads(1), ThreadPoolExecutor(workers, thread_name_prefix="spurious") as pool:
            return list(pool.map(one, jobs))

    def __repr__(self) -> str:
        return "LocalExecutor()"


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask): the worker threads of a
    local ``map(side_by_side=True)``."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover  (macOS, Windows)
        return os.cpu_count() or 1


def _import_ray():
    try:
        import ray
    except ImportError:
        raise missing_dependency("ray", "ray", "The Ray executor") from None
    return ray


#: ``(capture, enter)`` pairs registered with :func:`carry_to_workers`.
_CARRIED: list[tuple[Callable[[], Any], Callable[[Any], AbstractContextManager[Any]]]] = []


def carry_to_workers(
    capture: Callable[[], Any], enter: Callable[[Any], AbstractContextManager[Any]]
) -> None:
    """Carry a piece of the caller's context into every remote call.

    A local map runs each call in a copy of the caller's :mod:`contextvars` context; a
    Ray task runs in another process, where none of it exists. For each registered pair
    :meth:`RayExecutor.map` calls ``capture()`` in the caller and runs the task inside
    ``enter(value)``. Both must be importable module-level functions (Ray ships them by
    reference) and the value picklable. The run's device is carried this way
    (:func:`spurious.models.runtime.use_device`), so ``--device cpu`` holds on the
    workers too and ``--device cuda`` fails there, naming the device, where a worker
    sees no GPU, instead of falling back to the CPU in silence.

    Examples
    --------
    >>> from spurious.models.runtime import run_device, use_device
    >>> carry_to_workers(run_device, use_device)  # done on import already: a no-op
    >>> sum(pair == (run_device, use_device) for pair in _CARRIED)
    1
    """
    if (capture, enter) not in _CARRIED:
        _CARRIED.append((capture, enter))


def _apply(
    fn: Callable[..., Any], item: Any, shared: Any, carried: Sequence[tuple[Any, Any]] = ()
) -> Any:
    # Ray resolves an ObjectRef passed as a top-level argument before the call, so
    # ``shared`` arrives here as the object itself (zero-copy for numpy arrays).
    with ExitStack() as stack:
        for enter, value in carried:
            stack.enter_context(enter(value))
        return fn(item, shared)


class RayExecutor(Executor):
    """Runs every call as a Ray task; needs ``pip install 'spurious[ray]'``.

    Parameters
    ----------
    address : str, optional
        Address of a running Ray cluster (``"auto"``, ``"ray://host:10001"``). ``None``
        connects to the cluster this process already joined, or starts a local one.
    num_cpus : int, optional
        CPUs of the local Ray instance when one is started here.
    num_cpus_per_task : float, default=1
        Ray resources each call reserves.

    Notes
    -----
    Ray is started lazily, at the first :meth:`put` or :meth:`map`. If this executor
    started it, :meth:`close` shuts it down; a Ray instance the caller started is left
    running.

    Examples
    --------
    >>> ex = RayExecutor(num_cpus=2)   # nothing starts until it is used
    >>> ex.name
    'ray'
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        num_cpus: int | None = None,
        num_cpus_per_task: float = 1,
    ) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.num_cpus_per_task = num_cpus_per_task
        self._started_here = False
        self._remote = None

    @property
    def remote(self) -> bool:
        return True

    def start(self) -> Executor:
        self._ray()
        return self

    def _ray(self):
        ray = _import_ray()
        if not ray.is_initialized():
            # ray.init retries an address nobody answers at for minutes: ask first.
            check_ray_address(self.address)
            logger.info("starting Ray (address=%r, num_cpus=%r)", self.address, self.num_cpus)
            try:
                ray.init(
                    address=self.address,
                    num_cpus=self.num_cpus,
                    include_dashboard=False,
                    ignore_reinit_error=True,
                    logging_level=logging.WARNING,
                )
            except (ConnectionError, TimeoutError) as e:  # "auto" with no cluster running
                raise ParameterError(_unreachable(self.address, str(e))) from None
            self._started_here = True
        return ray

    def put(self, obj: Any) -> Any:
        return self._ray().put(obj)

    def map(
        self,
        fn: Callable[..., Any],
        items: Sequence[Any],
        *,
        shared: Any = None,
        side_by_side: bool = False,  # every Ray task is its own unit already
    ) -> list:
        ray = self._ray()
        if self._remote is None:
            self._remote = ray.remote(num_cpus=self.num_cpus_per_task)(_apply)
        if shared is not None and not isinstance(shared, ray.ObjectRef):
            # Put once per map rather than once per task.
            shared = ray.put(shared)
        carried = [(enter, capture()) for capture, enter in _CARRIED]
        refs = [self._remote.remote(fn, item, shared, carried) for item in items]
        return ray.get(refs)

    @property
    def n_workers(self) -> int:
        ray = self._ray()
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        return max(1, math.floor(cpus / max(self.num_cpus_per_task, 1e-9)))

    def close(self) -> None:
        if self._started_here:
            ray = _import_ray()
            if ray.is_initialized():
                ray.shutdown()
            self._started_here = False
        self._remote = None

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, num_cpus={self.num_cpus!r})"


#: Seconds to wait for a Ray cluster's port to accept a connection.
RAY_CONNECT_TIMEOUT_S = 5.0


def check_ray_address(address: str | None, timeout: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Refuse a Ray address (``"host:port"``, ``"ray://host:port"``) that does not accept a
    connection, in one message naming it; ``None``, ``"auto"`` and ``"local"`` pass.

    ``ray.init`` retries an unreachable cluster for minutes and then raises from deep in
    its client; a plain TCP connection says the same in at most ``timeout`` seconds.

    Examples
    --------
    >>> check_ray_address(None)
    >>> check_ray_address("127.0.0.1:1")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The Ray executor's address (--ray-address) '127.0.0.1:1' ...
    """
    import socket

    if address is None or address in ("auto", "local"):
        return
    if not isinstance(address, str):
        raise ParameterError(
            f"The Ray executor's address must be a str. Got {type(address).__name__} instead."
        )
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rstrip("/").rpartition(":")
    if not sep and "://" in address:  # ray://head: the Ray client's default port
        host, sep, port = rest.rstrip("/"), ":", "10001"
    if not sep or not port.isdigit():
        raise ParameterError(
            "The Ray executor's address (--ray-address) must be 'host:port', "
            f"'ray://host:port' or 'auto'. Got {address!r} instead."
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as e:
        raise ParameterError(
            _unreachable(address, e.strerror or str(e) or type(e).__name__)
        ) from None


def _unreachable(address: str | None, why: str) -> str:
    return (
        f"The Ray executor's address (--ray-address) {address!r} does not answer ({why}): "
        "no Ray cluster is reachable there. Start one ('ray start --head') and pass the "
        "address it prints, or leave out --executor ray (and --ray-address) to run here."
    )


def make_executor(
    spec: str | Mapping[str, Any] | Executor | None = "local", **kwargs: Any
) -> Executor:
    """An executor from a short name (``"local"``, ``"ray"``), its plain-data form or an
    :class:`Executor`.

    Parameters
    ----------
    spec : {"local", "ray"}, dict, Executor or None
        ``None`` means ``"local"``. A dict is the form :func:`executor_config` writes in
        run configs: ``{"kind": "ray", "options": {"address": "head:6379"}}``. An
        executor instance is returned as is.
    **kwargs
        Passed to :class:`RayExecutor` (``address``, ``num_cpus``).

    Examples
    --------
    >>> make_executor("local")
    LocalExecutor()
    >>> make_executor({"kind": "local"})
    LocalExecutor()
    >>> make_executor("dask")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'executor' parameter must be one of ['local', 'ray'] or an Executor. Got 'dask' instead.
    """
    if spec is None:
        spec = "local"
    if isinstance(spec, Executor):
        return spec
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"kind", "options"})
        options = spec.get("options") or {}
        if unknown or not isinstance(options, Mapping):
            raise ParameterError(
                "The 'executor' parameter as a dict must be {'kind': 'local' | 'ray', "
                f"'options': {{...}}}}. Got {dict(spec)!r} instead."
            )
        return make_executor(spec.get("kind", "local"), **{**options, **kwargs})
    if spec == "local":
        if kwargs:
            raise ParameterError(
                f"The local executor takes no options; got {sorted(kwargs)}. Options such as "
                "'address' are for executor='ray'."
            )
        return LocalExecutor()
    if spec == "ray":
        _import_ray()  # fail early, naming the extra
        bad = sorted(set(kwargs) - {"address", "num_cpus", "num_cpus_per_task"})
        if bad:
            raise ParameterError(
                f"Unknown Ray executor option(s) {bad}; valid: ['address', 'num_cpus', "
                "'num_cpus_per_task']."
            )
        return RayExecutor(**kwargs)
    raise ParameterError(
        f"The 'executor' parameter must be one of {list(EXECUTORS)} or an Executor. "
        f"Got {spec!r} instead."
    )


def executor_config(value: Any) -> Any:
    """The plain-data form of an executor (for run configs and manifests), the inverse of
    :func:`make_executor`; names and dicts are returned as they are.

    An executor of another kind (a custom subclass) is returned as is: it has no plain
    form, so an analysis holding one cannot be written to a re-runnable config.

    Examples
    --------
    >>> executor_config(LocalExecutor()), executor_config("ray")
    ('local', 'ray')
    >>> executor_config(RayExecutor(address="head:6379"))
    {'kind': 'ray', 'options': {'address': 'head:6379'}}
    """
    if isinstance(value, LocalExecutor):
        return "local"
    if isinstance(value, RayExecutor):
        opts: dict[str, Any] = {"address": value.address, "num_cpus": value.num_cpus}
        if value.num_cpus_per_task != 1:
            opts["num_cpus_per_task"] = value.num_cpus_per_task
        return {"kind": "ray", "options": {k: v for k, v in opts.items() if v is not None}}
    return value
