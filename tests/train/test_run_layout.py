"""A run directory's layout is declared once (in :mod:`agents.ppo`, which reads runs as
the trainers write them): the trainer's :class:`RunDir` and the ``ppo`` agent list the
same checkpoints and configs, and the hint for a run without its model yet names the
caller's own spec."""

from __future__ import annotations

import json
import shutil

import pytest

from agents.ppo import DEFAULT_MODEL_ZIP, is_run_directory, model_file, whole_checkpoints
from train.training.run_dir import RunDir


def _run_with(tmp_path, *checkpoints: str) -> RunDir:
    run = RunDir(tmp_path / "run")
    run.checkpoints_dir.mkdir(parents=True)
    run.config_path.write_text(json.dumps({"players": 2}))
    for name in checkpoints:
        shutil.copy(DEFAULT_MODEL_ZIP, run.checkpoints_dir / name)
    return run


def test_a_checkpoint_named_with_digits_of_another_script_is_no_checkpoint_for_either(tmp_path):
    """``ppo_٣.zip`` (Arabic-Indic three) was listed by the ppo agent's reading of a run
    (``\\d`` takes every script's digits) and suggested by ``ppo:path=``, and not by the
    trainer's (ASCII digits only)."""
    run = _run_with(tmp_path, "ppo_\u0663.zip")
    assert run.checkpoints() == [] and run.checkpoint_step_counts() == []
    assert whole_checkpoints(run.path) == run.whole_checkpoints() == []
    with pytest.raises(ValueError, match="and no checkpoint to use either"):
        model_file(run.path)
    shutil.copy(DEFAULT_MODEL_ZIP, run.checkpoint_path(3))
    assert [p.name for p in run.checkpoints()] == ["ppo_3.zip"]
    assert whole_checkpoints(run.path) == run.whole_checkpoints() == [(3, run.checkpoint_path(3))]


def test_a_resumed_config_named_with_digits_of_another_script_is_no_config_for_either(tmp_path):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    (run.path / "config.resume_\u0663.json").write_text("{}")
    assert not is_run_directory(run.path) and not run.is_run() and run.config_files() == []
    (run.path / "config.resume_2.json").write_text("{}")
    assert is_run_directory(run.path) and run.config_files() == [run.path / "config.resume_2.json"]
    assert run.next_resume_config_path() == run.path / "config.resume_3.json"


@pytest.mark.parametrize("spec", ["ppo:path=", "search:path=", "--model "])
def test_the_hint_for_a_run_without_its_model_names_the_callers_spec(spec, tmp_path):
    run = _run_with(tmp_path, "ppo_1024.zip")
    given = {} if spec == "ppo:path=" else {"spec": spec}  # ppo:path= is the default
    with pytest.raises(ValueError, match="the run has no model yet") as info:
        model_file(run.path, **given)
    assert str(info.value).endswith(f"use its newest checkpoint instead: {spec}{run.checkpoint_path(1024)}")


def test_the_search_agent_fit_search_and_distill_name_their_own_words_in_the_hint(tmp_path):
    """They said ppo:path= for a run still training, where the user had typed
    search:path= or --model."""
    from agents.search import SearchAgent
    from train.fit.distill import DistillConfig, distill
    from train.fit.search_nets import SearchNetsConfig, fit_search_networks

    run = _run_with(tmp_path, "ppo_1024.zip")
    with pytest.raises(ValueError, match=r"instead: search:path=\S*ppo_1024\.zip$"):
        SearchAgent(path=str(run.path))
    with pytest.raises(ValueError, match=r"instead: --model \S*ppo_1024\.zip$"):
        fit_search_networks(SearchNetsConfig(model=str(run.path)), tmp_path / "nets.npz")
    with pytest.raises(ValueError, match=r"instead: --model \S*ppo_1024\.zip$"):
        distill(DistillConfig(model=str(run.path)), tmp_path / "distilled.npz")


def _model_of(run: RunDir, steps: int) -> None:
    shutil.copy(DEFAULT_MODEL_ZIP, run.path / "model.zip")
    (run.path / "summary.json").write_text(json.dumps({"num_timesteps": steps}))


def test_a_model_overtaken_by_a_later_checkpoint_is_not_played_unasked(tmp_path, capsys):
    """A resumed session that crashed (or is still training) leaves checkpoints beyond the
    run's model: ppo:path=, search:path= and export played or wrote the older model with no
    word. They now name both; the files themselves still load."""
    from agents.search import SearchAgent
    from train.cli import main

    run = _run_with(tmp_path, "ppo_1024.zip", "ppo_2048.zip")
    _model_of(run, 2048)
    assert model_file(run.path) == run.path / "model.zip"  # the newest: nothing to say
    _model_of(run, 512)
    with pytest.raises(ValueError, match=r"its model \(512 steps\) is older than its checkpoint of 2048 steps") as info:
        model_file(run.path)
    assert str(info.value).endswith(f"ppo:path={run.path / 'model.zip'} or ppo:path={run.checkpoint_path(2048)}")
    with pytest.raises(ValueError, match=r"search:path=\S*model\.zip or search:path=\S*ppo_2048\.zip$"):
        SearchAgent(path=str(run.path))
    assert model_file(run.path / "model.zip") == run.path / "model.zip"  # named, it is played
    assert main(["export", str(run.path), "--out", str(tmp_path / "a.npz")]) == 2
    err = capsys.readouterr().err
    assert "older than its checkpoint of 2048 steps" in err and "llama-rl export" in err
    assert not (tmp_path / "a.npz").exists()
    run.checkpoint_path(2048).write_bytes(b"")  # a checkpoint cut short is not named: the newest whole one is
    with pytest.raises(ValueError, match=r"ppo:path=\S*ppo_1024\.zip$"):
        model_file(run.path)
    _model_of(run, 1024)
    assert model_file(run.path) == run.path / "model.zip"
    (run.path / "summary.json").unlink()  # nothing says the model's steps: it plays
    assert model_file(run.path) == run.path / "model.zip"
