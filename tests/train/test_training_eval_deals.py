"""The periodic evaluation's deals: every evaluation of a run played the same deals (the
run's seed plus a constant), so ``--stop-win-share`` stopped at the first evaluation whose
one sample of deals happened to read high, and ``beat-heuristic`` then read about even on
fresh deals. Each evaluation now plays deals of its own, derived from the run's seed and
its step count (a rerun plays them again), and a run stops only when a second set of fresh
deals confirms the first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import train.training.evaluation as evaluation
from agents.ppo import load_actor
from train.training import TrainConfig

SHIPPED = Path(__file__).resolve().parents[2] / "agents" / "models" / "ppo_llama.npz"


def config(**values: Any) -> TrainConfig:
    settings: dict[str, Any] = {"players": (2,), "eval_players": (2,), "eval_games": 40, "total_timesteps": 10_000}
    return TrainConfig(**{**settings, **values})


def played_seeds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The seeds of the games each evaluation plays, as they reach ``evaluate``."""
    seeds: list[int] = []
    real = evaluation.evaluate

    def spy(*args: Any, **kwargs: Any) -> Any:
        seeds.append(kwargs["seed"])
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluation, "evaluate", spy)
    return seeds


def test_evaluations_at_different_steps_play_different_deals(monkeypatch):
    seeds = played_seeds(monkeypatch)
    actor, cfg = load_actor(SHIPPED), config()
    evaluation.evaluation_row(actor, cfg, 1000)
    evaluation.evaluation_row(actor, cfg, 2000)
    evaluation.evaluation_row(actor, config(seed=1), 1000)
    assert len(seeds) == 3 and len(set(seeds)) == 3, seeds


def test_the_evaluation_at_a_step_is_reproducible(monkeypatch):
    seeds = played_seeds(monkeypatch)
    actor, cfg = load_actor(SHIPPED), config()
    first = evaluation.evaluation_row(actor, cfg, 3000)
    again = evaluation.evaluation_row(actor, cfg, 3000)
    assert first == again and seeds[0] == seeds[1]


def test_the_seed_of_an_evaluation_never_repeats_another_runs():
    """``seed + step`` would give seed 0 at step 1 the deals of seed 1 at step 0."""
    seeds = {
        evaluation.eval_seed(seed, steps, confirming)
        for seed in range(4)
        for steps in range(4)
        for confirming in (False, True)
    }
    assert len(seeds) == 32


def test_the_seed_of_an_evaluation_is_a_63_bit_seed_like_every_other_derived_one():
    """It was 64-bit where every seed the drivers derive (``seed_int``) is 63-bit."""
    seeds = [
        evaluation.eval_seed(seed, steps, confirming)
        for seed in range(4)
        for steps in range(4)
        for confirming in (0, 1)
    ]
    assert all(0 <= s < 2**63 for s in seeds), [s for s in seeds if s >= 2**63]


def scripted(monkeypatch: pytest.MonkeyPatch, shares: list[float]) -> list[int]:
    """``evaluate_vs`` answers ``shares`` in turn (an interval 0.02 either side); returns the seeds asked for."""
    asked: list[int] = []

    def answer(actor: Any, opponent: str, rules: Any, games: int, seed: int) -> tuple[float, float, float]:
        asked.append(seed)
        share = shares[len(asked) - 1]
        return share, share - 0.02, share + 0.02

    monkeypatch.setattr(evaluation, "evaluate_vs", answer)
    return asked


def test_a_run_stops_only_when_fresh_deals_confirm_the_target(monkeypatch):
    cfg = config(stop_win_share=0.5)
    asked = scripted(monkeypatch, [0.55, 0.51])
    row = evaluation.evaluation_row(None, cfg, 5000)  # type: ignore[arg-type]
    assert len(asked) == 2 and asked[0] != asked[1]  # a second set of deals, another seed
    assert evaluation.target_reached(cfg, row) and not evaluation.stops_early(cfg, row)
    assert row["confirm_win_share_2p"] == 0.51
    message = evaluation.evaluation_message(cfg, row)
    # "above 0.5" is said of the first set's lower end, shown as the fresh deals' is (it showed 2p 0.550 alone)
    assert message == (
        "[eval @ 5,000] win share vs heuristic: 2p 0.550 (interval from 0.530): above 0.5; "
        "on fresh deals 2p 0.510 (interval from 0.490): not confirmed"
    )

    asked = scripted(monkeypatch, [0.55, 0.56])
    row = evaluation.evaluation_row(None, cfg, 5000)  # type: ignore[arg-type]
    message = evaluation.evaluation_message(cfg, row)
    assert evaluation.stops_early(cfg, row) and "on fresh deals 2p 0.560 (interval from 0.540): stopping" in message


@pytest.mark.parametrize(
    ("shares", "steps", "target"),
    [([0.45], 5000, 0.5), ([0.55], 10_000, 0.5), ([0.55], 5000, 0.0)],
    ids=["target-missed", "end-of-budget", "no-target"],
)
def test_no_confirmation_is_played_where_nothing_would_stop(monkeypatch, shares, steps, target):
    cfg = config(stop_win_share=target)
    asked = scripted(monkeypatch, shares)
    row = evaluation.evaluation_row(None, cfg, steps)  # type: ignore[arg-type]
    assert len(asked) == 1 and "confirm_win_share_2p" not in row and not evaluation.stops_early(cfg, row)


def test_the_line_after_a_stopped_run_reads_both_sets_as_the_evaluation_line_does(monkeypatch, capsys, tmp_path):
    """Each set shows its lower end as 'interval from', the second set too (it read 'from')."""
    import train.training
    from train.cli import main
    from train.training.result import TrainResult

    row = {"timesteps": 5000, "win_share_2p": 0.55, "ci_low_2p": 0.53, "confirm_win_share_2p": 0.56}
    row["confirm_ci_low_2p"] = 0.54
    result = TrainResult(tmp_path, tmp_path / "model.zip", 5000, 5000, 1.0, 0.0, 0.0, False, [row], stopped_early=True)
    monkeypatch.setattr(train.training, "train", lambda config: result)
    args = ["--preset", "beat-heuristic", "--run-dir", str(tmp_path), "--no-progress-bar"]
    assert main(["train", *args, "--final-eval-games", "0"]) == 0
    assert "more to confirm: 2p 0.550 (interval from 0.530), on fresh deals 0.560 (interval from 0.540)\n" in (
        capsys.readouterr().out
    )
