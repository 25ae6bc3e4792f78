"""What the ninth stop's audit of sb3 training found in what a run reports: TensorBoard's
evaluations a rollout late (the last one never), a time estimate that left the updates
out."""

from __future__ import annotations

import json
import re

from train.training import TrainConfig, train
from train.training.presets import PRESETS

# --------------------------------------------------------------------------- 2. evaluations in TensorBoard


def test_tensorboard_shows_each_evaluation_at_the_step_it_measured(tmp_path):
    """``eval/win_share_vs_heuristic_2p`` was written at SB3's next dump, a rollout later
    (1536 for the evaluation at 1024), and the one at the end of the budget (2048) never."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    train(TrainConfig(**PRESETS["smoke"], run_dir=str(tmp_path), run_name="tb"))
    run = tmp_path / "tb"
    measured = [json.loads(line)["timesteps"] for line in (run / "eval.jsonl").read_text().splitlines()]
    assert measured == [1024, 2048]
    (events,) = run.joinpath("tb").rglob("events.out.tfevents*")
    shown = EventAccumulator(str(events))
    shown.Reload()
    for n in (2, 4):
        for tag in (f"eval/win_share_vs_heuristic_{n}p", f"eval/fair_share_{n}p"):
            assert [e.step for e in shown.Scalars(tag)] == measured, tag
    assert [e.value for e in shown.Scalars("eval/fair_share_4p")] == [0.25, 0.25]
    assert [e.step for e in shown.Scalars("train/learning_rate")] == [1024, 1536, 2048]  # SB3's own, as before


# --------------------------------------------------------------------------- 3. the time estimate


def test_the_time_estimate_counts_the_update_after_the_first_rollout(tmp_path, capsys, monkeypatch):
    """The rate was taken at the end of the first rollout, before its update: ``--preset
    beat-heuristic`` said 87,539 steps/s and "about 11 s to go", then trained at 24,168.
    Here the first update takes a second more: a rate of a 512-step rollout that counts it
    is under 512 steps/s."""
    import time

    from sb3_contrib import MaskablePPO

    update = MaskablePPO.train
    updates: list[MaskablePPO] = []

    def slow_first_update(self: MaskablePPO) -> None:
        if not updates:
            time.sleep(1.0)
        updates.append(self)
        update(self)

    monkeypatch.setattr(MaskablePPO, "train", slow_first_update)
    train(TrainConfig(**{**PRESETS["smoke"], "progress_bar": True}, run_dir=str(tmp_path), run_name="eta"))
    captured = capsys.readouterr()
    (estimate,) = re.findall(r"([\d,]+) steps/s so far: about (\d+) s to go", captured.out)
    rate, left = int(estimate[0].replace(",", "")), int(estimate[1])
    assert rate < 512 and left >= 2, estimate  # 1536 steps left at under 512 a second
    assert "a time estimate follows the first update" in captured.out
