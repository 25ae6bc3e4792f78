"""A model says the table sizes it was trained at (its ``.npz``, or the run that made
it), and evaluation warns when it sits at another size."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import warnings

import numpy as np
import pytest

import agents
from agents.ppo import (
    RLLIB_MODULE_STATE,
    TABLE_SIZES_KEY,
    Actor,
    PPOAgent,
    load_actor,
    run_table_sizes,
    save_actor,
)
from llama_env.agent import table_sizes, unmade_for
from llama_env.observation import OBS_SIZE_V1
from train.cli import main
from train.evaluation import evaluate, tournament
from train.play import terminal


def small_actor(sizes=None) -> Actor:
    rng = np.random.default_rng(0)
    shapes = [(8, OBS_SIZE_V1), (9, 8)]
    return Actor([(rng.normal(size=s), rng.normal(size=s[0])) for s in shapes], "tanh", sizes)


def run_dir(path, players, *resumed):
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps({"players": players, "total_timesteps": 1000}))
    for k, more in enumerate(resumed, 1):
        (path / f"config.resume_{k}.json").write_text(json.dumps({"players": more}))
    return path


def test_an_exported_actor_keeps_its_table_sizes(tmp_path):
    save_actor(small_actor([4, 2, 4]), tmp_path / "a.npz")
    assert load_actor(tmp_path / "a.npz").table_sizes == (2, 4)
    save_actor(small_actor(), tmp_path / "b.npz")  # nothing known: nothing written
    with np.load(tmp_path / "b.npz") as z:
        assert TABLE_SIZES_KEY not in z.files
    assert load_actor(tmp_path / "b.npz").table_sizes is None


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (np.array([2.0, 4.0]), "its table_sizes entry is not a list of integers"),
        (np.array([[2, 4]]), "its table_sizes entry is not a list of integers"),
        (np.array([2, 7]), r"table sizes must be integers 2..6, got \[2, 7\]"),
        (np.array([], dtype=np.int64), r"table sizes must be integers 2..6, got \[\]"),
    ],
)
def test_a_bad_table_sizes_entry_is_named(tmp_path, entry, message):
    save_actor(small_actor(), tmp_path / "a.npz")
    with np.load(tmp_path / "a.npz") as z:
        arrays = dict(z)
    np.savez(tmp_path / "a.npz", **arrays, **{TABLE_SIZES_KEY: entry})
    with pytest.raises(ValueError, match=f"cannot load a PPO model from .*a.npz: {message}"):
        load_actor(tmp_path / "a.npz")


def test_actor_checks_the_sizes_it_is_given():
    with pytest.raises(ValueError, match="table sizes must be integers 2..6"):
        small_actor([1])
    with pytest.raises(ValueError, match="table sizes must be integers 2..6"):
        small_actor(["four"])


def test_a_model_in_a_run_directory_takes_the_runs_table_sizes(tmp_path):
    run = run_dir(tmp_path / "run", [2], [4], [2, 6])  # every session it was trained in
    save_actor(small_actor(), run / "model.npz")
    assert load_actor(run).table_sizes == (2, 4, 6)
    assert PPOAgent(path=str(run)).table_sizes == (2, 4, 6)
    assert run_table_sizes(run / "checkpoints" / "ppo_1000.zip") == (2, 4, 6)
    assert run_table_sizes(run / "checkpoints" / "rllib_1000" / RLLIB_MODULE_STATE) == (2, 4, 6)
    # what the file names wins over the run's config (a file copied into another run)
    save_actor(small_actor([3]), run / "model.npz")
    assert load_actor(run).table_sizes == (3,)


def test_a_model_outside_a_run_or_with_a_damaged_config_says_nothing(tmp_path):
    save_actor(small_actor(), tmp_path / "model.npz")
    assert load_actor(tmp_path / "model.npz").table_sizes is None  # no config.json beside it
    (tmp_path / "config.json").write_text('{"players": [2')  # cut short
    assert load_actor(tmp_path / "model.npz").table_sizes is None
    (tmp_path / "config.json").write_text('{"something": "else"}')  # another program's config
    assert load_actor(tmp_path / "model.npz").table_sizes is None
    other = run_dir(tmp_path / "run", [4])
    save_actor(small_actor(), other / "mine.npz")  # not a name the trainers write
    assert load_actor(other / "mine.npz").table_sizes is None


def test_the_shipped_agents_play_every_size():
    assert table_sizes(agents.make("ppo")) is None
    assert table_sizes(agents.make("ppo_v0")) is None
    assert table_sizes(agents.make("heuristic")) is None


def test_table_sizes_of_an_agent_that_says_something_else_is_named():
    class Odd(agents.base.BaseAgent):
        name = "odd"
        table_sizes = "four"

        def act(self, observation, action_mask):
            return 0

    with pytest.raises(ValueError, match="agent 'odd': table_sizes must be integers 2..6, got 'four'"):
        table_sizes(Odd())


def test_evaluation_warns_about_an_agent_at_a_size_it_never_saw(tmp_path):
    save_actor(small_actor([2]), tmp_path / "m.npz")
    spec = f"ppo:path={tmp_path / 'm.npz'}"
    assert unmade_for([spec, spec, "heuristic"], 3) == [
        f"agent {spec!r} was trained at 2 players only; it plays this 3-player table as a table size it never saw"
    ]  # once per agent, however many seats it takes
    with pytest.warns(UserWarning, match=r"trained at 2 players only; it plays this 4-player table"):
        evaluate([spec, "random", "random", "random"], 4, workers=1)
    with pytest.warns(UserWarning, match=r"trained at 2 players only; it plays this 3-player table"):
        tournament([spec, "random", "random"], 3, 3, workers=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # at its own size: not a word
        evaluate([spec, "random"], 4, workers=1)
        evaluate([PPOAgent(path=str(tmp_path / "m.npz")), "random"], 2, workers=1, batched=False)


def test_evaluations_warning_points_at_the_callers_line_and_the_command_line_prints_one_line(tmp_path, enough_cores):
    """It pointed at a fixed depth inside llama-rl (train/evaluation/batched.py, or another
    file by the path the games took), not at the caller's line that evaluated."""
    save_actor(small_actor([2]), tmp_path / "m.npz")
    spec = f"ppo:path={tmp_path / 'm.npz'}"
    for play in (
        lambda: evaluate([spec, "random", "random"], 4, workers=1),
        lambda: evaluate([spec, "random", "random"], 4, workers=2, batched=False),
        lambda: tournament([spec, "random", "random"], 3, 3, workers=1, batched=False),
    ):
        with pytest.warns(UserWarning, match="trained at 2 players only") as caught:
            play()
        assert [w.filename for w in caught] == [__file__]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _shown  # on stderr, as at the command line (pytest records them)
        assert main(["eval", "--agents", f"{spec},random,random", "--games", "4", "--no-progress"]) == 0
    assert err.getvalue() == (
        f"llama-rl: warning: agent {spec!r} was trained at 2 players only; it plays this 3-player table "
        "as a table size it never saw\n"
    )


