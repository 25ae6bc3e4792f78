"""A model says the rule options it was trained at (its ``.npz``, or the run that made
it), as it says its table sizes, and a ppo agent warns once, before any game, at rules
it never saw."""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import numpy as np
import pytest

import agents
from agents.ppo import (
    Actor,
    PPOAgent,
    UnseenRules,
    load_actor,
    run_table_sizes,
    run_trained_at,
    save_actor,
    trained_rule_key,
)
from llama_env.agent import unmade_for
from llama_env.engine import DEFAULT_RULES, Rules, rule_option_fields
from llama_env.observation import OBS_SIZE_V1
from train.cli import main
from train.evaluation import evaluate

OPTIONS = [f.name for f in rule_option_fields()]


def small_actor(sizes=None, rules=None) -> Actor:
    rng = np.random.default_rng(0)
    shapes = [(8, OBS_SIZE_V1), (9, 8)]
    return Actor([(rng.normal(size=s), rng.normal(size=s[0])) for s in shapes], "tanh", sizes, rules)


def run_dir(path, *sessions):
    """A run directory whose first session ran the config ``sessions[0]`` and each resumed
    one the next (as the trainers record them)."""
    path.mkdir(parents=True, exist_ok=True)
    for k, config in enumerate(sessions):
        name = "config.json" if k == 0 else f"config.resume_{k}.json"
        (path / name).write_text(json.dumps(config))
    return path


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue()


