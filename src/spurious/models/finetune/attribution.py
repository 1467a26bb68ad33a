"""Token relevance and token relevance agreement (TRA): paper 003 Sec. 3.1, Eq. 9-10.

Do a model trained on the full input (PSC) and one trained on a partial input (SSC,
e.g. hypothesis-only) "reason" alike? For every example and each model:

- **Eq. 9** (:func:`token_relevance`): the gradient of the model's posterior of the gold
  label with respect to each input token's embedding ``emb(w_j)``; its 2-norm, divided
  by the sum of the norms over the sequence, is the token's relevance ``m_j``
  (``sum_j m_j = 1``; padding excluded).
- **Eq. 10** (:func:`relevance_agreement`): the SSC vector is zero-padded to the PSC
  input's length, its tokens at the positions they hold in the PSC input, and TRA is the
  cosine similarity of the two vectors; the dataset-level TRA is the mean over examples.

Choices the paper leaves open (see docs/methods/partial_input.md). Two readings of
Eq. 9 are offered (``mode=``):

- ``"gold_posterior"`` (default; the paper's text): the gradient of the gold label's
  posterior w.r.t. ``emb(w_j)``, the word (token) embedding, the ``inputs_embeds`` of a
  Hugging Face model (position and segment embeddings are added inside the model after
  it). Special tokens ([CLS], [SEP]) are tokens of the input and carry relevance like
  any other; they take part in the normalisation.
- ``"authors"`` (the authors' public code, michaelsaxon/DatasetAnalysis
  ``training/compare_runs.py``): the gradient of the *sum of all logits* w.r.t. the
  embedding layer's *output* (``hidden_states[0]``: word + position + segment embeddings
  after its LayerNorm), with the first token ([CLS]) dropped before the normalisation.
  Here the dropped token gets relevance 0 at its position, which leaves every cosine of
  Eq. 10 unchanged (a zero in a vector adds nothing to a dot product or a norm) and keeps
  the positions aligned. The authors compare the two maps with left zero padding,
  ``alignment="pad"`` here.

- Alignment. The paper pads the SSC vector with zeros "prepended or post-pended",
  which for hypothesis-only BERT input puts the SSC's [CLS] on the PSC's middle [SEP].
  ``alignment="tokens"`` (default) places every SSC token where the same token sits in
  the PSC input: text tokens at that text's positions, the leading special token(s) at
  the PSC's leading ones, the closing special token(s) at those that close the text in
  the PSC input. ``alignment="pad"`` is the paper's literal zero padding. The two differ
  only in where the special tokens go.
- Truncation: tokens of the SSC input that the PSC input truncated away have no
  position there and are left out of the cosine.
- The gold label's posterior (the paper says "the classification output posterior").
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError, SchemaError
from spurious.models.finetune.data import EncodedSplit, encode
from spurious.models.finetune.inference import load_classifier, model_meta
from spurious.models.runtime import amp_context, resolve_device, resolve_precision, sorted_batches
from spurious.views import View, get_view

logger = logging.getLogger(__name__)

ALIGNMENTS = ("tokens", "pad")
#: What Eq. 9 differentiates, and with respect to what (see the module docstring).
MODES = ("gold_posterior", "authors")


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`, else a ParameterError."""
    if mode not in MODES:
        raise ParameterError(
            f"The 'mode' parameter of token relevance must be one of {list(MODES)}. Got "
            f"{mode!r} instead."
        )
    return mode


@dataclass
class TokenRelevance:
    """Per-example token relevance of one model on one view (paper 003 Eq. 9).

    Attributes
    ----------
    ids : numpy.ndarray of object
        Example ids, in the order of the rows scored.
    relevance : list of numpy.ndarray of float64
        Per example, one value per input token (special tokens included, padding not),
        summing to 1 (all zeros when every gradient vanishes).
    segments : list of numpy.ndarray of int8
        Per token, the text it comes from: 0 = the view's first text, 1 = its pair text,
        -1 = a special token.
    p_gold : numpy.ndarray of float64
        The model's posterior of the gold label, the function that was differentiated.
    fields : tuple of str
        The view's fields, in input order.
    """

    ids: np.ndarray
    relevance: list[np.ndarray]
    segments: list[np.ndarray]
    p_gold: np.ndarray
    fields: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.relevance)