def test_export_names_the_table_sizes(tmp_path):
    run = run_dir(tmp_path / "run", [4, 6])
    save_actor(small_actor(), run / "model.npz")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["export", str(run), "--out", str(tmp_path / "x.npz")])
    assert code == 0, out.getvalue()
    assert "trained at 4/6 players" in out.getvalue()
    assert load_actor(tmp_path / "x.npz").table_sizes == (4, 6)  # kept once out of the run


def test_two_models_sharing_a_label_are_named_apart_and_each_built_once(tmp_path, monkeypatch):
    """Two PPOAgent objects (trained at 2 and at 6) at a 4-player table gave one warning,
    'ppo', deduplicated by label; and every seat was built before the label was checked."""
    save_actor(small_actor([2]), tmp_path / "two.npz")
    save_actor(small_actor([6]), tmp_path / "six.npz")
    two, six = PPOAgent(path=str(tmp_path / "two.npz")), PPOAgent(path=str(tmp_path / "six.npz"))
    assert unmade_for([two, six, "random", "random"], 4) == [
        "agent 'ppo#1' was trained at 2 players only; it plays this 4-player table as a table size it never saw",
        "agent 'ppo#2' was trained at 6 players only; it plays this 4-player table as a table size it never saw",
    ]
    import llama_env.agent as registry

    built = []
    real = registry.resolve
    monkeypatch.setattr(registry, "resolve", lambda agent, seed=None: built.append(agent) or real(agent, seed))
    unmade_for(["heuristic"] * 4, 4)
    assert built == ["heuristic"]  # one build for a name given four times


def test_evaluation_builds_each_seat_once_and_warns_before_any_game(agent_registry):
    """Played in this process, evaluation built every agent twice (a search loads its
    networks): once to ask what it warns of, once to play. It is built once, warned of
    once, and silent as it plays."""
    from llama_env.agent import register

    built: list[object] = []

    class Forewarning:
        def __init__(self) -> None:
            self.said = False
            built.append(self)

        def forewarn(self, rules):
            if self.said:
                return None
            self.said = True
            return UserWarning(f"said of a {rules.num_players}-player table")

        def reset(self, seed=None):
            pass

        def act(self, observation, action_mask):
            if not self.said:
                warnings.warn("said in the middle of a game", UserWarning, stacklevel=1)
            return int(np.flatnonzero(action_mask)[0])

    register("forewarning")(Forewarning)
    for play, seats in (
        (lambda: evaluate(["forewarning", "random", "forewarning"], 2, workers=1, batched=False), 2),
        (lambda: tournament(["forewarning", "random", "random"], 3, 2, workers=1, batched=False), 1),
    ):
        built.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            play()
        assert [str(w.message) for w in caught] == ["said of a 3-player table"]
        assert len(built) == seats  # one for each seat it takes, no more