def test_a_run_trained_at_end_score_20_is_warned_of_at_the_standard_rules_and_exported_with_them(tmp_path):
    """llama-rl train --end-score 20 --hand-size 4, evaluated at the standard rules, said
    nothing, and llama-rl export kept its table sizes and dropped its rules."""
    argv = ["train", "--preset", "smoke", "--eval-every", "0", "--no-tensorboard", "--players", "2"]
    argv += ["--eval-players", "2", "--end-score", "20", "--hand-size", "4"]
    code, output = _cli([*argv, "--run-dir", str(tmp_path), "--run-name", "es"])
    assert code == 0, output
    run = tmp_path / "es"
    assert load_actor(run).trained_rules == {"end_score": (20,), "hand_size": (4,)}
    spec = f"ppo:path={run}"
    with pytest.warns(UnseenRules) as said:
        evaluate([spec, "heuristic"], 2, workers=1)
    assert [str(w.message) for w in said if w.category is UnseenRules] == [
        f"PPOAgent(path='{run / 'model.zip'}', deterministic=True) was trained at end_score 20, hand_size 4 only; "
        "this table plays end_score 40, hand_size 6, rules it never saw: it plays all the same (said once)"
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # at its own rules: not a word
        evaluate([spec, "heuristic"], 2, workers=1, rules=Rules(2, end_score=20, hand_size=4))
    code, output = _cli(["export", str(run), "--out", str(tmp_path / "es.npz")])
    assert code == 0, output
    assert "trained at 2 players, end_score 20, hand_size 4;" in output
    exported = load_actor(tmp_path / "es.npz")  # out of the run: the file alone says
    assert (exported.table_sizes, exported.trained_rules) == ((2,), {"end_score": (20,), "hand_size": (4,)})


def test_the_cli_warns_once_before_any_game_with_workers(tmp_path):
    run = run_dir(tmp_path / "run", {"players": [2], "end_score": 20})
    save_actor(small_actor(), run / "model.npz")
    argv = ["eval", "--agents", f"ppo:path={run},heuristic", "--games", "4", "--workers", "2"]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        code, output = _cli(argv)
    assert code == 0, output
    lines = [str(w.message) for w in said if w.category is UnseenRules]
    assert len(lines) == 1 and "was trained at end_score 20 only; this table plays end_score 40" in lines[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnseenRules)
        code, output = _cli([*argv, "--end-score", "20"])
    assert code == 0, output


def test_an_agent_says_it_once_and_only_of_the_options_it_never_saw():
    agent = PPOAgent.from_actor(small_actor(rules={"end_score": [20, 30], "hand_size": [6]}))
    assert agent.trained_rules == {"end_score": (20, 30), "hand_size": (6,)}
    assert agent.forewarn(Rules(4, end_score=30)) is None
    warning = agent.forewarn(Rules(4, end_score=25, hand_size=4))
    assert isinstance(warning, UnseenRules) and isinstance(warning, UserWarning)
    assert "trained at end_score 20 and 30, hand_size 6 only; this table plays end_score 25, hand_size 4" in str(
        warning
    )
    assert agent.forewarn(Rules(2, end_score=25, hand_size=4)) is None  # said once
    assert agent.forewarn(Rules(2, end_score=25)) is not None  # other unseen rules: said too


def test_the_shipped_agents_and_a_model_that_says_nothing_are_silent(tmp_path):
    save_actor(small_actor([3]), tmp_path / "old.npz")  # as files written before the rules were kept
    with np.load(tmp_path / "old.npz") as z:
        assert not [k for k in z.files if k.startswith("trained_")]
    assert load_actor(tmp_path / "old.npz").trained_rules is None
    assert PPOAgent(path=str(tmp_path / "old.npz")).trained_rules is None
    for name in ("ppo", "ppo_v0", "ppo_v3"):
        assert agents.make(name).trained_rules is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate([f"ppo:path={tmp_path / 'old.npz'}", "ppo", "random"], 2, workers=1, rules=Rules(3, end_score=30))


def test_resumed_sessions_with_other_rules_are_united_and_a_missing_key_is_its_default(tmp_path):
    run = run_dir(
        tmp_path / "run",
        {"players": [2], "end_score": 20, "hand_size": 4},
        {"players": [2], "end_score": 30, "hand_size": 4},
        {"players": [4]},  # a config from before the rule options: the standard ones
    )
    save_actor(small_actor(), run / "model.npz")
    trained = run_trained_at(run / "model.npz")
    assert trained is not None
    assert trained.table_sizes == run_table_sizes(run / "model.npz") == (2, 4)
    assert trained.rules == {"end_score": (20, 30, 40), "hand_size": (4, 6)}
    assert PPOAgent(path=str(run)).forewarn(Rules(2, end_score=40, hand_size=6)) is None


def test_a_checkpoint_takes_the_rules_of_the_sessions_that_had_started_before_it(tmp_path):
    from train.training.run_dir import RunDir

    run = run_dir(tmp_path / "run", {"players": [2], "end_score": 20}, {"players": [2], "end_score": 30})
    record = RunDir(run)
    record.append_session(0, 1000, "config.json", None, False)
    record.append_session(1000, 2000, "config.resume_1.json", run / "checkpoints" / "ppo_1000.zip", False)
    assert run_trained_at(run / "checkpoints" / "ppo_1000.zip").rules["end_score"] == (20,)
    assert run_trained_at(run / "checkpoints" / "ppo_2000.zip").rules["end_score"] == (20, 30)


def test_the_file_wins_over_the_run_option_by_option(tmp_path):
    run = run_dir(tmp_path / "run", {"players": [2, 4], "end_score": 20, "hand_size": 4})
    save_actor(small_actor(rules={"end_score": [30]}), run / "model.npz")
    with np.load(run / "model.npz") as z:
        assert trained_rule_key("end_score") in z.files and trained_rule_key("hand_size") not in z.files
    actor = load_actor(run)
    assert (actor.table_sizes, actor.trained_rules) == ((2, 4), {"end_score": (30,), "hand_size": (4,)})


@pytest.mark.parametrize(
    ("config", "why"),
    [
        ({"players": [2], "end_score": "twenty"}, "not a number"),
        ({"players": [2], "end_score": None}, "not a number"),
        ({"players": [2], "end_score": 40, "hand_size": 0}, "out of range"),
    ],
)
def test_a_run_config_with_a_bad_rule_option_says_no_rules_but_keeps_its_table_sizes(tmp_path, config, why):
    """One bad rule option in a run's config lost the run's table sizes too: a model of
    a heads-up run sat at four players with no word."""
    run = run_dir(tmp_path / "run", config)
    save_actor(small_actor(), run / "model.npz")
    actor = load_actor(run)
    assert (actor.table_sizes, actor.trained_rules) == ((2,), None), why
    assert run_table_sizes(run / "model.npz") == (2,)
    assert run_trained_at(run / "model.npz").rules == {}
    assert len(unmade_for([PPOAgent(path=str(run))], 4)) == 1


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (np.array([20.0]), r"its trained_end_score entry is not a list of integers \(float64, shape \(1,\)\)"),
        (np.array([[20]]), r"its trained_end_score entry is not a list of integers"),
        (np.array([True]), r"its trained_end_score entry is not a list of integers"),
        (np.array([0, 20]), r"its trained_end_score entry: end_score values must be integers 1..1000, got \[0, 20\]"),
        (np.array([], dtype=np.int64), r"its trained_end_score entry: end_score values must be integers 1..1000"),
    ],
)
def test_a_damaged_rule_entry_is_refused_naming_the_file(tmp_path, entry, message):
    save_actor(small_actor(), tmp_path / "a.npz")
    with np.load(tmp_path / "a.npz") as z:
        arrays = dict(z)
    np.savez(tmp_path / "a.npz", **arrays, **{trained_rule_key("end_score"): entry})
    with pytest.raises(ValueError, match=f"^cannot load a PPO model from .*a.npz: {message}") as caught:
        load_actor(tmp_path / "a.npz")
    assert "\n" not in str(caught.value)


