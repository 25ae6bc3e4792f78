"""The commands that make what ships besides the PPO models (train/fit/): the search
agent's networks and the heuristic's tuned parameters. Small runs here; the full ones
reproduce the shipped files (docs/training.md, "Reproduce every shipped agent")."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

import train.fit.heuristic as tuning
from agents.heuristic import HEURISTIC_DEFAULTS
from agents.ppo import SHIPPED, Actor, PPOAgent, load_actor, save_actor
from agents.search import NETWORKS, SearchAgent, load_networks
from llama_env.engine import LlamaGame
from llama_env.observation import ObsView, action_mask, encode_v1
from train.cli import main
from train.fit.distill import DistillConfig, collect_searched, distill, fit_policy
from train.fit.heuristic import START, TuneConfig, format_defaults, tune
from train.fit.search_nets import SearchNetsConfig, collect, fit_search_networks

ROOT = Path(__file__).resolve().parents[2]


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue()


# --------------------------------------------------------------------------- the search agent's networks


@pytest.fixture(scope="module")
def specialist():
    return load_actor(SHIPPED["ppo"][4])


def test_the_data_is_what_the_specialist_saw_and_what_the_others_held(specialist):
    data = collect(specialist, 4, 8, seed=0)
    assert len(data.obs) == len(data.hands) == len(data.win) == len(data.game) > 8 * 20
    for obs, hands in zip(data.obs[::37], data.hands[::37], strict=True):
        assert list(hands.sum(axis=1)) == list(ObsView(obs, 1).opp_hand_size)
    assert set(data.game.tolist()) == set(range(8))
    assert set(np.unique(data.win)) <= {0.0, 1 / 3, 0.5, 1.0}
    again = collect(specialist, 4, 8, seed=0)
    np.testing.assert_array_equal(again.obs, data.obs)  # the deals follow the seed
    assert not np.array_equal(collect(specialist, 4, 8, seed=1).obs[:50], data.obs[:50])


def test_fitted_networks_are_read_by_the_search_agent(tmp_path, monkeypatch):
    out = tmp_path / "search_4p.npz"
    lines: list[str] = []
    result = fit_search_networks(SearchNetsConfig(games=12, hidden=(8,)), out, log=lines.append)
    assert out.is_file() and result.path == out and result.decisions > 100
    assert [len(v) for v in result.held_out_loss.values()] == [2, 3]
    assert lines[-1] == f"networks written to {out}; search with them at 4 players: search:networks_path={out}"
    value, belief = load_networks(out, 4)
    assert [w.shape for w, _ in value] == [(175, 8), (8, 1)]
    monkeypatch.setitem(NETWORKS, 4, out)
    SearchAgent(worlds=2, seed=0)  # loads them


def test_a_fitted_file_is_searched_with_by_name_at_its_table_size(tmp_path):
    """fit-search's help promised a file the search agent reads, but the agent read only
    the shipped files: --out could be used only by writing over agents/models/."""
    from agents.ppo import PPOv3Agent
    from agents.search import networks_table_size
    from llama_env.agent import make
    from llama_env.table import Table

    four = tmp_path / "mine_4p.npz"
    fit_search_networks(SearchNetsConfig(games=6, hidden=(4,)), four, log=lambda line: None)
    agent = SearchAgent(worlds=2, seed=0, networks_path=four)
    assert networks_table_size(four) == 4 and "networks_path=" in repr(agent)
    assert [w.shape for w, _ in agent.networks[4][0]] == [(175, 4), (4, 1)]  # its own, not the shipped ones
    # at 3 players nothing is shipped: with the specialist it was fitted on, it searches there
    # (the shipped 4-player one, saved saying nothing of its table size: its file says 4)
    model = tmp_path / "specialist.npz"
    unsized = load_actor(SHIPPED[PPOv3Agent.name][4])
    unsized.table_sizes = None
    save_actor(unsized, model)
    three = tmp_path / "mine_3p.npz"
    config = SearchNetsConfig(players=3, model=str(model), games=4, hidden=(4,))
    fit_search_networks(config, three, log=lambda line: None)
    with pytest.raises(ValueError, match="networks are for 3 players, where no specialist is shipped"):
        SearchAgent(networks_path=three)
    searcher = SearchAgent(worlds=2, below=1.0, seed=0, path=model, networks_path=three)
    game = LlamaGame(3, rng=5)
    table = Table(game, [searcher, make("heuristic"), make("heuristic")])
    for _ in range(30):
        if game.game_over:
            break
        table.play_turn()
    assert searcher.searched > 0  # it searched at 3 players
    (tmp_path / "policy.npz").write_bytes(model.read_bytes())
    with pytest.raises(
        ValueError, match=r"it holds a PPO policy \(give it as ppo:path=\.\.\., search:path=\.\.\. or --model\)"
    ):
        SearchAgent(networks_path=tmp_path / "policy.npz")


def test_the_same_settings_fit_the_same_networks(tmp_path):
    for name in ("a.npz", "b.npz"):
        fit_search_networks(SearchNetsConfig(games=6, hidden=(4,)), tmp_path / name, log=lambda line: None)
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        assert a.files == b.files
        for key in a.files:
            np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (SearchNetsConfig(players=3), "the search agent has no specialist at 3 players"),
        (SearchNetsConfig(games=0), "games must be >= 1"),
        (SearchNetsConfig(games=1), r"games must be >= 2 \(game 0 is held out"),  # it wrote unfitted networks
        (SearchNetsConfig(held_out=1), r"held_out must be >= 4 at 4 players \(one game in held_out is held out"),
        (SearchNetsConfig(hidden=()), "hidden must be positive layer sizes"),
    ],
)
def test_a_bad_config_is_refused_naming_the_field(config, message):
    with pytest.raises(ValueError, match=message):
        config.validate()


def test_a_version_0_model_is_refused_before_any_game(tmp_path):
    config = SearchNetsConfig(model=str(ROOT / "agents" / "models" / "ppo_llama.zip"))
    with pytest.raises(ValueError, match="reads version-0 observations"):
        fit_search_networks(config, tmp_path / "x.npz")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--out", "x.txt"], "--out must name a .npz file, got 'x.txt'"),
        (["--out", "nowhere/x.npz"], "the folder 'nowhere' does not exist"),
        (["--model", "nowhere.npz", "--out", "x.npz"], "--model 'nowhere.npz': no such file or directory"),
        (["--players", "5", "--out", "x.npz"], "the search agent has no specialist at 5 players"),
        (["--games", "0", "--out", "x.npz"], "the number of games must be between 2 and 1000000000"),
        # refused by the config's check as "games must be >= 2", which named no flag
        (["--games", "1", "--out", "x.npz"], "argument --games: the number of games must be between 2 and 1000000000"),
        (["--seed", str(2**63), "--out", "x.npz"], "the seed must be between 0 and 9223372036854775807"),
    ],
)
def test_fit_search_names_bad_input(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, output = _cli(["fit-search", *argv])
    assert code == 2 and message in output and "Traceback" not in output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["fit-search", "distill"])
def test_an_out_that_is_a_folder_is_refused_before_any_game(command, tmp_path, monkeypatch):
    """It played and fitted for minutes, then failed renaming onto the folder with a traceback."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken.npz").mkdir()
    code, output = _cli([command, "--games", "2", "--out", "taken.npz"])
    assert code == 2 and "--out 'taken.npz' is a folder, not a file" in output and "Traceback" not in output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.npz"]


