"""Issue 26 item 8: `train --resume` after a kill while a checkpoint was being saved."""

from __future__ import annotations

import logging

from spurious.models.finetune.outputs import CHECKPOINT_DIR, RUN_FILE, prepare_output
from spurious.utils.io import atomic_write_json


def _checkpoints(out, steps_complete, steps_cut):
    ckpt = out / CHECKPOINT_DIR
    ckpt.mkdir(parents=True)
    atomic_write_json(ckpt / RUN_FILE, {"seed": 0})
    for step in steps_complete:
        (ckpt / f"checkpoint-{step}").mkdir()
        (ckpt / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    for step in steps_cut:  # what a kill while saving leaves: weights, no trainer state
        (ckpt / f"checkpoint-{step}").mkdir()
        (ckpt / f"checkpoint-{step}" / "model.safetensors").write_bytes(b"partial")
    return ckpt


def test_resume_skips_a_checkpoint_cut_short(tmp_path, caplog):
    ckpt = _checkpoints(tmp_path, steps_complete=[10, 20], steps_cut=[30])
    with caplog.at_level(logging.WARNING):
        last = prepare_output(tmp_path, {"seed": 0}, resume=True, overwrite=False)
    assert last == ckpt / "checkpoint-20"  # not checkpoint-30, and not checkpoint-10
    assert "skipping the checkpoint" in caplog.text and "checkpoint-30" in caplog.text


def test_only_cut_checkpoints_start_over(tmp_path):
    _checkpoints(tmp_path, steps_complete=[], steps_cut=[5])
    assert prepare_output(tmp_path, {"seed": 0}, resume=True, overwrite=False) is None