def test_actor_checks_the_rules_it_is_given():
    with pytest.raises(ValueError, match=r"unknown rule option 'end' \(known: end_score, hand_size\)"):
        small_actor(rules={"end": [20]})
    with pytest.raises(ValueError, match="hand_size values must be integers 1..27, got 'four'"):
        small_actor(rules={"hand_size": "four"})
    with pytest.raises(ValueError, match="end_score values must be integers 1..1000"):
        small_actor(rules={"end_score": [True]})
    assert small_actor(rules={}).trained_rules is None
    assert list(small_actor(rules={"hand_size": (5, 4, 5), "end_score": [9]}).trained_rules) == OPTIONS


def test_export_names_only_the_rule_options_other_than_the_standard_ones(tmp_path):
    standard = DEFAULT_RULES.options()
    run = run_dir(tmp_path / "run", {"players": [4, 6], **standard})
    save_actor(small_actor(), run / "model.npz")
    code, output = _cli(["export", str(run), "--out", str(tmp_path / "x.npz")])
    assert code == 0, output
    assert "trained at 4/6 players; play it" in output
    assert load_actor(tmp_path / "x.npz").trained_rules == {k: (v,) for k, v in standard.items()}


def test_the_search_says_the_rules_its_path_model_never_saw(tmp_path):
    """search:path= of a model trained at end_score 20 said nothing of it at 40, where
    ppo:path= of the same file warned."""
    from agents.search import SearchAgent

    save_actor(small_actor([4], rules={"end_score": [20], "hand_size": [6]}), tmp_path / "m.npz")
    agent = SearchAgent(path=str(tmp_path / "m.npz"))
    warning = agent.forewarn(Rules(4))
    assert isinstance(warning, UnseenRules)
    assert str(warning).startswith(f"{agent!r}'s model was trained at end_score 20 only; this table plays end_score 40")
    assert agent.forewarn(Rules(4)) is None  # said once
    both = SearchAgent(path=str(tmp_path / "m.npz"), below=0.5).forewarn(Rules(4, end_score=25))  # below unused too
    assert both is not None and "does not search at end_score 25" in str(both)
    assert "'s model was trained at end_score 20 only; this table plays end_score 25" in str(both)
    assert SearchAgent().forewarn(Rules(4, end_score=25)) is None  # the shipped models say nothing
