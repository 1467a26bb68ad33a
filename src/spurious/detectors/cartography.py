"""Dataset cartography and partial-input cartography: paper 002 Sec. 3 (Swayamdipta et al. 2020).

A model is trained on the data and, after every epoch, gives each example a probability
for its gold label. The mean over epochs (*confidence*) and its spread (*variability*)
place the example on a *data map*: easy-to-learn (high confidence), hard-to-learn (low
confidence) or ambiguous (high variability). Paper 002 marks the q% most hard-to-learn
examples of each split *anti-biased* (Sec. 3, "Dataset Cartography") and repeats the map
with a model that sees only part of the input (Sec. 3, "Partial-input Baselines": the
hypothesis for NLI, the first question for QQP): an example a hypothesis-only model
learns easily is one whose label shows in the hypothesis alone.

Evaluation examples get their dynamics from the model trained on the training split,
recorded after each epoch as validation accuracy would be, never trained on (paper 002
footnote 5). Without an evaluation split the training examples are mapped.

Deviations from the papers (see docs/methods/cartography.md):

- The default dynamics come from the *fast path*: a one-hidden-layer MLP trained for 10
  epochs on frozen sentence embeddings (:func:`spurious.models.dynamics.probe_dynamics`),
  not a fine-tuned RoBERTa-base (``path="finetune"`` uses the fine-tuning engine).
- Probabilities are recorded after each epoch with the model in evaluation mode (the
  definition of Swayamdipta et al. Sec. 2); allenai/cartography's trainer logs the
  logits of the training forward passes instead.
- Regions: Swayamdipta et al. name the regions on the map and, for their selection
  experiments (Sec. 4), take the 33% most ambiguous (highest variability), easy-to-learn
  (highest confidence) and hard-to-learn (lowest confidence) examples. We assign each
  example one region by those rank rules, confidence first (see :func:`assign_regions`).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.data.tasks import Task
from spurious.detectors.base import Detector
from spurious.exceptions import DetectorError, ParameterError
from spurious.models.dynamics import FAST_OPTIONS, PATHS, TrainingDynamics, cartography_stats
from spurious.utils.validation import Interval, StrOptions
from spurious.views import get_view

__all__ = [
    "REGIONS",
    "Cartography",
    "anti_biased_mask",
    "assign_regions",
    "default_partial_view",
    "difference_interval",
    "excess_over_null",
    "spearman_interval",
    "top_k_count",
]

#: Region names, in the order the report lists them.
REGIONS = ("easy_to_learn", "ambiguous", "hard_to_learn", "other")
#: Fewest training examples the analysis runs on (ranks and quantiles need a few).
MIN_TRAIN_EXAMPLES = 10
#: Provider options that are parameters of the analysis itself.
_RESERVED_OPTIONS = ("path", "view", "features", "epochs", "model", "random_state", "source")
#: Columns computed per view; the partial view's carry the ``partial_`` prefix.
_VIEW_COLUMNS = (
    "confidence",
    "variability",
    "correctness",
    "forgetting",
    "region",
    "anti_biased",
    "cartography_score",
)


# =======================================================================================
# Regions and anti-biased examples
# =======================================================================================
def top_k_count(fraction: float, n: int) -> int:
    """``round(fraction * n)`` with halves rounded up (Python's ``round`` goes to even).

    Examples
    --------
    >>> top_k_count(0.21, 90), top_k_count(0.25, 10), top_k_count(0.0, 5)
    (19, 3, 0)
    """
    return math.floor(fraction * n + 0.5)


def _lowest(values: np.ndarray, k: int) -> np.ndarray:
    """Mask of the ``k`` smallest values; ties go to the earlier row (stable sort)."""
    mask = np.zeros(len(values), dtype=bool)
    mask[np.argsort(values, kind="stable")[:k]] = True
    return mask


def anti_biased_mask(confidence: Any, fraction: float) -> np.ndarray:
    """The ``fraction`` most hard-to-learn examples: lowest confidence (paper 002 Sec. 3).

    Exactly :func:`top_k_count` ``(fraction, n)`` examples are marked; among equal
    confidences the earlier row is taken.

    Parameters
    ----------
    confidence : array-like of float
        Mean gold-label probability per example.
    fraction : float in [0, 1]
        q / 100.

    Returns
    -------
    numpy.ndarray of bool

    Examples
    --------
    >>> anti_biased_mask([0.9, 0.1, 0.5, 0.3], 0.5).tolist()
    [False, True, False, True]
    """
    conf = np.asarray(confidence, dtype=float)
    if not 0.0 <= fraction <= 1.0:
        raise ParameterError(f"The 'fraction' argument must be in [0, 1]; got {fraction!r}.")
    return _lowest(conf, top_k_count(fraction, len(conf)))


def assign_regions(
    confidence: Any,
    variability: Any,
    *,
    ambiguous_fraction: float = 0.33,
    hard_fraction: float = 0.33,
    easy_fraction: float = 0.33,
) -> np.ndarray:
    """One data-map region per example, by rank (Swayamdipta et al. 2020, Sec. 4).

    With ``n`` examples and ``k(f) =`` :func:`top_k_count` ``(f, n)``:

    1. ``easy_to_learn``: the ``k(easy_fraction)`` examples of highest confidence;
    2. ``hard_to_learn``: the ``k(hard_fraction)`` examples of lowest confidence;
    3. ``ambiguous``: of the ``k(ambiguous_fraction)`` examples of highest variability,
       those in neither of the above;
    4. ``other``: the rest (middle confidence, low variability).

    Ranks are taken over all ``n`` examples; ties go to the earlier row. The defaults
    are the 33% of Swayamdipta et al.'s selection experiments. Confidence decides first:
    an example learned early and kept (confidence 0.9) is easy even if the climb to 0.9
    makes its variability high, as happens to planted cues.

    Parameters
    ----------
    confidence, variability : array-like of float
    ambiguous_fraction, hard_fraction, easy_fraction : float in [0, 1]
        ``hard_fraction + easy_fraction`` must not exceed 1.

    Returns
    -------
    numpy.ndarray of str

    Examples
    --------
    >>> conf = [0.95, 0.9, 0.5, 0.55, 0.1, 0.05]
    >>> var = [0.01, 0.02, 0.40, 0.35, 0.02, 0.01]
    >>> assign_regions(conf, var).tolist()
    ['easy_to_learn', 'easy_to_learn', 'ambiguous', 'ambiguous', 'hard_to_learn', 'hard_to_learn']
    """
    conf = np.asarray(confidence, dtype=float)
    var = np.asarray(variability, dtype=float)
    if conf.shape != var.shape or conf.ndim != 1:
        raise ParameterError(
            "The 'confidence' and 'variability' arguments must be 1-D and of equal length; got "
            f"shapes {conf.shape} and {var.shape}."
        )
    for name, f in (
        ("ambiguous_fraction", ambiguous_fraction),
        ("hard_fraction", hard_fraction),
        ("easy_fraction", easy_fraction),
    ):
        if not 0.0 <= f <= 1.0:
            raise ParameterError(f"The {name!r} argument must be in [0, 1]; got {f!r}.")
    if hard_fraction + easy_fraction > 1.0:
        raise ParameterError(
            "The 'hard_fraction' and 'easy_fraction' arguments must sum to at most 1; got "
            f"{hard_fraction} + {easy_fraction}."
        )
    n = len(conf)
    easy = _lowest(-conf, top_k_count(easy_fraction, n))
    hard = _lowest(conf, top_k_count(hard_fraction, n)) & ~easy
    ambiguous = _lowest(-var, top_k_count(ambiguous_fraction, n)) & ~easy & ~hard
    out = np.full(n, "other", dtype=object)
    out[easy] = "easy_to_learn"
    out[hard] = "hard_to_learn"
    out[ambiguous] = "ambiguous"
    return out


def default_partial_view(task: Task) -> str | None:
    """The partial input paper 002 maps (Sec. 4.1): hypothesis-only for NLI, the first
    text of other pairs (the first question for QQP); ``None`` for single-text tasks.

    Examples
    --------
    >>> from spurious.data.tasks import get_task
    >>> default_partial_view(get_task("nli")), default_partial_view(get_task("pair"))
    ('hypothesis_only', 'text_a_only')
    >>> default_partial_view(get_task("text")) is None
    True
    """
    if len(task.text_fields) < 2:
        return None
    field = task.elicited_field or task.text_fields[0]
    return f"{field}_only"


#: Why the fast path's full-input map is a proxy (issue 19 item 12; numbers measured on SNLI
#: dev: bench/results/finetune.json, agreement_fast_vs_finetune, and README).
FAST_PATH_NOTE = (
    "The fast path is a proxy: an MLP trained {epochs} epochs on frozen {features} sentence "
    "features, not a fine-tuned model. Such a probe sees mostly hypothesis cues: on SNLI dev "
    "its full-input confidence agreed with a fine-tuned MiniLM's map at Spearman 0.54 only. "
    "For a full-input map use path='finetune' (or load dynamics of your own training run)."
)


# =======================================================================================
# The analysis
# =======================================================================================
@register_analysis
class Cartography(Detector):
    """Data maps from training dynamics, anti-biased examples, partial-input cartography.

    Parameters
    ----------
    path : {"fast", "finetune", "load"}, default="fast"
        Where the dynamics come from: ``"fast"``, a probe trained for ``epochs`` epochs
        on frozen ``features`` (seconds); ``"finetune"``, the fine-tuning engine
        (``spurious.models.finetune``); ``"load"``, dynamics saved earlier in
        ``dynamics_dir`` (:meth:`TrainingDynamics.save` or allenai/cartography files) for
        the full view, the partial view then taking the fast path.
    features : str, default="minilm"
        Featurizer spec of the fast path (``"bow"``, ``"tfidf"``, ``"minilm"``, a model
        folder); the matrices are shared with the other analyses of the run.
    view : str, default="full"
        The input the mapped model sees.
    partial_view : str or None, default="auto"
        The partial input mapped beside it (partial-input cartography, paper 002 Sec. 3):
        ``"auto"`` = hypothesis-only for NLI, the first text for other pairs, none for
        single texts; ``None`` = no partial-input map.
    epochs : int, optional
        Training epochs; default 10 on the fast path (paper 002 Table 8: at most 10 for
        base models), the engine's default (3) when fine-tuning.
    model : str, optional
        Fast path: ``"mlp"`` (default) or ``"linear"``; fine-tune path: the model to
        fine-tune (default: the engine's).
    train_options : dict, optional
        More training settings passed to the dynamics maker (fast path: ``lr``,
        ``batch_size``, ``hidden_size``, ``weight_decay``, ``records_per_epoch``,
        ``standardize``).
    dynamics_dir : str, optional
        Folder read when ``path="load"``.
    anti_biased_fraction : float, default=0.21
        q / 100: the share of the scored split marked anti-biased (its most hard-to-learn
        examples). Paper 002 picks q per dataset so that the biased training set keeps
        79% of MultiNLI, 82% of QQP and ANLI and 87% of WANLI (Sec. 4.1, Table 7: 2,070
        anti-biased of 9,815 MultiNLI test examples); the default is MultiNLI's 21%.
    ambiguous_fraction, hard_fraction, easy_fraction : float, default=0.33
        Region sizes by rank (see :func:`assign_regions`), Swayamdipta et al.'s 33%.
    n_examples : int, default=10
        Examples per region kept for the report.
    held_out_folds : int, optional
        Without an evaluation split, on the fast path: map each training example with a
        probe trained on the other folds (cross-fitted dynamics,
        :func:`~spurious.models.dynamics.crossfit_dynamics`), e.g. 2. ``None`` (default):
        in-sample dynamics, Swayamdipta et al.'s definition, where a probe that
        memorises its training data makes late epochs "easy" for every example.
    null_permutations : int, default=5
        Fast path with a partial-input map: map both views again this many times with
        the labels permuted (seeded) and report the agreement of the two maps beyond
        what permuted labels give (the headline's null); 0 skips it. A full-input and a
        partial-input probe agree even on permuted labels (both see the partial input
        and the label base rates), and that agreement varies between permutations (sd
        ~0.05 on a few hundred examples), so one draw is not enough.
    random_state : int, default=0

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> train, test = make_nli_artifacts(n=400, random_state=0).dataset.split(0.3)
    >>> res = Cartography(features="bow", epochs=3).run(train, test)
    >>> sorted(set(res.scores["region"])) <= sorted(REGIONS)
    True
    >>> int(res.scores["anti_biased"].sum()) == top_k_count(0.21, len(test))
    True
    """

    name: ClassVar[str] = "cartography"
    description: ClassVar[str] = (
        "Data maps from training dynamics (confidence, variability), easy / ambiguous / "
        "hard-to-learn regions, anti-biased examples and partial-input cartography - "
        "paper 002 Sec. 3 after Swayamdipta et al. 2020."
    )
    requires: ClassVar[Requirements] = Requirements(
        labels=True, features=True, training_dynamics=True
    )
    #: Spearman correlation of full-input and partial-input confidence beyond the same
    #: correlation with permuted labels: how far what the full model finds easy is what the
    #: partial input alone makes easy. The null already sits high (0.68-0.84 on synthetic
    #: NLI), so the excess lives on a compressed scale: 0.05 / 0.15 / 0.3.
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.05,
        0.15,
        0.3,
        {
            "none": "easy examples are not the ones the partial input gives away",
            "low": "weak agreement with the partial-input map",
            "moderate": "easy examples are partly those the partial input gives away",
            "high": "what is easy to learn is largely what the partial input gives away",
        },
    )
    fast_params: ClassVar[dict[str, Any]] = {"features": "bow", "epochs": 3}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        "quick": {"epochs": 5, "null_permutations": 3},
        "full": {},
    }
    metric_docs: ClassVar[dict[str, str]] = {
        "share_<region>": "Fraction of scored examples in the region "
        "(easy_to_learn, ambiguous, hard_to_learn, other), [0, 1].",
        "mean_confidence": "Mean over examples of the mean gold-label probability, [0, 1].",
        "mean_variability": "Mean over examples of the std of the gold-label probability.",
        "mean_correctness": "Mean fraction of epochs an example was predicted correctly.",
        "mean_forgetting": "Mean number of correct -> incorrect transitions per example.",
        "n_anti_biased": "Scored examples marked anti-biased (the q% hardest).",
        "anti_biased_fraction": "n_anti_biased / n_scored.",
        "n_anti_biased_train": "With an evaluation split: training examples marked the same way.",
        "hard_confidence_cut": "Highest confidence among the anti-biased examples.",
        "final_accuracy": "Accuracy on the scored split at the last recording, [0, 1].",
        "partial_<metric>": "The same for the partial-input map.",
        "spearman_confidence": "Spearman rho of full vs partial-input confidence, [-1, 1].",
        "spearman_confidence_ci_low": "Lower end of its 95% Fisher-z interval (se "
        "sqrt(1.06 / (n - 3)), Fieller et al. 1957).",
        "spearman_confidence_ci_high": "Upper end of that interval.",
        "spearman_confidence_null": "Mean of the same rho over null_permutations pairs of "
        "maps made with the labels permuted (fast path), [-1, 1].",
        "spearman_confidence_null_sd": "Standard deviation of that rho over the permutations.",
        "spearman_excess": "spearman_confidence - spearman_confidence_null: the agreement due "
        "to the labels (the headline effect).",
        "spearman_excess_ci_low": "Lower end of its 95% normal interval; se^2 = the delta-"
        "method variance of rho, (1 - rho^2)^2 * 1.06 / (n - 3), plus null_sd^2 * (1 + 1/B).",
        "spearman_excess_ci_high": "Upper end of that interval.",
        "spearman_excess_p_value": "One-sided p-value of spearman_excess > 0 (normal, same se).",
        "anti_biased_jaccard": "Jaccard overlap of the full and partial anti-biased sets.",
        "n_scored": "Examples scored.",
        "n_train": "Examples the mapping model trained on.",
        "n_recordings": "Recordings (epochs) per example.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "label": "Gold label.",
        "confidence": "Mean gold-label probability over epochs, [0, 1].",
        "variability": "Population std of the gold-label probability over epochs, [0, 0.5].",
        "correctness": "Fraction of epochs the prediction was the gold label, [0, 1].",
        "forgetting": "Correct -> incorrect transitions between consecutive epochs, >= 0.",
        "region": "easy_to_learn, ambiguous, hard_to_learn or other (see assign_regions).",
        "anti_biased": "Among the q% lowest-confidence (most hard-to-learn) examples.",
        "cartography_score": "1 - confidence, [0, 1]; higher = harder to learn.",
        "is_cartography_issue": "Same as anti_biased.",
        "partial_<column>": "The same columns from the partial-input model.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "path": [StrOptions(set(PATHS))],
        "features": [str],
        "view": [str],
        "partial_view": [str, None],
        "epochs": [Interval(Integral, 2, None, closed="left"), None],
        "model": [str, None],
        "train_options": [dict, None],
        "dynamics_dir": [str, None],
        "anti_biased_fraction": [Interval(Real, 0, 1, closed="both")],
        "ambiguous_fraction": [Interval(Real, 0, 1, closed="both")],
        "hard_fraction": [Interval(Real, 0, 1, closed="both")],
        "easy_fraction": [Interval(Real, 0, 1, closed="both")],
        "n_examples": [Interval(Integral, 0, None, closed="left")],
        "held_out_folds": [Interval(Integral, 2, None, closed="left"), None],
        "null_permutations": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        path: str = "fast",
        features: str = "minilm",
        view: str = "full",
        partial_view: str | None = "auto",
        epochs: int | None = None,
        model: str | None = None,
        train_options: dict[str, Any] | None = None,
        dynamics_dir: str | None = None,
        anti_biased_fraction: float = 0.21,
        ambiguous_fraction: float = 0.33,
        hard_fraction: float = 0.33,
        easy_fraction: float = 0.33,
        n_examples: int = 10,
        held_out_folds: int | None = None,
        null_permutations: int = 5,
        random_state: int | None = 0,
    ) -> None:
        self.path = path
        self.features = features
        self.view = view
        self.partial_view = partial_view
        self.epochs = epochs
        self.model = model
        self.train_options = train_options
        self.dynamics_dir = dynamics_dir
        self.anti_biased_fraction = anti_biased_fraction
        self.ambiguous_fraction = ambiguous_fraction
        self.hard_fraction = hard_fraction
        self.easy_fraction = easy_fraction
        self.n_examples = n_examples
        self.held_out_folds = held_out_folds
        self.null_permutations = null_permutations
        self.random_state = random_state

    # -- validation -----------------------------------------------------------------
    def validate_params(self) -> None:
        """Constraints, plus: region fractions that fit, a folder for ``path="load"``."""
        super().validate_params()
        if self.hard_fraction + self.easy_fraction > 1.0:
            raise ParameterError(
                "The 'hard_fraction' and 'easy_fraction' parameters of Cartography must sum to "
                f"at most 1; got {self.hard_fraction} + {self.easy_fraction}."
            )
        if self.held_out_folds is not None and self.path != "fast":
            raise ParameterError(
                "The 'held_out_folds' parameter of Cartography applies to path='fast'; got "
                f"path={self.path!r}."
            )
        if self.path == "load" and not self.dynamics_dir:
            raise ParameterError(
                "The 'dynamics_dir' parameter of Cartography is needed with path='load'; got None."
            )
        if self.path == "fast" and self.model not in (None, "mlp", "linear"):
            raise ParameterError(
                "The 'model' parameter of Cartography must be 'mlp' or 'linear' on the fast "
                f"path; got {self.model!r}."
            )
        reserved = sorted(set(self.train_options or {}) & set(_RESERVED_OPTIONS))
        if reserved:
            raise ParameterError(
                f"The 'train_options' parameter of Cartography must not set {reserved}; they "
                "are parameters of their own."
            )
        if self.path == "fast":
            unknown = sorted(set(self.train_options or {}) - set(FAST_OPTIONS))
            if unknown:
                raise ParameterError(
                    f"The 'train_options' parameter of Cartography has unknown fast-path "
                    f"option(s) {unknown}; valid: {list(FAST_OPTIONS)}."
                )
            from spurious.features import make_featurizer

            make_featurizer(self.features)

    def check(self, context: RunContext) -> None:
        """Views exist for the task; the fine-tuning engine is installed for that path;
        held-out folds only without an evaluation split, and no more than examples."""
        self._views(context.train.task)
        if self.held_out_folds is not None:
            if context.eval is not None:
                raise ParameterError(
                    "The 'held_out_folds' parameter of Cartography applies without an "
                    "evaluation split (evaluation examples are already mapped by a model that "
                    f"never trained on them); got held_out_folds={self.held_out_folds} with "
                    "an evaluation split."
                )
            if self.held_out_folds > len(context.train):
                raise ParameterError(
                    f"The 'held_out_folds' parameter of Cartography ({self.held_out_folds}) "
                    f"exceeds the number of training examples ({len(context.train)})."
                )
        if self.path == "finetune" and importlib.util.find_spec("spurious.models.finetune") is None:
            raise DetectorError(
                "Cartography with path='finetune' needs the fine-tuning engine "
                "(spurious.models.finetune, issue 8 parts 1-2), which this installation does "
                "not have; use path='fast'."
            )

    def _views(self, task: Task) -> tuple[str, str | None]:
        full = get_view(task, self.view).name
        auto = self.partial_view == "auto"
        partial = default_partial_view(task) if auto else self.partial_view
        if partial is not None:
            partial = get_view(task, partial).name
            if partial == full:
                partial = None  # mapping the same input twice says nothing new
        return full, partial

    def _dynamics(self, ctx: RunContext, view: str, *, partial: bool) -> TrainingDynamics:
        path = self.path
        if path == "load" and partial:
            path = "fast"  # loaded dynamics describe one model; the partial map is ours
        config: dict[str, Any] = {
            "path": path,
            "view": view,
            "random_state": self.random_state,
            **(self.train_options or {}),
        }
        if self.epochs is not None:
            config["epochs"] = self.epochs
        if path == "fast":
            config["features"] = self.features
            if self.held_out_folds is not None:
                config["held_out_folds"] = self.held_out_folds
        if path == "load":
            config["source"] = str(self.dynamics_dir)
        if self.model is not None and not (partial and self.path == "load"):
            config["model"] = self.model
        return ctx.artifact("training_dynamics", **config)

    # -- the work -------------------------------------------------------------------
    def _map(self, dyn: TrainingDynamics, split: str, dataset: Dataset) -> pd.DataFrame:
        """The per-view columns for ``dataset``'s examples, in its row order."""
        stats = cartography_stats(dyn, split).set_index("id")
        ids = [str(i) for i in dataset.ids]
        missing = [i for i in ids if i not in stats.index]
        if missing:
            raise DetectorError(
                f"The training dynamics of the {split!r} split lack {len(missing)} example(s), "
                f"e.g. id {missing[0]!r}."
            )
        stats = stats.loc[ids]
        conf = stats["confidence"].to_numpy()
        var = stats["variability"].to_numpy()
        out = pd.DataFrame(
            {
                "confidence": conf,
                "variability": var,
                "correctness": stats["correctness"].to_numpy(),
                "forgetting": stats["forgetting"].to_numpy().astype(np.int64),
                "region": assign_regions(
                    conf,
                    var,
                    ambiguous_fraction=self.ambiguous_fraction,
                    hard_fraction=self.hard_fraction,
                    easy_fraction=self.easy_fraction,
                ),
                "anti_biased": anti_biased_mask(conf, self.anti_biased_fraction),
                "cartography_score": 1.0 - conf,
            }
        )
        out.attrs["n_recordings"] = int(stats["n_recordings"].iloc[0]) if len(stats) else 0
        return out

    def _view_metrics(
        self, table: pd.DataFrame, dyn: TrainingDynamics, split: str, prefix: str
    ) -> dict[str, float]:
        m: dict[str, float] = {}
        n = len(table)
        for region in REGIONS:
            m[f"{prefix}share_{region}"] = float((table["region"] == region).mean()) if n else 0.0
        for col in ("confidence", "variability", "correctness", "forgetting"):
            m[f"{prefix}mean_{col}"] = float(table[col].mean())
        anti = table["anti_biased"].to_numpy()
        m[f"{prefix}n_anti_biased"] = float(anti.sum())
        m[f"{prefix}anti_biased_fraction"] = float(anti.mean()) if n else 0.0
        if anti.any():
            m[f"{prefix}hard_confidence_cut"] = float(table["confidence"][anti].max())
        curve = dyn.accuracy(split)
        m[f"{prefix}final_accuracy"] = float(curve[max(curve)])
        return m

    def _examples(
        self,
        table: pd.DataFrame,
        other: pd.DataFrame | None,
        dataset: Dataset,
        other_prefix: str,
    ) -> dict[str, list[dict[str, Any]]]:
        """Most typical examples of each region: easy = most confident, hard = least,
        ambiguous = most variable."""
        names = np.asarray(dataset.label_names, dtype=object)
        labels = dataset.labels
        fields = list(dataset.task.text_fields)
        order = {
            "easy_to_learn": -table["confidence"].to_numpy(),
            "ambiguous": -table["variability"].to_numpy(),
            "hard_to_learn": table["confidence"].to_numpy(),
        }
        out: dict[str, list[dict[str, Any]]] = {}
        regions = table["region"].to_numpy()
        for region, key in order.items():
            rows = np.flatnonzero(regions == region)
            rows = rows[np.argsort(key[rows], kind="stable")][: self.n_examples]
            examples = []
            for i in rows:
                ex: dict[str, Any] = {"id": str(dataset.ids[i]), "label": str(names[labels[i]])}
                ex.update({f: str(dataset.frame[f].iloc[i]) for f in fields})
                for col in ("confidence", "variability", "correctness", "forgetting"):
                    ex[col] = float(table[col].iloc[i])
                ex["anti_biased"] = bool(table["anti_biased"].iloc[i])
                if other is not None:
                    ex[f"{other_prefix}confidence"] = float(other["confidence"].iloc[i])
                    ex[f"{other_prefix}region"] = str(other["region"].iloc[i])
                examples.append(ex)
            out[region] = examples
        return out

    def _notes(self, ctx: RunContext) -> list[str]:
        """What the reader must know about how the map was made (the report shows these)."""
        notes = []
        if self.path == "fast":
            notes.append(
                FAST_PATH_NOTE.format(
                    features=self.features, epochs=10 if self.epochs is None else self.epochs
                )
            )
        if ctx.eval is None:
            if self.held_out_folds is None:
                notes.append(
                    "Mapped in-sample: every example is recorded by a model that trains on it, "
                    "so late epochs reward memorisation. Give an evaluation split, or set "
                    "held_out_folds=2 for held-out (cross-fitted) dynamics."
                )
            else:
                notes.append(
                    f"Held-out dynamics: each example is recorded by a probe trained on the "
                    f"other {self.held_out_folds - 1} of {self.held_out_folds} folds."
                )
        return notes

    def _null_spearman(
        self,
        ctx: RunContext,
        full_view: str,
        partial_view: str,
        split: str,
        scored: Dataset,
        draw: int = 0,
    ) -> float | None:
        """Spearman of the two maps' confidence when both probes learn permuted labels.

        The fast path again, on the same feature matrices, seeds and options, with the
        training labels (and the evaluation labels) permuted by draw ``draw``.
        """
        from spurious.models.dynamics import crossfit_dynamics, probe_dynamics

        seed = 0 if self.random_state is None else self.random_state
        rng = np.random.default_rng([seed, 7, draw])
        y_train = rng.permutation(ctx.train.labels)
        y_eval = None if ctx.eval is None else rng.permutation(ctx.eval.labels)
        options: dict[str, Any] = {
            "model": self.model or "mlp",
            "epochs": 10 if self.epochs is None else self.epochs,
            "n_classes": ctx.train.n_classes,
            "random_state": self.random_state,
            **(self.train_options or {}),
        }
        ids = [str(i) for i in scored.ids]
        confidence = []
        for view in (full_view, partial_view):
            X_train = ctx.features(self.features, view, split="train")
            if self.held_out_folds is not None:
                frame = crossfit_dynamics(
                    X_train, y_train, n_folds=self.held_out_folds, ids=ctx.train.ids, **options
                )
            else:
                X_eval = (
                    None if ctx.eval is None else ctx.features(self.features, view, split="eval")
                )
                frame = probe_dynamics(
                    X_train,
                    y_train,
                    X_eval,
                    y_eval,
                    train_ids=ctx.train.ids,
                    eval_ids=None if ctx.eval is None else ctx.eval.ids,
                    **options,
                )
            dyn = TrainingDynamics(frame, list(ctx.train.label_names))
            stats = cartography_stats(dyn, split).set_index("id")
            confidence.append(stats.loc[ids, "confidence"])
        return _spearman(*confidence)

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        scored = self.scored_dataset(ctx)
        split = "eval" if ctx.eval is not None else "train"
        if len(ctx.train) < MIN_TRAIN_EXAMPLES:
            raise DetectorError(
                f"Cartography needs at least {MIN_TRAIN_EXAMPLES} training examples to rank "
                f"them; got {len(ctx.train)}."
            )
        full_view, partial_view = self._views(ctx.train.task)
        dyn = self._dynamics(ctx, full_view, partial=False)
        table = self._map(dyn, split, scored)
        names = np.asarray(scored.label_names, dtype=object)
        scores = pd.DataFrame({"id": scored.ids, "label": names[scored.labels]})
        for col in _VIEW_COLUMNS:
            scores[col] = table[col].to_numpy()
        scores["is_cartography_issue"] = table["anti_biased"].to_numpy()

        metrics = self._view_metrics(table, dyn, split, "")
        metrics["n_scored"] = float(len(scored))
        metrics["n_train"] = float(len(ctx.train))
        metrics["n_recordings"] = float(table.attrs["n_recordings"])
        marks = [_marks(table, scored, split, "cartography")]
        if ctx.eval is not None:
            train_table = self._map(dyn, "train", ctx.train)
            metrics["n_anti_biased_train"] = float(train_table["anti_biased"].sum())
            marks.append(_marks(train_table, ctx.train, "train", "cartography"))

        details: dict[str, Any] = {
            "views": {"full": full_view, "partial": partial_view},
            "scored_split": split,
            "label_names": list(scored.label_names),
            "region_rule": {
                "ambiguous_fraction": self.ambiguous_fraction,
                "hard_fraction": self.hard_fraction,
                "easy_fraction": self.easy_fraction,
                "anti_biased_fraction": self.anti_biased_fraction,
                "text": (
                    "easy_to_learn: highest confidence; hard_to_learn: lowest confidence; "
                    "ambiguous: highest variability among the rest (each by rank over the "
                    "scored split); other: the rest. anti-biased: lowest confidence."
                ),
            },
            "learning_curves": {"full": _curves(dyn)},
            "dynamics": {"full": _plain_meta(dyn.meta)},
            "anti_biased_by_label": {"full": _by_label(table, scored)},
        }

        partial_table = None
        if partial_view is not None:
            pdyn = self._dynamics(ctx, partial_view, partial=True)
            partial_table = self._map(pdyn, split, scored)
            marks.append(_marks(partial_table, scored, split, "partial_input_cartography"))
            if ctx.eval is not None:
                marks.append(
                    _marks(
                        self._map(pdyn, "train", ctx.train),
                        ctx.train,
                        "train",
                        "partial_input_cartography",
                    )
                )
            for col in _VIEW_COLUMNS:
                scores[f"partial_{col}"] = partial_table[col].to_numpy()
            metrics.update(self._view_metrics(partial_table, pdyn, split, "partial_"))
            rho = _spearman(table["confidence"], partial_table["confidence"])
            if rho is not None:
                metrics["spearman_confidence"] = rho
                lo, hi = spearman_interval(rho, len(scored))
                metrics["spearman_confidence_ci_low"] = lo
                metrics["spearman_confidence_ci_high"] = hi
                if self.path == "fast" and self.null_permutations:
                    nulls = [
                        self._null_spearman(ctx, full_view, partial_view, split, scored, b)
                        for b in range(self.null_permutations)
                    ]
                    nulls = [r for r in nulls if r is not None]
                    if nulls:
                        metrics.update(excess_over_null(rho, nulls, len(scored)))
            a, b = table["anti_biased"].to_numpy(), partial_table["anti_biased"].to_numpy()
            if (a | b).any():
                metrics["anti_biased_jaccard"] = float((a & b).sum() / (a | b).sum())
            details["learning_curves"]["partial"] = _curves(pdyn)
            details["dynamics"]["partial"] = _plain_meta(pdyn.meta)
            details["anti_biased_by_label"]["partial"] = _by_label(partial_table, scored)
            details["region_crosstab"] = {
                r: {
                    q: int(((table["region"] == r) & (partial_table["region"] == q)).sum())
                    for q in REGIONS
                }
                for r in REGIONS
            }

        details["notes"] = self._notes(ctx)
        details["examples"] = {
            "full": self._examples(table, partial_table, scored, "partial_"),
        }
        if partial_table is not None:
            details["examples"]["partial"] = self._examples(partial_table, table, scored, "full_")

        shares = ", ".join(
            f"{r.replace('_', '-')} {metrics[f'share_{r}']:.0%}" for r in REGIONS[:3]
        )
        summary = (
            f"{len(scored):,} {split} examples mapped ({shares}); "
            f"{int(metrics['n_anti_biased'])} anti-biased (q={self.anti_biased_fraction:.0%}); "
            f"mean confidence {metrics['mean_confidence']:.3f}"
        )
        if "spearman_confidence" in metrics:
            summary += (
                f"; {partial_view} vs full confidence Spearman {metrics['spearman_confidence']:.2f}"
            )
        return AnalysisOutput(
            scores=scores,
            metrics=metrics,
            summary=summary,
            details=details,
            marks=pd.concat(marks, ignore_index=True),
        )

    def headline(self, result: Any) -> dict[str, Any]:
        """Agreement of the full and partial-input maps beyond permuted labels.

        The effect is ``spearman_excess`` (Spearman of the two maps' confidence minus the
        same with permuted labels) with its 95% interval, so the severity rests on the
        interval's lower bound. Without the null (fine-tuned or loaded dynamics,
        ``null_permutations=0``) the raw Spearman and its Fisher-z interval are shown as
        ``info``: the two maps agree on permuted labels too (e.g. 0.77-0.84 on the
        conformance suite's shuffled data), so the raw correlation is not a verdict.
        """
        m = result.metrics
        details = result.details or {}
        anti = int(m.get("n_anti_biased", 0))
        rho = m.get("spearman_confidence")
        partial = (details.get("views") or {}).get("partial")
        if rho is None or partial is None:
            text = (
                f"mean confidence {m.get('mean_confidence', float('nan')):.2f}; "
                f"{anti} anti-biased (hardest) examples"
            )
            return self.verdict_scale.headline(
                "dataset cartography", m.get("mean_confidence"), text, severity="info"
            )
        label = partial.replace("_only", "-only").replace("_", " ")
        text = f"{label} confidence ranks examples like full-input confidence (Spearman {rho:.2f}"
        raw = (m.get("spearman_confidence_ci_low"), m.get("spearman_confidence_ci_high"))
        if "spearman_excess" in m:
            rho0, excess = m["spearman_confidence_null"], m["spearman_excess"]
            text += f"; {rho0:.2f} with permuted labels, excess {excess:+.2f}"
            text += f"); {anti} anti-biased examples"
            return self.verdict_scale.headline(
                "partial-input cartography",
                rho,
                text,
                effect=excess,
                interval=(m["spearman_excess_ci_low"], m["spearman_excess_ci_high"]),
                p_value=m.get("spearman_excess_p_value"),
                null="permuted labels (both maps re-made)",
                measured="Spearman of full vs partial-input confidence minus the same with "
                "permuted labels",
            )
        text += f"); {anti} anti-biased examples; no permuted-label null on this path"
        interval = raw if None not in raw else None
        return self.verdict_scale.headline(
            "partial-input cartography",
            rho,
            text,
            interval=interval,
            measured="Spearman of full vs partial-input confidence (no null: not judged)",
            severity="info",
        )


def _marks(table: pd.DataFrame, dataset: Dataset, split: str, definition: str) -> pd.DataFrame:
    """Long-format anti-biased marks of one split and definition (``Result.marks``)."""
    return pd.DataFrame(
        {
            "id": dataset.ids,
            "split": split,
            "definition": definition,
            "anti_biased": table["anti_biased"].to_numpy(dtype=bool),
            # The ranking behind the marks, so amplify can choose another q (Table 7).
            "score": table["cartography_score"].to_numpy(dtype=float),
        }
    )


def _spearman(a: pd.Series, b: pd.Series) -> float | None:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None  # undefined for constant inputs; leave the metric out
    rho = spearmanr(a, b).statistic
    return float(rho) if np.isfinite(rho) else None


def spearman_interval(rho: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a Spearman correlation of ``n`` pairs.

    ``tanh(atanh(rho) -/+ z * se)`` with ``se = sqrt(1.06 / (n - 3))``, the variance of
    Fieller, Hartley and Pearson (1957) for Spearman's rho. Fewer than 4 pairs: (-1, 1).

    Examples
    --------
    >>> lo, hi = spearman_interval(0.5, 103)
    >>> round(lo, 3), round(hi, 3)
    (0.334, 0.636)
    """
    from scipy.stats import norm

    if n < 4 or not np.isfinite(rho):
        return -1.0, 1.0
    z = np.arctanh(np.clip(rho, -0.999999, 0.999999))
    half = norm.ppf(0.5 + level / 2) * math.sqrt(1.06 / (n - 3))
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def excess_over_null(rho: float, nulls: Sequence[float], n: int) -> dict[str, float]:
    """``rho`` against Spearman correlations of the same maps made with permuted labels.

    The excess is ``rho - mean(nulls)``; its standard error combines the sampling
    variance of ``rho`` (delta method on Fisher's z: ``(1 - rho^2)^2 * 1.06 / (n - 3)``)
    with the spread of the null over permutations (``sd^2 * (1 + 1/B)``, the variance of
    a new draw around the mean of B). A 95% normal interval and a one-sided p-value of
    ``excess > 0`` follow.

    Examples
    --------
    >>> out = excess_over_null(0.8, [0.6, 0.7, 0.65], 1003)
    >>> round(out["spearman_excess"], 3), out["spearman_excess_ci_low"] > 0
    (0.15, True)
    >>> excess_over_null(0.7, [0.6, 0.8], 100)["spearman_excess_p_value"] > 0.05
    True
    """
    from scipy.stats import norm

    null = np.asarray(nulls, dtype=float)
    sd = float(null.std(ddof=1)) if len(null) > 1 else 0.0
    var_rho = (1 - rho**2) ** 2 * 1.06 / max(n - 3, 1)
    se = math.sqrt(var_rho + sd**2 * (1 + 1 / len(null)))
    excess = float(rho - null.mean())
    half = float(norm.ppf(0.975) * se)
    return {
        "spearman_confidence_null": float(null.mean()),
        "spearman_confidence_null_sd": sd,
        "spearman_excess": excess,
        "spearman_excess_ci_low": excess - half,
        "spearman_excess_ci_high": excess + half,
        "spearman_excess_p_value": float(norm.sf(excess / se)) if se > 0 else float(excess <= 0),
    }


def difference_interval(
    r1: float, ci1: tuple[float, float], r2: float, ci2: tuple[float, float]
) -> tuple[float, float]:
    """Interval of ``r1 - r2`` from the two correlations' own intervals (Zou 2007, Eq. 4).

    ``L = r1 - r2 - sqrt((r1 - l1)^2 + (u2 - r2)^2)``,
    ``U = r1 - r2 + sqrt((u1 - r1)^2 + (r2 - l2)^2)``; it treats the two correlations as
    independent (they come from different models' maps).

    Examples
    --------
    >>> lo, hi = difference_interval(0.5, (0.4, 0.6), 0.2, (0.1, 0.3))
    >>> round(lo, 4), round(hi, 4)
    (0.1586, 0.4414)
    """
    (l1, u1), (l2, u2) = ci1, ci2
    d = r1 - r2
    return (
        float(d - math.sqrt((r1 - l1) ** 2 + (u2 - r2) ** 2)),
        float(d + math.sqrt((u1 - r1) ** 2 + (r2 - l2) ** 2)),
    )


def _curves(dyn: TrainingDynamics) -> dict[str, list[list[float]]]:
    return {s: [[e, a] for e, a in dyn.accuracy(s).items()] for s in dyn.splits()}


def _plain_meta(meta: dict[str, Any]) -> dict[str, Any]:
    keep = ("path", "view", "features", "model", "epochs", "options", "source", "train_s")
    return {k: meta[k] for k in keep if k in meta}


def _by_label(table: pd.DataFrame, dataset: Dataset) -> dict[str, dict[str, float]]:
    names = dataset.label_names
    anti = table["anti_biased"].to_numpy()
    out = {}
    for k, name in enumerate(names):
        rows = dataset.labels == k
        out[str(name)] = {
            "n": int(rows.sum()),
            "n_anti_biased": int((anti & rows).sum()),
            "mean_confidence": float(table["confidence"][rows].mean()) if rows.any() else 0.0,
        }
    return out