# --------------------------------------------------------------------------- the search distilled into a policy


@pytest.fixture(scope="module")
def searched_data(specialist):
    search = SearchAgent(worlds=4, below=0.99, seed=0, path=SHIPPED["ppo"][4])  # searching on the specialist
    return collect_searched(search, specialist, 4, 6, seed=0, slots=6), search


def test_the_distill_data_is_what_the_search_saw_and_chose(searched_data, specialist):
    data, search = searched_data
    n = len(data.obs)
    assert n > 6 * 20 and data.obs.shape[1] == 175
    assert (data.masks.sum(axis=1) > 1).all()  # only decisions with a choice
    assert data.masks[np.arange(n), data.move].all()
    np.testing.assert_allclose(data.prior.sum(axis=1), 1.0, rtol=1e-5)
    assert (data.prior[~data.masks] == 0).all()
    assert 0 < int(data.searched.sum()) == search.searched < n
    # where the search did not run, the move is the specialist's own
    kept = ~data.searched
    np.testing.assert_array_equal(data.move[kept], specialist.act_batch(data.obs[kept], data.masks[kept]))
    assert (data.move[data.searched] != data.prior[data.searched].argmax(axis=1)).sum() == search.changed
    assert np.isnan(data.values[kept]).all()
    assert (np.isfinite(data.values[data.searched]) == data.masks[data.searched]).all()
    np.testing.assert_array_equal(np.nanargmax(data.values[data.searched], axis=1), data.move[data.searched])


