"""Where and in what precision a transformer runs: device, autocast precision, CPU bf16.

:func:`resolve_device` and :func:`resolve_precision` turn the user's ``"auto"`` into a
device and an autocast precision (the sentence encoder and fine-tuning inference read
them; fine-tuning picks its training precision from the same pieces);
:func:`inference_context` is the no-grad, autocast context a forward pass runs in.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from spurious.exceptions import ParameterError
from spurious.execution.executor import carry_to_workers
from spurious.models.runtime.threads import import_torch

logger = logging.getLogger(__name__)

__all__ = [
    "PRECISIONS",
    "amp_context",
    "auto_device",
    "check_device",
    "cpu_supports_bf16",
    "inference_context",
    "resolve_device",
    "resolve_precision",
    "run_device",
    "use_device",
]

#: Values of every ``precision`` parameter.
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "bf16", "fp16")


@functools.lru_cache(maxsize=1)
def cpu_supports_bf16() -> bool:
    """Whether this CPU runs bf16 matmuls natively (AVX512-BF16, AMX or ARM BF16).

    oneDNN also accepts plain AVX-512 CPUs, where bf16 is emulated and slower than fp32,
    so the CPU flags are checked too.

    Examples
    --------
    >>> isinstance(cpu_supports_bf16(), bool)
    True
    """
    try:
        import torch

        if not torch.backends.mkldnn.is_available():
            return False
        if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
            return False
    except (ImportError, AttributeError, RuntimeError):
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            flags: set[str] = set()
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    flags.update(value.split())
    except OSError:
        return False  # not Linux: no reliable way to tell native from emulated
    return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})


#: Device strings a ``device`` parameter accepts (torch's names for the devices we run on).
_DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")


def check_device(device: object, what: str = "'device' parameter") -> str:
    """Refuse a device string torch would not parse (``"tpu9"``), before any work.

    Whether the device exists here is :func:`resolve_device`'s question, asked when the
    model is placed; this is the spelling only, so it needs no torch.

    Examples
    --------
    >>> check_device("cuda:1")
    'cuda:1'
    >>> check_device("tpu9")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'device' parameter must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps'. Got 'tpu9' instead.
    """
    if not isinstance(device, str) or not _DEVICE.fullmatch(device):
        raise ParameterError(
            f"The {what} must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps'. Got "
            f"{device!r} instead."
        )
    return device


#: The device of the run in progress (``spurious audit --device``): what ``"auto"``
#: means inside :func:`use_device`. A context variable, so two runs in one process (or
#: tests) do not see each other's; the local executor's worker threads run in a copy
#: of the caller's context.
_RUN_DEVICE: ContextVar[str | None] = ContextVar("spurious_run_device", default=None)


@contextlib.contextmanager
def use_device(device: str | None) -> Iterator[None]:
    """Within the block, every ``device="auto"`` (the encoder, AFLite's classifiers, the
    partial-input probes, the fast paths' MLPs) resolves to ``device``.

    ``None`` or ``"auto"`` changes nothing: "auto" stays "CUDA when available". The
    device is checked when the block is entered (a CUDA device without CUDA fails here,
    before any work).

    Examples
    --------
    >>> with use_device("cpu"):
    ...     auto_device()
    'cpu'
    """
    if device is None or device == "auto":
        yield
        return
    # "cpu" needs no torch: a run of lexical features may have none installed.
    token = _RUN_DEVICE.set("cpu" if device == "cpu" else resolve_device(device))
    try:
        yield
    finally:
        _RUN_DEVICE.reset(token)


def run_device() -> str | None:
    """The device pinned by the enclosing :func:`use_device` (``None`` outside one, or
    inside ``use_device(None)``/``use_device("auto")``).

    Examples
    --------
    >>> run_device() is None
    True
    >>> with use_device("cpu"):
    ...     run_device()
    'cpu'
    """
    return _RUN_DEVICE.get()


# Ray tasks run in other processes: each is run inside use_device(the caller's device).
carry_to_workers(run_device, use_device)


def auto_device() -> str:
    """What ``"auto"`` means here and now: the device of :func:`use_device` when inside
    one, else ``"cuda"`` when torch sees a GPU, else ``"cpu"``.

    Examples
    --------
    >>> auto_device() in ("cpu", "cuda")
    True
    """
    run = _RUN_DEVICE.get()
    if run is not None:
        return run
    torch = import_torch("Models")
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(device: str) -> str:
    """``"auto"`` -> :func:`auto_device` (``"cuda"`` when available else ``"cpu"``, or
    the run's device); a CUDA device without CUDA is an error naming the parameter.

    Examples
    --------
    >>> resolve_device("cpu")
    'cpu'
    """
    check_device(device)
    torch = import_torch("Transformer models", "encoder")
    if device == "auto":
        return auto_device()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ParameterError(
            f"The 'device' parameter is {device!r} but CUDA is not available; use 'cpu' or 'auto'."
        )
    index = int(device.partition(":")[2] or 0)
    if device.startswith("cuda:") and index >= torch.cuda.device_count():
        raise ParameterError(
            f"The 'device' parameter is {device!r} but this machine has "
            f"{torch.cuda.device_count()} CUDA device(s) (cuda:0 ...); use one of them or 'auto'."
        )
    if device == "mps" and not torch.backends.mps.is_available():
        raise ParameterError(
            "The 'device' parameter is 'mps' but Apple's MPS backend is not available here; "
            "use 'cpu' or 'auto'."
        )
    return device


def resolve_precision(precision: str, device: str) -> str:
    """The autocast precision used on ``device`` for ``precision`` (``"auto"`` resolved:
    fp16 on CUDA, bf16 on CPUs with native bf16, else fp32).

    Examples
    --------
    >>> resolve_precision("fp32", "cpu")
    'fp32'
    """
    torch = import_torch("Transformer models", "encoder")
    if precision not in PRECISIONS:
        raise ParameterError(
            f"The 'precision' parameter must be one of {list(PRECISIONS)}. "
            f"Got {precision!r} instead."
        )
    if device.startswith("cuda"):
        # fp16 keeps 3 more mantissa bits than bf16 and small BERTs do not overflow it.
        return "fp16" if precision == "auto" else precision
    if device != "cpu":
        return "fp32" if precision == "auto" else precision
    if precision == "fp16":
        raise ParameterError(
            "The 'precision' parameter 'fp16' needs a CUDA device; on CPU use 'bf16' or "
            "'fp32' (or 'auto')."
        )
    if precision in ("auto", "bf16"):
        if cpu_supports_bf16():
            return "bf16"
        if precision == "bf16":
            try:
                emulated = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
            except (AttributeError, RuntimeError):
                emulated = False
            if emulated:
                return "bf16"  # emulated by oneDNN: slow, but the user asked for it
            logger.warning("This CPU has no bf16 support; encoding in fp32 instead.")
        return "fp32"
    return "fp32"


def amp_context(device: str, precision: str) -> Any:
    """``torch.autocast`` for ``precision`` (``"bf16"``/``"fp16"``) or a null context."""
    torch = import_torch("Transformer models", "encoder")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=dtype)


@contextlib.contextmanager
def inference_context(device: str, precision: str) -> Iterator[None]:
    """``torch.inference_mode()`` and the autocast of ``precision``: the context of every
    no-grad forward pass. Both modes are thread-local, so a worker thread enters it
    itself, around its own batch."""
    torch = import_torch("Transformer models", "encoder")
    with torch.inference_mode(), amp_context(device, precision):
        yield
