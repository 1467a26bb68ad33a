"""Plant a shortcut into the gold options of a share of multiple-choice items (the canary).

The multiple-choice forms of :mod:`spurious.data.plant`'s shortcuts, planted into the
*gold* option of ``round(rate * n)`` items (any gold letter), so choices-only models and
option-picking cues can find them:

- ``"token"``: a word that occurs nowhere in the data is inserted into the gold option;
- ``"length"``: the gold option gets a random option of another item appended (words
  from the data's own distribution; only the length points at the gold).

Golds, ids and every other option stay as they were, so a planted copy lines up item for
item with the original.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError

__all__ = ["MCQ_PLANT_KINDS", "plant_gold_options"]

#: The kinds :func:`plant_gold_options` knows.
MCQ_PLANT_KINDS = ("token", "length")


def plant_gold_options(
    dataset: Dataset,
    kind: str,
    *,
    rate: float,
    token: str,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[Dataset, np.ndarray, dict[str, Any]]:
    """A copy of ``dataset`` with ``kind`` planted into the gold option of ``rate`` of items.

    Returns ``(copy, planted mask, spec)``; see :func:`spurious.data.plant.plant_shortcut`,
    which calls it for task ``mcq``.

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> ds = make_mcq_artifacts(n=20, artifact="none", random_state=0).dataset
    >>> copy, planted, spec = plant_gold_options(ds, "token", rate=0.5, token="zqxjv")
    >>> f = copy.frame
    >>> all("zqxjv" in o[y] for o, y in zip(f["options"][planted], f["label_id"][planted]))
    True
    """
    if kind not in MCQ_PLANT_KINDS:
        raise ParameterError(
            f"The 'kind' parameter of plant_shortcut must be one of {list(MCQ_PLANT_KINDS)} "
            f"for multiple-choice items. Got {kind!r} instead."
        )
    if kind == "token":
        pattern = re.compile(rf"(?i)\b{re.escape(token)}\b")
        for i, (q, opts) in enumerate(
            zip(dataset.frame["question"], dataset.frame["options"], strict=True)
        ):
            if pattern.search(q) or any(pattern.search(o) for o in opts):
                raise ParameterError(
                    f"The 'token' parameter of plant_shortcut must not occur in the data; "
                    f"{token!r} occurs in item {dataset.ids[i]!r}. Pick another word."
                )
    rng = np.random.default_rng(random_state)
    n = len(dataset)
    k = min(n, max(1, round(rate * n)))
    rows = np.sort(rng.choice(n, size=k, replace=False))
    frame = dataset.frame.copy()
    options = [list(o) for o in frame["options"]]
    gold = frame["label_id"].to_numpy()
    for i in rows:
        g = int(gold[i])
        if kind == "token":
            words = options[i][g].split()
            words.insert(int(rng.integers(0, len(words) + 1)), token)
            options[i][g] = " ".join(words)
        else:
            donor = int(rng.integers(0, n - 1))
            donor += donor >= i  # never the item itself
            pool = frame["options"].iloc[donor]
            options[i][g] = f"{options[i][g]} {pool[int(rng.integers(len(pool)))]}"
    frame["options"] = options
    planted = np.zeros(n, dtype=bool)
    planted[rows] = True
    copy = Dataset(dataset.task, frame, dataset.label_names, f"{dataset.name}+{kind}@gold")
    spec = {"kind": kind, "field": "options", "label": "gold", "rate": float(rate),
            "n_planted": int(k), "n_label": n,
            "random_state": random_state if isinstance(random_state, int | None) else "Generator"}  # fmt: skip
    if kind == "token":
        spec["token"] = token
    return copy, planted, spec