@pytest.mark.parametrize("temperature", [0.0, 0.005])
def test_the_distilled_policy_learns_the_searched_moves(searched_data, specialist, temperature):
    data, _ = searched_data
    config = DistillConfig(
        epochs=30, batch_size=64, learning_rate=1e-3, searched_weight=20.0, held_out=10**6, temperature=temperature
    )
    actor, agreement, before = fit_policy(data, specialist, config, log=lambda line: None)
    rows = data.searched
    start = (specialist.act_batch(data.obs[rows], data.masks[rows]) == data.move[rows]).mean()
    after = (actor.act_batch(data.obs[rows], data.masks[rows]) == data.move[rows]).mean()
    # far closer to the search than the specialist was (about 0.65 to 0.87-0.89 on the shipped one)
    assert after > start + 0.15 and after > 0.85
    assert len(agreement) == 30  # one per epoch (no searched decision held out: NaN)
    assert [w.shape for w, _ in actor.layers] == [w.shape for w, _ in specialist.layers]


def test_distill_writes_a_model_that_ppo_and_search_play(tmp_path):
    out = tmp_path / "distilled.npz"
    code, output = _cli(
        ["distill", "--players", "2", "--games", "4", "--epochs", "1", "--below", "0.99", "--out", str(out)]
    )
    assert code == 0, output
    assert f"written to {out}" in output
    # --below given, the rest the search's heads-up defaults but mirror, which distil keeps at 0
    assert "96 worlds, below 0.99, horizon 0, mirror 0" in output
    assert load_actor(out).obs_size == 175
    assert load_actor(out).table_sizes == (2,)  # fitted to heads-up searched moves alone
    ppo = PPOAgent(path=str(out))
    search = SearchAgent(worlds=2, below=1.0, seed=0, path=str(out))
    assert search.ppo.specialists[2] is not SearchAgent().ppo.specialists[2]
    game = LlamaGame(2, rng=1)
    obs, mask = encode_v1(game, 0), action_mask(game.legal_actions())
    assert mask[search.act(obs, mask)] and mask[ppo.act(obs, mask)]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (DistillConfig(players=3), r"players must be a table size with search networks \(2, 4, 6\), got 3"),
        (DistillConfig(games=0), "games must be >= 1"),
        (DistillConfig(below=1.5), r"below must be in \(0, 1\]"),
        (DistillConfig(below=0.0), r"at 0 no decision is searched: nothing to distil"),  # it wrote the model unchanged
        (DistillConfig(held_out=3), r"held_out must be >= 4 at 4 players \(one game in held_out is held out"),
        (DistillConfig(temperature=-0.1), "temperature must be >= 0"),
        (DistillConfig(mirror=1.5), r"mirror must be within 0\.\.1, got 1\.5"),
        (DistillConfig(learning_rate=0.0), "learning_rate and searched_weight must be > 0"),
    ],
)
def test_a_bad_distill_config_is_refused_naming_the_field(config, message):
    with pytest.raises(ValueError, match=message):
        config.validate()


