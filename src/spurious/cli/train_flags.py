"""``spurious train``'s errors in the command's words: flags, not the engine's arguments.

The fine-tuning engine (:func:`spurious.models.finetune.fine_tune`, ``FineTuneConfig``)
names its Python arguments (``output_dir``, ``overwrite=True``, ``learning_rate``); the
person at the terminal typed ``--out``, ``--force``, ``--lr``. :func:`api_names_as_flags`
rewrites the package's errors raised inside the command, and :func:`check_resumable`
refuses a ``--resume`` with nothing to resume before any work.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

#: Engine argument or ``FineTuneConfig`` field -> the ``spurious train`` flag that sets it.
FLAGS = {
    "output_dir": "--out",
    "overwrite": "--force",
    "resume": "--resume",
    "model": "--model",
    "view": "--view",
    "epochs": "--epochs",
    "learning_rate": "--lr",
    "batch_size": "--batch-size",
    "gradient_accumulation_steps": "--grad-accum",
    "warmup_ratio": "--warmup-ratio",
    "weight_decay": "--weight-decay",
    "max_length": "--max-length",
    "seed": "--seed",
    "early_stopping_patience": "--patience",
    "precision": "--precision",
    "dynamics_per_epoch": "--dynamics-per-epoch",
    "train_dynamics": "--train-dynamics",
    "device": "--device",
    "loop": "--loop",
}
_NAMES = "|".join(FLAGS)


def _flag(match: re.Match[str]) -> str:
    return FLAGS[match.group(1)]


_RULES: tuple[tuple[re.Pattern[str], Any], ...] = (
    # "The 'output_dir' (--out) 'x'" / "The 'epochs' parameter of FineTuneConfig must"
    (re.compile(rf"The '({_NAMES})' \(--[\w-]+\)"), _flag),
    # (another class' parameter of the same name is left alone)
    (re.compile(rf"The '({_NAMES})' parameter(?: of FineTuneConfig)?(?! of)"), _flag),
    (re.compile(rf"The '({_NAMES})'(?! parameter)"), _flag),
    # "pass overwrite=True (--force)" / "resume=True"
    (re.compile(r"\b(overwrite|resume)=True(?: \(--[\w-]+\))?"), _flag),
    (re.compile(r", or load it with FineTuneResult\.load"), ", or choose another --out"),
    # The training loop's errors: "FineTuneConfig(compile=True) needs ... loop='lean'"
    (re.compile(r"FineTuneConfig\(compile=True\)"), "--compile"),
    (re.compile(r"FineTuneConfig\(loop='(\w+)'\)"), r"--loop \1"),
    (re.compile(r"loop='(\w+)' or '(\w+)'"), r"--loop \1 or \2"),
    (re.compile(r"loop='(\w+)'"), r"--loop \1"),
    (re.compile(r"with compile=False"), "without --compile"),
)


def flag_message(message: str) -> str:
    """``message`` with the engine's argument names replaced by ``spurious train``'s flags.

    Examples
    --------
    >>> flag_message("The 'output_dir' 'runs/t' holds a finished fine-tune; pass "
    ...              "overwrite=True (--force) to replace it, or load it with FineTuneResult.load.")
    "--out 'runs/t' holds a finished fine-tune; pass --force to replace it, or choose another --out."
    >>> flag_message("The 'learning_rate' parameter of FineTuneConfig must be a float in the "
    ...              "range (0.0, inf). Got -1.0 instead.")
    '--lr must be a float in the range (0.0, inf). Got -1.0 instead.'
    >>> flag_message("FineTuneConfig(compile=True) compiles the lean loop only; it cannot "
    ...              "be combined with loop='trainer'.")
    '--compile compiles the lean loop only; it cannot be combined with --loop trainer.'
    >>> flag_message("The 'model' parameter of Cartography must be 'mlp'.")
    "The 'model' parameter of Cartography must be 'mlp'."
    """
    for pattern, repl in _RULES:
        message = pattern.sub(repl, message)
    return message


def api_names_as_flags(command: F) -> F:
    """Decorate a command: the package's errors it raises name flags, not arguments."""
    from spurious.exceptions import SpuriousError

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except SpuriousError as e:
            text = flag_message(str(e))
            if text == str(e):
                raise
            try:  # same type (and so the same exit code), the rewritten message
                mapped = type(e)(text)
            except TypeError:  # a subclass with other constructor arguments
                raise e from None
            raise mapped from None

    return wrapper  # type: ignore[return-value]


def check_resumable(out: Path, *, force: bool) -> None:
    """``--resume`` needs something in ``out`` to continue, and contradicts ``--force``.

    Something to continue: a complete checkpoint of an interrupted fine-tune, or the
    trained ConfReg teacher of a debiasing one (``out/teacher``). Without either,
    ``--resume`` would silently start from scratch.
    """
    from spurious.models.finetune.outputs import CHECKPOINT_DIR, last_complete_checkpoint

    if force:
        raise click.BadParameter(
            "continues the fine-tune in --out, and --force starts it over; pass one of them.",
            param_hint="--resume",
        )
    ckpt_dir = Path(out) / CHECKPOINT_DIR
    last = last_complete_checkpoint(ckpt_dir) if ckpt_dir.is_dir() else None
    teacher = (Path(out) / "teacher" / "metrics.json").is_file()
    finished = (Path(out) / "metrics.json").is_file()  # the engine says how to replace it
    if last is None and not teacher and not finished:
        raise click.BadParameter(
            f"nothing to resume: {str(out)!r} holds no checkpoint of an interrupted fine-tune "
            f"({CHECKPOINT_DIR}/checkpoint-<step> with trainer_state.json). Leave --resume "
            "out to start one.",
            param_hint="--resume",
        )
