"""The run's device (``spurious audit --device``, :func:`use_device`).

Every model-based step with ``device="auto"`` (the encoder, AFLite's classifiers, the
partial-input probes, the fast paths' MLPs) follows the run's device, also on the local
executor's worker threads. These machines have no GPU, so "a GPU is there" is simulated
by making ``torch.cuda.is_available`` say yes: a step that ignored the run's device would
then try CUDA and fail. The CUDA paths themselves are checked on a GPU machine by
``bench/check_gpu_paths.py``.
"""

from __future__ import annotations

import contextvars
import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import sparse

from spurious.cli import main
from spurious.exceptions import ParameterError
from spurious.execution import LocalExecutor
from spurious.execution import executor as executor_module
from spurious.models.batched import BatchedLogisticRegression
from spurious.models.clustering import MLPEmbedding
from spurious.models.dynamics import probe_dynamics
from spurious.models.linear import LogisticProbe, cross_fit_proba
from spurious.models.runtime import auto_device, use_device
from spurious.models.torch_loop import RowFeeder, rows_tensor, train_loop
from spurious.runconfig import normalise_config

torch = pytest.importorskip("torch")

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("test_var", default="unset")


@pytest.fixture
def fake_gpu(monkeypatch):
    """torch says a GPU is there (nothing may actually use it)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


def test_use_device_pins_auto_and_restores(fake_gpu):
    assert auto_device() == "cuda"
    with use_device("cpu"):
        assert auto_device() == "cpu"
        assert LogisticProbe(device="auto")._device() == "cpu"
        assert BatchedLogisticRegression(device="auto")._device() == "cpu"
        with use_device(None), use_device("auto"):  # change nothing
            assert auto_device() == "cpu"
    assert auto_device() == "cuda"
    assert LogisticProbe(device="auto")._device() == "cuda"
    assert LogisticProbe()._device() == "cpu"  # its own default stays the CPU


def test_use_device_refuses_a_device_that_is_not_there():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ParameterError, match="CUDA is not available"), use_device("cuda"):
        pass
    with pytest.raises(ParameterError, match="'tpu9'"), use_device("tpu9"):
        pass


def _read_var(item, shared):
    return _VAR.get(), auto_device()


def test_side_by_side_calls_run_in_the_callers_context(fake_gpu, monkeypatch):
    # Worker threads start with an empty context: without the copy, the run's device
    # (and any context variable) would be lost inside side-by-side fits.
    monkeypatch.setattr(executor_module, "available_cores", lambda: 2)
    token = _VAR.set("set by the caller")
    try:
        with use_device("cpu"):
            got = LocalExecutor().map(_read_var, [1, 2], side_by_side=True)
    finally:
        _VAR.reset(token)
    assert got == [("set by the caller", "cpu")] * 2


def test_row_feeder_on_the_cpu_is_rows_tensor():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 6)).astype(np.float32)
    scaling = (X.mean(0), X.std(0))
    idx = np.array([7, 3, 3, 49])
    feed = RowFeeder(X, scaling)
    assert not feed.gpu and feed.on_device is None
    assert torch.equal(feed.rows(idx), rows_tensor(X, idx, scaling))
    assert torch.equal(feed.block(10, 20), rows_tensor(X, np.arange(10, 20), scaling))
    S = sparse.random(50, 6, density=0.3, format="csr", random_state=0, dtype=np.float32)
    assert torch.equal(RowFeeder(S).rows(idx), torch.from_numpy(S[idx].toarray()))
    assert feed.labels(np.array([2, 0])).dtype == torch.int64


def test_train_loop_device_cpu_is_the_numpy_path():
    # device="cpu" takes the host path: batch_loss gets the same numpy indices.
    seen = {None: [], "cpu": []}
    for device, got in seen.items():
        w = torch.zeros(1, requires_grad=True)

        def loss(idx, w=w, got=got):
            got.append(np.asarray(idx).copy())
            return ((w - 3.0) ** 2).sum()

        train_loop([w], loss, rows=np.arange(10), epochs=2, batch_size=4,
                   rng=np.random.default_rng(0), device=device)  # fmt: skip
    assert all(isinstance(i, np.ndarray) for i in seen["cpu"])
    assert [i.tolist() for i in seen[None]] == [i.tolist() for i in seen["cpu"]]


def test_device_parameters_are_checked():
    X = np.zeros((20, 3), dtype=np.float32)
    y = np.arange(20) % 2
    with pytest.raises(ParameterError, match="'tpu9'"):
        probe_dynamics(X, y, epochs=1, device="tpu9")
    with pytest.raises(ParameterError, match="'device' parameter of MLPEmbedding"):
        MLPEmbedding(device="tpu9").fit(X, y)
    with pytest.raises(ParameterError, match="'device' argument of cross_fit_proba"):
        cross_fit_proba(X, y, np.arange(20) % 2, 2, device="tpu9")


def test_fast_paths_follow_the_run_device(fake_gpu):
    # With a "GPU" there, "auto" inside use_device("cpu") must still place every tensor
    # on the CPU (placing one on CUDA would fail here).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    with use_device("cpu"):
        frame = probe_dynamics(X[:80], y[:80], X[80:], y[80:], epochs=2)
        emb = MLPEmbedding(hidden_size=4, epochs=1).fit(X, y)
        proba = cross_fit_proba(X, y, np.arange(120) % 3, 2, device="auto")
    assert len(frame) == 2 * 120 and emb.transform(X).shape == (120, 4)
    assert proba.shape == (120, 2)


@pytest.fixture(scope="module")
def data_file(nli_jsonl):
    return nli_jsonl


def test_audit_device_cpu_reaches_every_step_and_is_recorded(data_file, tmp_path, fake_gpu):
    out = tmp_path / "run"
    args = ["audit", str(data_file), "--task", "nli", "--quick", "--features", "bow",
            "--only", "partial_input", "--only", "cartography", "--only", "minority",
            "--device", "cpu", "--out", str(out)]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code in (0, 1), res.output  # 1: a finding; never a crash
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["device"] == "cpu"
    assert set(manifest["statuses"].values()) == {"ok"}, manifest["statuses"]
    # "auto" is the default and is not written: configs without --device stay as they were.
    assert "device" not in normalise_config({**manifest["config"], "device": "auto"})


def test_audit_device_that_is_not_there_fails_before_any_work(data_file, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    out = tmp_path / "run"
    for device, message in (("cuda", "CUDA is not available"), ("tpu9", "'tpu9'")):
        args = ["audit", str(data_file), "--task", "nli", "--quick", "--device", device]
        res = CliRunner().invoke(main, [*args, "--out", str(out)])
        assert res.exit_code == 2, res.output
        assert message in res.output and "Traceback" not in res.output
        assert not out.exists()