def test_distill_refuses_a_version_0_model_before_any_game(tmp_path):
    config = DistillConfig(model=str(ROOT / "agents" / "models" / "ppo_llama.zip"))
    with pytest.raises(ValueError, match="reads version-0 observations"):
        distill(config, tmp_path / "x.npz")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--out", "x.txt"], "--out must name a .npz file, got 'x.txt'"),
        (["--model", "nowhere.npz", "--out", "x.npz"], "--model 'nowhere.npz': no such file or directory"),
        (["--players", "5", "--out", "x.npz"], "players must be a table size with search networks"),
        (["--horizon", "-1", "--out", "x.npz"], "the horizon must be at least 0"),
        (["--worlds", "0", "--out", "x.npz"], "argument --worlds: the worlds must be between 1 and 4096, got 0"),
        (["--below", "1.5", "--out", "x.npz"], "argument --below: below must be above 0.0 and at most 1.0, got 1.5"),
        # refused by the config's check as "below must be in (0, 1]", which named no flag
        (["--below", "0", "--out", "x.npz"], "argument --below: below must be above 0.0 and at most 1.0, got 0"),
        (["--below", "often", "--out", "x.npz"], "below must be a number (digits 0-9), got 'often'"),
        (["--temperature", "-0.1", "--out", "x.npz"], "the temperature must be a finite number of at least 0.0"),
        (["--mirror", "2", "--out", "x.npz"], "argument --mirror: mirror must be between 0.0 and 1.0, got 2"),
        (["--temperature", "inf", "--out", "x.npz"], "the temperature must be a number (digits 0-9), got 'inf'"),
        (["--temperature", "warm", "--out", "x.npz"], "the temperature must be a number (digits 0-9), got 'warm'"),
        # a seed torch cannot take failed after every game was played
        (["--seed", str(2**64), "--out", "x.npz"], "the seed must be between 0 and 9223372036854775807"),
    ],
)
def test_distill_names_bad_input(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, output = _cli(["distill", *argv])
    assert code == 2 and message in output and "Traceback" not in output
    assert list(tmp_path.iterdir()) == []


def test_distill_flags_reach_the_config(monkeypatch):
    import train.cli.distill

    seen: list[DistillConfig] = []
    monkeypatch.setattr(train.cli.distill, "run_distill", lambda config, out, progress: seen.append(config))
    argv = ["distill", "--out", "x.npz", "--players", "2", "--below", "0.8", "--temperature", "0.05", "--epochs", "2"]
    assert _cli([*argv, "--worlds", "24"])[0] == 0
    assert (seen[0].players, seen[0].below, seen[0].temperature, seen[0].epochs) == (2, 0.8, 0.05, 2)
    assert seen[0].worlds == 24  # the search's worlds had no flag: a shipped file made with others could not be
    assert _cli(["distill", "--out", "x.npz"])[0] == 0
    assert seen[1].temperature == DistillConfig().temperature == 0.0
    assert seen[1].worlds is None  # the search agent's, at the table size


# --------------------------------------------------------------------------- the heuristic's parameters


def test_the_printed_form_is_the_one_agents_heuristic_py_holds():
    source = (ROOT / "agents" / "heuristic.py").read_text(encoding="utf-8")
    assert format_defaults(HEURISTIC_DEFAULTS) in source
    namespace: dict[str, object] = {}
    exec(format_defaults(START), namespace)  # it is Python, to paste
    assert namespace["HEURISTIC_DEFAULTS"] == START


def test_the_descent_keeps_the_best_value_and_the_types_of_start(monkeypatch):
    monkeypatch.setattr(tuning, "GRID", {"strand_cost": [2, 16], "danger_hand": [1, 2]})
    lines: list[str] = []
    best = tune(TuneConfig(games=8, passes=1, workers=1), log=lines.append)
    assert set(best) == set(START)
    assert all(type(best[k]) is type(START[k]) for k in START)  # 16 -> 16.0, danger_hand stays an int
    assert {k: v for k, v in best.items() if k not in tuning.GRID} == {
        k: START[k] for k in START if k not in tuning.GRID
    }
    assert lines[0].startswith("start: objective ") and len(lines) == 3


def test_tune_heuristic_validates_its_options():
    with pytest.raises(ValueError, match="start must be 'start' or 'current'"):
        TuneConfig(start="middle").validate()
    code, output = _cli(["tune-heuristic", "--passes", "0"])
    assert code == 2 and "the number of passes must be at least 1" in output


@pytest.mark.parametrize("command", ["fit-search", "distill"])
def test_a_result_that_cannot_be_written_at_the_end_is_saved_aside(command, tmp_path, monkeypatch):
    """A disk that filled while the games were played lost them all at the last write,
    in a traceback. The result is saved to the temporary directory, and the error says
    where."""
    import tempfile

    import llama_env._atomic

    out = tmp_path / "out.npz"
    real = llama_env._atomic.atomic_write

    def full_at_out(path, write):
        if Path(path) == out:
            raise OSError(28, "No space left on device", str(path))
        real(path, write)

    monkeypatch.setattr(llama_env._atomic, "atomic_write", full_at_out)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    argv = [command, "--players", "2", "--games", "4", "--out", str(out)]
    argv += ["--epochs", "1", "--below", "0.99"] if command == "distill" else []
    code, output = _cli(argv)
    (rescued,) = (tmp_path / "tmp").glob("llama-rl-rescue-out-*.npz")  # a new file of its own
    assert code == 1 and f"cannot write {out} (No space left on device)" in output, output
    assert f"were saved to {rescued} instead" in output and "Traceback" not in output
    assert rescued.is_file() and not out.exists()
    if command == "distill":
        assert load_actor(rescued).obs_size == 175
    else:
        load_networks(rescued, 2)


@pytest.mark.parametrize("command", ["fit-search", "distill"])
@pytest.mark.parametrize("refused", ["players", "model"])
def test_a_refused_command_announces_no_replacement(command, refused, tmp_path, monkeypatch):
    """ "x.npz exists; it is replaced" came before the refusal (a table size without
    networks, a model that cannot be read), and nothing was replaced."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.npz").write_bytes(b"old")
    (tmp_path / "junk.npz").write_bytes(b"junk")
    argv = ["--players", "3"] if refused == "players" else ["--model", "junk.npz", "--games", "2"]
    code, output = _cli([command, *argv, "--out", "x.npz"])
    assert code == 2 and "error:" in output and "note:" not in output, output
    assert (tmp_path / "x.npz").read_bytes() == b"old"


def test_a_file_written_over_is_said_once_written(tmp_path, capsys):
    from train.cli.export import run_export

    out = tmp_path / "x.npz"
    out.write_bytes(b"old")
    run_export(str(SHIPPED["ppo"][2]), out)
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"note: the new {out} replaced the file that was there" and lines[0].startswith("wrote ")


def test_a_tiny_temperature_gives_the_searched_move_not_a_policy_of_nans(searched_data, specialist):
    """At 1e-40 (below float32's range) the targets were NaN and so was every weight,
    yet the file was written, replacing the one before."""
    data, _ = searched_data
    config = DistillConfig(epochs=1, batch_size=64, held_out=10**6, temperature=1e-40)
    actor, _, _ = fit_policy(data, specialist, config, log=lambda line: None)
    assert all(np.isfinite(w).all() and np.isfinite(b).all() for w, b in actor.layers)


def test_a_policy_with_nan_weights_is_not_written(tmp_path, specialist):
    out = tmp_path / "p.npz"
    save_actor(specialist, out)
    before = out.read_bytes()
    broken = Actor([(w.copy(), b.copy()) for w, b in specialist.layers], specialist.activation)
    broken.layers[1][0][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"layer 1 holds NaN or infinite weights: .*p.npz is not written"):
        save_actor(broken, out)
    assert out.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["p.npz"]


def test_distill_refuses_to_write_a_policy_no_search_taught(tmp_path, monkeypatch):
    """Below a threshold no decision reaches, nothing is searched: it wrote the
    specialist back, reporting an agreement of nan, as if distilled."""
    monkeypatch.chdir(tmp_path)
    code, output = _cli(["distill", "--players", "2", "--games", "2", "--below", "1e-9", "--out", "x.npz"])
    assert code == 2 and "the search ran at none of the" in output and "nothing to distil" in output
    assert list(tmp_path.iterdir()) == []
