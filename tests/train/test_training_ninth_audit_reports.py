"""What the ninth stop's audit of sb3 training found in what a run reports: TensorBoard's
evaluations a rollout late (the last one never), a time estimate that left the updates
out, a bad rule option blamed on the table sizes, and a second-phase preset without its
first phase's run met with a generic error."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from train.cli import main
from train.training import TrainConfig, train
from train.training.presets import PRESETS, preset_values


def usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one error line ``llama-rl`` prints for a usage error (exit 2)."""
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


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


def test_a_budget_of_one_rollout_promises_no_time_estimate(tmp_path, capsys):
    """The estimate follows the first update, at the second rollout's start, which a
    budget of one rollout never reaches: the start line promised it all the same."""
    smoke = {**PRESETS["smoke"], "progress_bar": True, "total_timesteps": 512, "eval_every": 0}
    train(TrainConfig(**smoke, run_dir=str(tmp_path), run_name="one"))
    out = capsys.readouterr().out
    assert "training 512 steps (to 512) in " in out and "time estimate" not in out and "to go" not in out, out


# --------------------------------------------------------------------------- 7. a rule option's own range


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--end-score", "0"], "config key 'end_score': end_score must be between 1 and 1000, got 0"),
        (["--end-score", "5000"], "config key 'end_score': end_score must be between 1 and 1000, got 5000"),
        (["--hand-size", "0"], "config key 'hand_size': hand_size must be between 1 and 27 for 2 players"),
        # a hand no table deals: the bound of the run's own table size, not of 2 players
        (
            ["--players", "4", "--hand-size", "30"],
            "config key 'players' includes 4: hand_size must be between 1 and 13 for 4 players",
        ),
        # a hand some table sizes deal: the sizes are to blame, and those that deal it are named
        (
            ["--players", "2,3", "--hand-size", "20"],
            "config key 'players' includes 3: hand_size must be between 1 and 18 for 3 players",
        ),
    ],
)
def test_a_rule_option_out_of_its_range_names_its_own_key(tmp_path, capsys, flags, said):
    """``--end-score 0`` said "config key 'players' includes 2: end_score must be between 1
    and 1000, got 0" (later "end_score must be ...", naming no key at all): no table size
    allows it, and the key to fix is end_score."""
    err = usage_error(capsys, "train", "--preset", "smoke", "--run-dir", str(tmp_path), *flags)
    assert err.startswith(f"llama-rl: error: {said}"), err
    assert list(tmp_path.iterdir()) == []


def test_a_config_with_a_rule_option_out_of_its_range_names_the_option():
    with pytest.raises(ValueError, match="^config key 'end_score': end_score must be between 1 and 1000, got 0$"):
        TrainConfig(end_score=0).validate()
    with pytest.raises(ValueError, match="^config key 'players' includes 4: hand_size must be between 1 and 13 for 4 "):
        TrainConfig(players=(4,), hand_size=28).validate()


# --------------------------------------------------------------------------- 8. a second phase without its first


@pytest.mark.parametrize("second", sorted(name for name, values in PRESETS.items() if "resume" in values))
def test_a_second_phase_preset_without_its_first_run_names_the_preset_to_train_first(
    second, tmp_path, capsys, monkeypatch
):
    """``llama-rl train --preset ship-finetune`` without runs/ship said only "'runs/ship' is
    neither a run directory nor a checkpoint"."""
    (first,) = [p for p, values in PRESETS.items() if values.get("run_name") == Path(PRESETS[second]["resume"]).name]
    monkeypatch.chdir(tmp_path)
    err = usage_error(capsys, "train", "--preset", second)
    assert err == (
        f"llama-rl: error: --preset {second} continues the run of --preset {first}, and there is no "
        f"{Path('runs', first)}: train that first (llama-rl train --preset {first}), give --run-dir the folder "
        "that holds its run, or --resume the run\n"
    )
    elsewhere = tmp_path / "my runs"
    err = usage_error(capsys, "train", "--preset", second, "--run-dir", str(elsewhere))
    assert f"there is no {elsewhere / first}: " in err
    assert f"(llama-rl train --preset {first} --run-dir {shlex.quote(str(elsewhere))})" in err
    with pytest.raises(ValueError, match=f"^--preset {second} continues the run of --preset {first}, "):
        preset_values(second)
    assert not (tmp_path / "runs").exists() and not elsewhere.exists()