# ---------------------------------------------------------------------------------------
# Eq. 9: gradients of the gold posterior w.r.t. the token embeddings
# ---------------------------------------------------------------------------------------
def relevance_batch(
    model: Any,
    batch: dict[str, Any],
    *,
    device: str = "cpu",
    precision: str = "fp32",
    mode: str = "gold_posterior",
) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 9 for one padded batch: ``(relevance (b, width), p_gold (b,))``.

    ``mode="gold_posterior"`` differentiates the gold posterior w.r.t. the word
    embeddings; ``"authors"`` the summed logits w.r.t. the embedding layer's output
    (``hidden_states[0]``; the model must accept ``output_hidden_states=True``), with the
    first token's relevance set to 0 (dropped) before normalising. ``p_gold`` is the gold
    posterior in both modes.

    ``batch`` is what :meth:`EncodedSplit.batch` returns (``input_ids``,
    ``attention_mask``, ``labels``, optionally ``token_type_ids``). The model (any
    Hugging Face sequence classifier, or a module with ``get_input_embeddings()`` whose
    ``forward(inputs_embeds=..., attention_mask=...)`` returns ``.logits``) should be in
    eval mode. Padding positions get relevance 0. Rows are independent: the gradient of
    the sum of the posteriors w.r.t. a row's embeddings is that row's own gradient.

    Examples
    --------
    >>> import torch
    >>> class Toy(torch.nn.Module):  # logits = W @ (sum_j a_j e_j): relevance_j = a_j / sum(a)
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.emb = torch.nn.Embedding(10, 4)
    ...         self.a = torch.tensor([1.0, 2.0, 3.0])
    ...         self.W = torch.nn.Linear(4, 2)
    ...     def get_input_embeddings(self):
    ...         return self.emb
    ...     def forward(self, inputs_embeds, attention_mask):
    ...         pooled = (inputs_embeds * (self.a * attention_mask)[..., None]).sum(1)
    ...         return type("Out", (), {"logits": self.W(pooled)})
    >>> batch = {"input_ids": torch.tensor([[1, 2, 3]]),
    ...          "attention_mask": torch.tensor([[1, 1, 1]]), "labels": torch.tensor([0])}
    >>> rel, p = relevance_batch(Toy(), batch)
    >>> np.round(rel, 4).tolist()
    [[0.1667, 0.3333, 0.5]]
    """
    import torch

    check_mode(mode)
    batch = {k: v for k, v in batch.items() if k != "idx"}
    labels = batch.pop("labels", None)
    if labels is None:
        raise SchemaError("Token relevance needs the gold labels ('labels') of the batch.")
    batch = {k: v.to(device) for k, v in batch.items()}
    labels = labels.to(device)
    input_ids = batch.pop("input_ids")
    mask = batch["attention_mask"]
    authors = mode == "authors"
    with torch.enable_grad():
        # A leaf copy of the token embeddings: the gradient is taken w.r.t. these (and,
        # in the authors' mode, everything after them requires grad even when the
        # model's own parameters are frozen).
        embeds = model.get_input_embeddings()(input_ids).detach().requires_grad_(True)
        with amp_context(device, precision):
            if authors:
                out = model(inputs_embeds=embeds, output_hidden_states=True, **batch)
                target_of = out.hidden_states[0]  # the embedding layer's output
            else:
                out = model(inputs_embeds=embeds, **batch)
                target_of = embeds
        logits = out.logits
        if logits.dtype in (torch.float16, torch.bfloat16):
            logits = logits.float()  # the softmax and its gradient in fp32 at least
        posterior = torch.softmax(logits, dim=-1)
        p_gold = posterior.gather(1, labels[:, None]).squeeze(1)
        # Rows are independent, so the gradient of a sum over the batch is per row.
        target = logits.sum() if authors else p_gold.sum()
        (grad,) = torch.autograd.grad(target, target_of)
    mask = mask.double()
    if authors:
        mask = mask.clone()
        mask[:, 0] = 0.0  # the authors drop the first token ([CLS])
    norms = grad.double().norm(dim=-1) * mask
    total = norms.sum(dim=1, keepdim=True)
    relevance = torch.where(total > 0, norms / total.clamp_min(1e-300), torch.zeros_like(norms))
    return relevance.cpu().numpy(), p_gold.detach().double().cpu().numpy()


def relevance_of_split(
    model: Any,
    split: EncodedSplit,
    *,
    rows: np.ndarray | None = None,
    device: str = "cpu",
    precision: str = "fp32",
    batch_size: int = 32,
    bar: Any = None,
    mode: str = "gold_posterior",
) -> tuple[list[np.ndarray], np.ndarray]:
    """Eq. 9 for ``rows`` of an encoded split (length-sorted batches, results in row order).

    Returns ``(relevance per row, p_gold per row)``; each relevance vector has the row's
    own (unpadded) length. ``mode``: see :func:`relevance_batch`.
    """
    import torch

    if split.labels is None:
        raise SchemaError("Token relevance needs gold labels; this split has none.")
    rows = np.arange(len(split)) if rows is None else np.asarray(rows, dtype=np.int64)
    on_cpu = torch.device(device).type == "cpu"
    position = {int(r): i for i, r in enumerate(rows)}
    relevance: list[np.ndarray | None] = [None] * len(rows)
    p_gold = np.zeros(len(rows))
    for batch_rows in sorted_batches(split.lengths, rows, batch_size, on_cpu):
        rel, p = relevance_batch(
            model, split.batch(batch_rows), device=device, precision=precision, mode=mode
        )
        for j, r in enumerate(batch_rows.tolist()):
            i = position[r]
            relevance[i] = rel[j, : int(split.lengths[r])]
            p_gold[i] = p[j]
        if bar is not None:
            bar.update(len(batch_rows))
    return relevance, p_gold  # type: ignore[return-value]


def token_relevance(
    model_dir: str | os.PathLike[str],
    dataset: Dataset,
    view: str | View | None = None,
    *,
    rows: np.ndarray | list[int] | None = None,
    batch_size: int = 32,
    max_length: int | None = None,
    device: str = "auto",
    precision: str = "fp32",
    progress: bool = False,
    mode: str = "gold_posterior",
) -> TokenRelevance:
    """Per-token relevance (paper 003 Eq. 9) of a fine-tuned classifier on ``dataset``.

    Parameters
    ----------
    model_dir : path
        A fine-tuned model (the output folder of :func:`~spurious.models.finetune.fine_tune`
        or its ``model/``), or any Hugging Face sequence-classification folder.
    dataset : Dataset
        Labelled data; the gold label's posterior is differentiated.
    view : str or View, optional
        The fields the model sees; default: the view it was trained on.
    rows : array-like of int, optional
        Row positions to score (default: all), e.g. a seeded sample.
    batch_size : int, default=32
        Rows per backward pass (length-sorted; on CPU also at most ~1k padded tokens).
    max_length : int, optional
        Truncation; default: the model's training max length (else 128).
    device : str, default="auto"
    precision : {"fp32", "bf16", "fp16", "auto"}, default="fp32"
        Autocast precision of the forward pass; the gradients' norms are taken in fp32.
        fp32 by default: relevance is a small difference of large activations.
    progress : bool, default=False
    mode : {"gold_posterior", "authors"}, default="gold_posterior"
        ``"gold_posterior"``: the gradient of the gold posterior w.r.t. the word
        embeddings, special tokens kept (the paper's Eq. 9 as written).
        ``"authors"``: the gradient of the summed logits w.r.t. the embedding layer's
        output, first token dropped (relevance 0), as the authors' public code does.

    Returns
    -------
    TokenRelevance

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=20, random_state=0).dataset
    >>> rel = token_relevance("runs/ft-hyp", ds, "hypothesis_only")  # doctest: +SKIP
    >>> float(rel.relevance[0].sum())  # doctest: +SKIP
    1.0
    """
    check_mode(mode)
    if not dataset.task.has_labels:
        raise SchemaError(
            f"Token relevance needs gold labels; task {dataset.task.name!r} has none."
        )
    meta = model_meta(model_dir)
    if view is None:
        view = meta.get("view", "full")
    v = get_view(dataset.task, view)
    if len(v.fields) > 2:
        raise ParameterError(
            f"The 'view' parameter must have one or two text fields for token relevance; "
            f"{v.name!r} has {list(v.fields)}."
        )
    dev = resolve_device(device)
    prec = resolve_precision(precision, dev)
    if max_length is None:
        max_length = int(meta.get("max_length", 128))
    tokenizer, model = load_classifier(model_dir, dev)
    labels = [str(x) for x in getattr(model.config, "id2label", {}).values()]
    if meta and labels and labels != [str(x) for x in dataset.label_names]:
        raise SchemaError(
            f"The model was trained on labels {labels}; the data has "
            f"{list(dataset.label_names)} (load it with label_names= in the model's order)."
        )
    split = encode(dataset, v, tokenizer, max_length, with_segments=True)
    rows = np.arange(len(split)) if rows is None else np.asarray(rows, dtype=np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= len(split)):
        raise ParameterError(
            f"The 'rows' parameter must hold row positions in [0, {len(split)}). Got values "
            f"from {int(rows.min())} to {int(rows.max())}."
        )
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(rows), desc=f"token relevance ({v.name})", unit="ex")
    try:
        relevance, p_gold = relevance_of_split(
            model,
            split,
            rows=rows,
            device=dev,
            precision=prec,
            batch_size=batch_size,
            bar=bar,
            mode=mode,
        )
    finally:
        if bar is not None:
            bar.close()
    assert split.segments is not None
    return TokenRelevance(
        ids=np.asarray(split.ids)[rows],
        relevance=relevance,
        segments=[split.segments[int(r)] for r in rows],
        p_gold=p_gold,
        fields=tuple(v.fields),
    )


# ---------------------------------------------------------------------------------------
# Eq. 10: alignment and cosine similarity
# ---------------------------------------------------------------------------------------
def align_to_full(
    partial: np.ndarray,
    partial_segments: np.ndarray,
    full_segments: np.ndarray,
    text: int,
    alignment: str = "tokens",
) -> np.ndarray:
    """The partial input's relevance vector zero-padded to the full input's positions.

    Parameters
    ----------
    partial : ndarray
        Relevance of the partial (one-text) input's tokens.
    partial_segments, full_segments : ndarray of int
        Text index per token (see :attr:`TokenRelevance.segments`).
    text : int
        Which text of the full input the partial input is (0 = first, 1 = pair text).
    alignment : {"tokens", "pad"}, default="tokens"
        ``"tokens"``: each token at the position it holds in the full input (text tokens
        in order; leading special tokens at the full input's leading ones; closing
        special tokens at those that close ``text``). ``"pad"``: paper 003's zeros,
        prepended for the second text, appended for the first.

    Returns
    -------
    numpy.ndarray, the full input's length

    Examples
    --------
    [CLS] p1 p2 [SEP] h1 [SEP] (full) and [CLS] h1 [SEP] (hypothesis only):

    >>> full = np.array([-1, 0, 0, -1, 1, -1])
    >>> hyp = np.array([-1, 0, -1])
    >>> align_to_full(np.array([0.2, 0.5, 0.3]), hyp, full, text=1).tolist()
    [0.2, 0.0, 0.0, 0.0, 0.5, 0.3]
    >>> align_to_full(np.array([0.2, 0.5, 0.3]), hyp, full, text=1, alignment="pad").tolist()
    [0.0, 0.0, 0.0, 0.2, 0.5, 0.3]
    """
    partial = np.asarray(partial, dtype=float)
    n_full = len(full_segments)
    out = np.zeros(n_full)
    if alignment == "pad":
        k = min(len(partial), n_full)
        if text == 0:
            out[:k] = partial[:k]
        else:
            out[n_full - k :] = partial[len(partial) - k :]
        return out
    if alignment != "tokens":
        raise ParameterError(
            f"The 'alignment' parameter must be one of {list(ALIGNMENTS)}. Got {alignment!r} "
            "instead."
        )
    p_content = np.flatnonzero(partial_segments >= 0)
    f_content = np.flatnonzero(full_segments == text)
    k = min(len(p_content), len(f_content))
    out[f_content[:k]] = partial[p_content[:k]]
    # Special tokens before the partial text -> the full input's leading special tokens.
    p_first = p_content[0] if len(p_content) else len(partial_segments)
    f_first = int(np.flatnonzero(full_segments >= 0)[0]) if (full_segments >= 0).any() else n_full
    lead = min(p_first, f_first)
    out[:lead] += partial[:lead]
    # Special tokens after the partial text -> those closing the same text in the full input.
    if len(p_content) and len(f_content):
        p_tail = np.arange(p_content[-1] + 1, len(partial_segments))
        f_after = np.arange(f_content[-1] + 1, n_full)
        f_tail = f_after[: np.argmax(np.append(full_segments[f_after] >= 0, True))]
        m = min(len(p_tail), len(f_tail))
        out[f_tail[:m]] += partial[p_tail[:m]]
    return out


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return float("nan")
    return float(np.dot(a, b) / (na * nb))


def relevance_agreement(
    full: TokenRelevance, partial: TokenRelevance, *, alignment: str = "tokens"
) -> np.ndarray:
    """Per-example TRA (paper 003 Eq. 10) of a full-input and a partial-input model.

    Both must score the same examples in the same order. The partial input is one field
    of the full input's; its relevance vector is aligned with :func:`align_to_full` and
    compared by cosine similarity. NaN where a vector is all zeros.

    Examples
    --------
    >>> f = TokenRelevance(np.array(["a"]), [np.array([0.1, 0.2, 0.1, 0.1, 0.4, 0.1])],
    ...                    [np.array([-1, 0, 0, -1, 1, -1])], np.array([0.9]),
    ...                    ("premise", "hypothesis"))
    >>> h = TokenRelevance(np.array(["a"]), [np.array([0.2, 0.6, 0.2])],
    ...                    [np.array([-1, 0, -1])], np.array([0.8]), ("hypothesis",))
    >>> round(float(relevance_agreement(f, h)[0]), 4)  # .28 / (sqrt(.24) * sqrt(.44))
    0.8616
    """
    if len(partial.fields) != 1 or partial.fields[0] not in full.fields:
        raise ParameterError(
            f"Token relevance agreement compares a one-field partial input with the full "
            f"input; got partial fields {list(partial.fields)} and full fields "
            f"{list(full.fields)}."
        )
    if len(full) != len(partial) or not np.array_equal(
        np.asarray(full.ids, dtype=str), np.asarray(partial.ids, dtype=str)
    ):
        raise ParameterError(
            "The full- and partial-input relevance must score the same examples in the same "
            f"order; got {len(full)} and {len(partial)} rows."
        )
    text = full.fields.index(partial.fields[0])
    out = np.empty(len(full))
    for i in range(len(full)):
        aligned = align_to_full(
            partial.relevance[i], partial.segments[i], full.segments[i], text, alignment
        )
        out[i] = _cosine(full.relevance[i], aligned)
    return out


def token_relevance_agreement(
    psc_model: str | os.PathLike[str],
    ssc_model: str | os.PathLike[str],
    dataset: Dataset,
    ssc_view: str | View | None = None,
    *,
    psc_view: str | View = "full",
    rows: np.ndarray | list[int] | None = None,
    alignment: str = "tokens",
    **kwargs: Any,
) -> np.ndarray:
    """Per-example TRA (paper 003 Eq. 9-10) of two fine-tuned models; its mean is the
    dataset-level TRA.

    Parameters
    ----------
    psc_model, ssc_model : path
        Models fine-tuned on the full input and on the partial input.
    dataset : Dataset
    ssc_view : str or View, optional
        The partial input (default: the view ``ssc_model`` was trained on).
    psc_view : str or View, default="full"
    rows : array-like of int, optional
        Rows to score (default: all).
    alignment : {"tokens", "pad"}, default="tokens"
        See :func:`align_to_full`.
    **kwargs
        Passed to :func:`token_relevance` (``mode``, ``batch_size``, ``device``,
        ``precision`` ...). The authors' computation is ``mode="authors",
        alignment="pad"``.

    Returns
    -------
    numpy.ndarray of float, one TRA in [-1, 1] (in practice [0, 1]) per scored row

    Examples
    --------
    >>> tra = token_relevance_agreement("runs/ft-full", "runs/ft-hyp", dev)  # doctest: +SKIP
    >>> float(np.nanmean(tra))  # doctest: +SKIP
    0.71
    """
    full = token_relevance(psc_model, dataset, psc_view, rows=rows, **kwargs)
    partial = token_relevance(ssc_model, dataset, ssc_view, rows=rows, **kwargs)
    return relevance_agreement(full, partial, alignment=alignment)
