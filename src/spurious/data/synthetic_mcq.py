"""Synthetic multiple-choice items with planted, known shortcuts (tests and the canary).

Each item asks which of ``k`` things has a property; every option is drawn from the same
distribution, so without a planted cue no view of the item beats chance (1/k). The cues
are the multiple-choice shortcuts of the literature: the gold is the **longest** option
(a tail of words appended), the gold carries a **cue token**, or the gold sits at one
**position** (letter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.mcq import LETTERS
from spurious.exceptions import ParameterError

__all__ = ["SyntheticMCQ", "make_mcq_artifacts"]

_THINGS = (
    "granite", "copper", "oak", "salmon", "falcon", "basalt", "maple", "tin", "cobalt",
    "heron", "willow", "quartz", "trout", "sparrow", "cedar", "zinc", "marble", "otter",
    "birch", "nickel", "lizard", "pine", "iron", "beetle", "clay", "walrus", "aspen",
    "silver", "moth", "slate", "badger", "elm",
)  # fmt: skip
_PROPERTIES = (
    "conducts heat best", "is found near rivers", "is the hardest", "lives longest",
    "is most common in forests", "weighs the least", "melts first", "grows fastest",
)  # fmt: skip
_TAILS = ("found in many regions", "with a dense structure", "seen in cold climates")


@dataclass
class SyntheticMCQ:
    """Items, and which of them carry the planted cue (``has_artifact``)."""

    dataset: Dataset
    has_artifact: np.ndarray
    params: dict[str, Any]


def make_mcq_artifacts(
    n: int = 600,
    n_options: int | tuple[int, int] = 4,
    artifact: str = "length",
    artifact_rate: float = 0.6,
    cue: str = "certainly",
    position: int = 0,
    random_state: int | np.random.Generator | None = 0,
) -> SyntheticMCQ:
    """Generate multiple-choice items with one planted shortcut in a share of them.

    Parameters
    ----------
    n : int, default=600
        Number of items.
    n_options : int or (low, high), default=4
        Options per item, or a range (inclusive) to draw the count from, 2-10.
    artifact : {"length", "token", "position", "none"}, default="length"
        ``length``: the gold option gets a tail of words (it is the longest option);
        ``token``: the gold option gets ``cue`` appended; ``position``: the gold is put at
        ``position`` (0 = A); ``none``: no cue (every view is at chance).
    artifact_rate : float in [0, 1], default=0.6
        Share of items that carry the cue (exactly ``round(artifact_rate * n)``).
    cue : str, default="certainly"
        The token of ``artifact="token"``.
    position : int, default=0
        The gold position of ``artifact="position"``.
    random_state : int, Generator or None, default=0
        Seed.

    Returns
    -------
    SyntheticMCQ
        ``dataset`` (task ``mcq``, ids ``"mcq-00000"``...), ``has_artifact``, ``params``.

    Examples
    --------
    >>> s = make_mcq_artifacts(n=50, artifact="length", artifact_rate=1.0, random_state=0)
    >>> g = s.dataset.frame
    >>> all(len(o[y]) == max(map(len, o)) for o, y in zip(g["options"], g["label_id"]))
    True
    """
    if artifact not in ("length", "token", "position", "none"):
        raise ParameterError(
            "The 'artifact' parameter must be one of ['length', 'token', 'position', "
            f"'none']. Got {artifact!r} instead."
        )
    if not 0.0 <= artifact_rate <= 1.0:
        raise ParameterError(
            f"The 'artifact_rate' parameter must be in [0, 1]. Got {artifact_rate!r}."
        )
    low, high = (n_options, n_options) if isinstance(n_options, int) else n_options
    if not 2 <= low <= high <= len(LETTERS):
        raise ParameterError(
            f"The 'n_options' parameter must be in [2, {len(LETTERS)}]. Got {n_options!r}."
        )
    rng = np.random.default_rng(random_state)
    planted = np.zeros(n, dtype=bool)
    planted[rng.permutation(n)[: round(artifact_rate * n)]] = True
    rows = []
    for i in range(n):
        k = int(rng.integers(low, high + 1))
        words = rng.choice(len(_THINGS), size=k, replace=False)
        options = [str(_THINGS[w]) for w in words]
        # A neutral tail on random options, so length varies without a cue.
        for j in range(k):
            if rng.random() < 0.3:
                options[j] += " " + str(_TAILS[rng.integers(len(_TAILS))])
        gold = int(rng.integers(k))
        if planted[i] and artifact == "position":
            gold = min(position, k - 1)
        if planted[i] and artifact == "length":
            longest = max(len(o) for o in options)
            tail = " ".join(str(t) for t in _TAILS)
            options[gold] = f"{options[gold].split(' ')[0]} {tail}"
            if len(options[gold]) <= longest:  # cannot happen with these words; kept honest
                options[gold] += " indeed"
        if planted[i] and artifact == "token":
            options[gold] = f"{options[gold]} {cue}"
        question = f"Which of these {_PROPERTIES[rng.integers(len(_PROPERTIES))]}?"
        rows.append({"id": f"mcq-{i:05d}", "question": question, "options": options, "label": gold})
    frame = pd.DataFrame(rows)
    ds = Dataset.from_frame(frame, "mcq", name=f"synthetic-mcq-{artifact}")
    params = {
        "n": n,
        "n_options": n_options,
        "artifact": artifact,
        "artifact_rate": artifact_rate,
        "cue": cue,
        "position": position,
    }
    return SyntheticMCQ(ds, planted, params)
