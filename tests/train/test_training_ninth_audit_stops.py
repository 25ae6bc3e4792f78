"""What the ninth stop's audit of training found in how a run stops: Ctrl-C or SIGTERM in
the evaluation at the end of the budget lost the run, a session killed outright left
``summary.json`` saying the run had ended cleanly, a new run killed before its first save
was refused by ``--resume`` and by its ``--run-name`` each pointing at the other, and a new
run interrupted before it learned a step kept an untrained model."""

from __future__ import annotations

import json
from pathlib import Path

from train.cli import main


def smoke_args(tmp_path: Path, name: str, *extra: str) -> list[str]:
    """``llama-rl train`` arguments of a smoke run ``name`` in ``tmp_path``."""
    where = ["--run-dir", str(tmp_path), "--run-name", name, "--final-eval-games", "0"]
    return ["train", "--preset", "smoke", *where, *extra]


# --------------------------------------------------------------------------- 1. Ctrl-C in the evaluation at the end


def test_ctrl_c_in_the_evaluation_at_the_end_of_the_budget_saves_the_run(tmp_path, monkeypatch, capsys):
    """The evaluation due with the budget's last update runs after ``learn`` returned, where
    no handler caught Ctrl-C: a run without a checkpoint yet (``--checkpoint-every 0``, as
    beat-heuristic runs) was deleted whole as a new run that saved nothing, one with
    checkpoints lost its model, summary and session line, and nothing said so."""
    import train.training.evaluation as evaluation

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # as SIGTERM or Ctrl-C does while the games are played

    monkeypatch.setattr(evaluation, "evaluate_vs", interrupted)
    run = tmp_path / "end"
    code = main(smoke_args(tmp_path, "end", "--checkpoint-every", "0", "--eval-every", "2048", "--no-tensorboard"))
    out = capsys.readouterr().out
    assert code == 130, out
    assert "interrupted at 2048 steps: saving a checkpoint" in out
    # the budget is learned: --resume alone would refuse it as nothing left to train
    assert f"continue it with: llama-rl train --resume {run} --total-timesteps 4096" in out
    assert (run / "checkpoints" / "ppo_2048.zip").is_file() and (run / "model.zip").is_file()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["num_timesteps"] == 2048 and summary["interrupted"] is True
    (session,) = [json.loads(line) for line in (run / "sessions.jsonl").read_text().splitlines()]
    assert (session["ended_at_step"], session["interrupted"]) == (2048, True)
    assert not (run / ".lock").exists()
