"""Fine-tunes as shared inputs of a run: built once per (data, view, config), cached on disk.

:func:`finetune_cached` is what artifact providers call (``training_dynamics`` with
``path="finetune"``, a trained model, hidden states; :mod:`spurious.artifacts.finetune`):
the first call fine-tunes on ``train`` (recording ``eval`` too, never training on it) into
``<cache>/finetune/<key>/``; later calls, in this run or the next, load the result. The
key is the datasets' fingerprints, the view and the config fields that change the
weights (:meth:`FineTuneConfig.identity`), plus the base model's identity (package
version or weight-file stamps). A fine-tune interrupted while filling the cache resumes
from its last checkpoint on the next call.

:func:`warmup_split` is AFLite's warm-up recipe (paper 000 Sec. 4): fine-tune on a small
held-out fraction and filter the rest with that model's representation.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spurious.exceptions import ParameterError
from spurious.models.finetune.config import FineTuneConfig
from spurious.models.finetune.debias import check_side_inputs
from spurious.models.finetune.engine import METRICS_FILE, FineTuneResult, fine_tune
from spurious.models.runtime import resolve_model
from spurious.utils.hashing import stable_hash

if TYPE_CHECKING:  # pragma: no cover
    from spurious.data.dataset import Dataset

logger = logging.getLogger(__name__)

#: Bump when the cached outputs change meaning; older entries then simply miss.
_CACHE_VERSION = 1


def finetune_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Folder of cached fine-tunes: ``<cache>/finetune`` (``$SPURIOUS_CACHE_DIR`` or
    ``~/.cache/spurious/features``, see :func:`spurious.utils.cache.default_cache_dir`).

    Examples
    --------
    >>> finetune_cache_dir("/tmp/c").as_posix()
    '/tmp/c/finetune'
    """
    from spurious.utils.cache import default_cache_dir

    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return root / "finetune"


def finetune_key(
    train: Dataset,
    eval: Dataset | None,
    cfg: FineTuneConfig,
    side_inputs: str | None = None,
) -> str:
    """The cache key of a fine-tune of ``cfg`` on ``train`` (recording ``eval``).

    ``cfg.identity()`` holds the objective (``loss``, ``loss_params``) unless it is plain
    cross-entropy; ``side_inputs`` is the digest of the bias / teacher probabilities
    (:meth:`~spurious.models.finetune.debias.SideInputs.digest`), left out when ``None``
    so plain keys stay what they were.
    """
    payload: dict[str, Any] = {
        "version": _CACHE_VERSION,
        "train": train.fingerprint,
        "eval": None if eval is None else eval.fingerprint,
        "config": cfg.identity(),
        "model": resolve_model(cfg.model)[2],
    }
    if side_inputs is not None:
        payload["side_inputs"] = side_inputs
    return stable_hash(payload, 24)


def finetune_cached(
    train: Dataset,
    eval: Dataset | None = None,
    *,
    view: str = "full",
    cache_dir: str | os.PathLike[str] | None = None,
    bias_probs: Any = None,
    teacher_probs: Any = None,
    progress: bool | None = None,
    **config: Any,
) -> FineTuneResult:
    """The fine-tune of ``config`` on ``train`` (dynamics of ``eval`` too, never trained
    on), from the on-disk cache when it holds it.

    Parameters
    ----------
    train : Dataset
        The rows to train on (e.g. a run's data, or RESAM-resampled rows of it).
    eval : Dataset, optional
        Recorded after every epoch, never trained on.
    view : str
        The view the model sees (``"full"``, ``"hypothesis_only"`` ...).
    cache_dir : path, optional
        Cache root (default :func:`finetune_cache_dir`).
    bias_probs, teacher_probs : array of shape (len(train), n_classes), optional
        Side inputs of a debiasing ``loss`` (see :func:`fine_tune`); their digest is part
        of the cache key.
    progress : bool, optional
        Progress bars (``None``: where a person watches).
    **config
        :class:`FineTuneConfig` fields (``epochs``, ``model``, ``learning_rate`` ...).

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> train, dev = make_nli_artifacts(n=300, random_state=0).dataset.split(0.3)
    >>> res = finetune_cached(train, dev, view="hypothesis_only", epochs=1)  # doctest: +SKIP
    >>> res.model_dir.name  # doctest: +SKIP
    'model'
    """
    cfg = FineTuneConfig.from_dict({**config, "view": view})
    # Checkpoints in the cache only serve an interrupted build; they are removed after it.
    cfg = cfg.replace(save_checkpoints=True, keep_checkpoints=False)
    side = check_side_inputs(cfg.loss, len(train), train.n_classes, bias_probs, teacher_probs)
    key = finetune_key(train, eval, cfg, side.digest())
    folder = finetune_cache_dir(cache_dir) / key
    if (folder / METRICS_FILE).is_file():
        logger.info("fine-tune %s (%s) from the cache (%s)", cfg.view, cfg.loss, folder)
        return FineTuneResult.load(folder)
    return fine_tune(
        train, eval, cfg, folder, progress=progress, resume=True,
        bias_probs=side.bias_probs, teacher_probs=side.teacher_probs,
    )  # fmt: skip


def warmup_split(
    dataset: Dataset, fraction: float = 0.1, seed: int = 0, *, group_by: str | None = "auto"
) -> tuple[Dataset, Dataset]:
    """``(warmup, rest)``: a seeded held-out warm-up fraction and the rows left to filter.

    Paper 000 (Sec. 2 "Implementation", Sec. 4) fine-tunes the representation Phi on a
    random 10% warm-up sample and does not reuse it: fine-tune on ``warmup``, then run
    AFLite on ``rest`` with ``features="finetuned:<model dir>"``. Rows sharing a group
    (for NLI by default the premise) stay on one side, so no warm-up premise reappears
    in the filtered data.

    Parameters
    ----------
    dataset : Dataset
    fraction : float, default=0.1
        Share of the rows (of the groups, when grouping) in the warm-up split, in (0, 1).
    seed : int, default=0
    group_by : "auto", None or a column
        See :meth:`spurious.data.dataset.Dataset.group_keys`.

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=300, random_state=0).dataset
    >>> warm, rest = warmup_split(ds, 0.1, seed=0)
    >>> len(warm) + len(rest) == len(ds), set(warm.ids).isdisjoint(rest.ids)
    (True, True)
    """
    if not isinstance(fraction, float | int) or not 0.0 < float(fraction) < 1.0:
        raise ParameterError(
            f"The 'fraction' parameter must be a float in the range (0, 1). Got {fraction!r} "
            "instead."
        )
    rest, warm = dataset.split(
        test_size=float(fraction), random_state=seed, stratify=True, group_by=group_by
    )
    return warm.subset(range(len(warm)), f"{dataset.name}[warmup]"), rest.subset(
        range(len(rest)), f"{dataset.name}[rest]"
    )
