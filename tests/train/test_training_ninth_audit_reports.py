"""What the ninth stop's audit of sb3 training found in what a run reports: TensorBoard's
evaluations a rollout late (the last one never)."""

from __future__ import annotations

import json

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