def test_the_comparison_after_training_says_nothing_of_the_sizes_it_chose(tmp_path):
    from train.evaluation.report import compare_agents

    save_actor(small_actor([2]), tmp_path / "m.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the table compares at 2 and 4 whatever the run trained at
        rows = compare_agents({"new": PPOAgent(path=str(tmp_path / "m.npz"))}, games=4, workers=1)
    assert [r.players for r in rows] == [2, 2, 4, 4]


def test_make_builds_a_spec_with_more_keywords():
    made = agents.make("cautious:threshold=2", seed=1)
    assert (made.threshold, made.seed, made.name) == (2, 1, "cautious:threshold=2")


def test_a_runs_older_forms_a_linked_model_and_stray_files_are_read(tmp_path):
    """Older runs wrote players as text ("2-4") or one size, a model linked into a run
    was read from the link's target, and a stray config.resume_notes.json made the
    whole run say nothing."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"players": "2-4"}))
    (run / "config.resume_1.json").write_text(json.dumps({"players": 6}))
    (run / "config.resume_notes.json").write_text("my notes, not a config")
    save_actor(small_actor(), tmp_path / "elsewhere.npz")
    (run / "model.npz").symlink_to(tmp_path / "elsewhere.npz")
    assert load_actor(run / "model.npz").table_sizes == (2, 3, 4, 6)
    assert load_actor(run).table_sizes == (2, 3, 4, 6)
    assert load_actor(tmp_path / "elsewhere.npz").table_sizes is None  # the target is in no run


def test_a_checkpoint_is_credited_with_the_sessions_that_had_started_before_it(tmp_path):
    """A run trained heads-up, then resumed at 4 players and again at 6: its first
    checkpoints were credited with 4 and 6 players too, and evaluating one at 4 players
    warned of nothing. The run's own record of its sessions (written here as the
    trainers write it) says which sessions had begun by a checkpoint's step."""
    from train.training.run_dir import RunDir

    run = run_dir(tmp_path / "run", [2], [4], [6])
    record = RunDir(run)
    record.append_session(0, 1000, "config.json", None, False)
    record.append_session(1000, 3000, "config.resume_1.json", run / "checkpoints" / "ppo_1000.zip", False)
    # the third session is running (or was killed): it has no line yet
    checkpoints = run / "checkpoints"
    assert run_table_sizes(checkpoints / "ppo_500.zip") == (2,)
    assert run_table_sizes(checkpoints / "ppo_1000.zip") == (2,)  # the second session resumed from it
    assert run_table_sizes(checkpoints / "ppo_2000.zip") == (2, 4)
    assert run_table_sizes(checkpoints / "rllib_2000" / RLLIB_MODULE_STATE) == (2, 4)
    assert run_table_sizes(checkpoints / "ppo_3500.zip") == (2, 4, 6)  # the third session's
    assert run_table_sizes(run / "model.zip") == (2, 4, 6)  # the run's model: every session
    (run / "sessions.jsonl").write_text("not json\n")  # a record it cannot read: every session, as before
    assert run_table_sizes(checkpoints / "ppo_500.zip") == (2, 4, 6)


def test_play_and_watch_warn_before_the_game_as_eval_does(tmp_path, monkeypatch):
    """``llama-rl play`` and ``watch`` seated a model trained heads-up at a 3-player table
    without a word (eval warned), and a ``search:worlds=16``, which does not search there,
    warned from inside the agent at its first move, in the middle of the game. Each is
    said once, before the game's first line."""
    save_actor(small_actor([2]), tmp_path / "m.npz")
    spec = f"ppo:path={tmp_path / 'm.npz'}"
    unseen = f"llama-rl: warning: agent {spec!r} was trained at 2 players only; it plays this 3-player table"
    search = "llama-rl: warning: SearchAgent(worlds=16) does not search at a 3-player table"
    for argv, said in [
        (["play", "--opponents", spec], unseen),
        (["watch", "--agents", f"{spec},random,random", "--delay", "0"], unseen),
        (["play", "--opponents", "search:worlds=16", "--seat", "2"], search),
        (["watch", "--agents", "search:worlds=16,random,random", "--delay", "0"], search),
    ]:
        monkeypatch.setattr("sys.stdin", io.StringIO("exit\n"))
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = _shown  # on stderr, as at the command line (pytest records them)
            main([*argv, "--seed", "1"])
        lines = out.getvalue().splitlines()
        assert lines[0].startswith(said), argv
        assert lines[1].startswith("L.L.A.M.A. with 3 players"), argv
        assert sum("warning" in line for line in lines) == 1, argv
    with pytest.warns(UserWarning, match="trained at 2 players only") as caught:  # from Python: the caller's line
        terminal.play(terminal.PlayConfig(opponents=spec), io.StringIO("exit\n"), io.StringIO())
    assert [w.filename for w in caught] == [__file__]


def _shown(message, category, filename, lineno, file=None, line=None):
    """Python's own ``warnings.showwarning``: the warning on stderr, as ``formatwarning`` words it."""
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
