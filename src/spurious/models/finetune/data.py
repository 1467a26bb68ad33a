"""A view of a dataset as model inputs: tokenised once, padded per batch.

A one-field view is encoded as a single text; a two-field view as a text pair (the
tokenizer adds the separator and, for BERT-like models, the segment ids); a view of
three or more fields as the first field paired with the others joined by the
tokenizer's separator token. Examples are tokenised once, unpadded; batches are padded
to their own longest example (dynamic padding), which on short NLI pairs saves most of
the compute that padding to ``max_length`` would waste.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError
from spurious.views import View, get_view


@dataclass
class EncodedSplit:
    """Token ids of one split seen through one view, with labels and example ids.

    Attributes
    ----------
    ids : numpy.ndarray of object
        Example ids (str), in dataset order.
    input_ids : list of list of int
        Unpadded token ids per example.
    token_type_ids : list of list of int or None
        Segment ids (models that use them), else ``None``.
    labels : numpy.ndarray of int64 or None
        Gold label ids (``None`` for unlabelled data, e.g. hidden states of QA).
    lengths : numpy.ndarray of int64
        Tokens per example.
    pad_id : int
    segments : list of numpy.ndarray of int8 or None
        With ``encode(..., with_segments=True)``: per token, which text it comes from
        (0 = the first text, 1 = the pair text, -1 = a special token such as [CLS] or
        [SEP]); what token relevance agreement aligns partial and full inputs by.
    """

    ids: np.ndarray
    input_ids: list[list[int]]
    token_type_ids: list[list[int]] | None
    labels: np.ndarray | None
    lengths: np.ndarray
    pad_id: int
    segments: list[np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, i: int) -> dict[str, Any]:
        # The item format transformers.Trainer and its LengthGroupedSampler expect; "idx"
        # lets the engine attribute the logits of a training batch to example ids.
        item: dict[str, Any] = {"input_ids": self.input_ids[i], "idx": i}
        if self.token_type_ids is not None:
            item["token_type_ids"] = self.token_type_ids[i]
        if self.labels is not None:
            item["labels"] = int(self.labels[i])
        return item

    def batch(self, rows: np.ndarray | list[int], pad_to_multiple_of: int | None = None) -> Any:
        """A padded batch of ``rows`` as torch tensors (what :class:`PadCollator` returns)."""
        return PadCollator(self.pad_id, pad_to_multiple_of)([self[int(r)] for r in rows])


def view_texts(dataset: Dataset, view: str | View, sep: str) -> tuple[list[str], list[str] | None]:
    """``(texts, pair_texts or None)`` of a view: the tokenizer's two arguments.

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=3, random_state=0).dataset
    >>> a, b = view_texts(ds, "hypothesis_only", "[SEP]")
    >>> len(a), b is None
    (3, True)
    """
    v = get_view(dataset.task, view)
    columns = [dataset.texts(f) for f in v.fields]
    if len(columns) == 1:
        return columns[0], None
    if len(columns) == 2:
        return columns[0], columns[1]
    joiner = f" {sep} "
    return columns[0], [joiner.join(parts) for parts in zip(*columns[1:], strict=True)]


def encode(
    dataset: Dataset,
    view: str | View,
    tokenizer: Any,
    max_length: int,
    *,
    with_labels: bool = True,
    with_segments: bool = False,
) -> EncodedSplit:
    """Tokenise ``dataset`` through ``view`` once, unpadded and truncated to ``max_length``.

    ``with_segments=True`` also records which text every token comes from
    (:attr:`EncodedSplit.segments`; needs a fast tokenizer).

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> from spurious.models.runtime import default_model_path
    >>> import transformers
    >>> tok = transformers.AutoTokenizer.from_pretrained(default_model_path())  # doctest: +SKIP
    >>> ds = make_nli_artifacts(n=4, random_state=0).dataset
    >>> encode(ds, "full", tok, 128).lengths.shape  # doctest: +SKIP
    (4,)
    """
    if max_length < 8:
        raise ParameterError(f"The 'max_length' parameter must be >= 8. Got {max_length!r}.")
    texts, pairs = view_texts(dataset, view, tokenizer.sep_token or "[SEP]")
    enc = tokenizer(
        texts,
        pairs,
        truncation=True,
        max_length=max_length,
        padding=False,
        return_attention_mask=False,
    )
    input_ids = [list(x) for x in enc["input_ids"]]
    segments = None
    if with_segments:
        if not getattr(enc, "is_fast", False):
            raise ParameterError(
                "Token segments (which text each token comes from) need a fast (Rust) "
                f"tokenizer; {type(tokenizer).__name__} is not one."
            )
        segments = [
            np.array([-1 if s is None else s for s in enc.sequence_ids(i)], dtype=np.int8)
            for i in range(len(input_ids))
        ]
    tt = enc.get("token_type_ids")
    labels = dataset.labels if (with_labels and dataset.task.has_labels) else None
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    return EncodedSplit(
        ids=dataset.ids,
        input_ids=input_ids,
        token_type_ids=None if tt is None else [list(x) for x in tt],
        labels=labels,
        lengths=np.fromiter((len(x) for x in input_ids), dtype=np.int64, count=len(input_ids)),
        pad_id=int(pad_id),
        segments=segments,
    )


class PadCollator:
    """Pad a list of items to the batch's longest example (right padding) as tensors.

    ``transformers.DataCollatorWithPadding`` does the same through ``tokenizer.pad``;
    this one also carries the ``idx`` of each example and is ~10x faster on short
    inputs (no per-item BatchEncoding), which matters on CPU where a step is short.

    Examples
    --------
    >>> batch = PadCollator(0)([{"input_ids": [5, 6, 7], "labels": 1, "idx": 0},
    ...                         {"input_ids": [5], "labels": 0, "idx": 1}])
    >>> batch["input_ids"].tolist(), batch["attention_mask"].tolist()
    ([[5, 6, 7], [5, 0, 0]], [[1, 1, 1], [1, 0, 0]])
    """

    def __init__(self, pad_id: int, pad_to_multiple_of: int | None = None) -> None:
        self.pad_id = pad_id
        self.pad_to_multiple_of = pad_to_multiple_of

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        width = max(len(it["input_ids"]) for it in items)
        if self.pad_to_multiple_of:
            m = self.pad_to_multiple_of
            width = (width + m - 1) // m * m
        n = len(items)
        ids = np.full((n, width), self.pad_id, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        tt = np.zeros((n, width), dtype=np.int64) if "token_type_ids" in items[0] else None
        for j, it in enumerate(items):
            k = len(it["input_ids"])
            ids[j, :k] = it["input_ids"]
            mask[j, :k] = 1
            if tt is not None:
                tt[j, :k] = it["token_type_ids"]
        out: dict[str, Any] = {
            "input_ids": torch.from_numpy(ids),
            "attention_mask": torch.from_numpy(mask),
        }
        if tt is not None:
            out["token_type_ids"] = torch.from_numpy(tt)
        if "labels" in items[0]:
            out["labels"] = torch.tensor([it["labels"] for it in items], dtype=torch.long)
        if "idx" in items[0]:
            out["idx"] = torch.tensor([it["idx"] for it in items], dtype=torch.long)
        # A debiasing objective's per-example inputs (finetune.debias.SideInputSplit).
        for key in ("bias_probs", "teacher_probs"):
            if key in items[0]:
                out[key] = torch.tensor([it[key] for it in items], dtype=torch.float32)
        return out


def epoch_generator(seed: int, epoch: int) -> Any:
    """The ``torch.Generator`` that shuffles epoch ``epoch`` (0-based) of a fine-tune with
    ``seed``: seeded from ``(seed, epoch)`` alone, so every process of a data-parallel
    run, a resumed run and both training loops draw the same length-grouped order.

    Examples
    --------
    >>> import torch
    >>> a, b = epoch_generator(0, 1), epoch_generator(0, 1)
    >>> torch.equal(torch.randperm(9, generator=a), torch.randperm(9, generator=b))
    True
    """
    import torch

    state = np.random.SeedSequence([int(seed), int(epoch)]).generate_state(2, np.uint32)
    generator = torch.Generator()
    generator.manual_seed(int(state[0]) << 32 | int(state[1]))
    return generator
