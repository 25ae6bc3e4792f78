"""`llama-rl agents` leads with the agent to pick: every built-in agent declares its
group where it is registered, and the listing follows the groups' order."""

from __future__ import annotations

import io

import pytest
from conftest import broken_plugin, finding, installed_plugin

from llama_env.agent import GROUPS, grouped, register
from train.cli.agents import list_agents


def test_the_built_in_agents_are_grouped_for_a_user_choosing_one():
    groups = grouped()
    assert list(groups) == [g for g in GROUPS if g in groups]  # in the declared order
    assert list(groups["strongest"]) == ["search"] and list(groups["policy"]) == ["ppo"]
    assert set(groups["baseline"]) == {"random", "greedy", "cautious", "heuristic", "perturbed"}
    assert set(groups["history"]) == {"ppo_v0", "ppo_v1", "ppo_v2", "ppo_v3", "ppo_v4"}
    # its cost is stated, in words: seconds measured on one machine belong to the research log
    assert "many times what it costs ppo" in groups["strongest"]["search"]


def test_the_listing_starts_with_the_strongest_and_names_every_agent():
    out = io.StringIO()
    described = list_agents(out)
    lines = out.getvalue().splitlines()
    assert lines[0] == GROUPS["strongest"] + ":" and lines[1].split()[0] == "search"
    listed = [line.split()[0] for line in lines if line.startswith("  ")]
    assert sorted(listed) == sorted(described)


def test_an_unknown_group_is_refused_before_anything_is_registered():
    with pytest.raises(ValueError, match="group must be one of strongest, policy"):
        register("never_registered", group="favourites")


def test_a_broken_plugin_is_named_and_the_other_agents_still_load(tmp_path):
    """An entry point whose import raised stopped the loader: the built-in agents behind it
    never registered, and every agent name failed from then on with "known agents: none"."""
    import subprocess
    import sys

    env = broken_plugin(tmp_path)
    script = "from llama_env.agent import make, names; make('heuristic'); print(' '.join(names()))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert {"heuristic", "random", "search", "ppo"} <= set(done.stdout.split())
    assert "the agents of entry point 'broken' (brokenplug, group llama_rl.agents) are not loaded" in done.stderr
    assert "ImportError: brokenplug needs torch>=9" in done.stderr


def test_a_plugin_that_fails_half_way_plays_none_of_its_agents_and_llama_rl_says_so_in_one_line(tmp_path):
    """A plugin module that registered an agent and then raised: the warning said its agents
    were not loaded, yet that agent was listed and played; and the installed ``llama-rl``
    printed the warning in Python's form, pointed at its launcher
    (``.../bin/llama-rl:6: RuntimeWarning: ...`` and the launcher's source line)."""
    import subprocess
    import sys

    source = (
        "from llama_env.agent import register\n"
        "@register('half_made')\n"
        "class HalfMade:\n"
        "    def act(self, observation, action_mask):\n"
        "        return 7\n"
        "raise ImportError('halfplug needs libfoo')\n"
    )
    installed_plugin(tmp_path, "halfplug", "half", source)
    env = finding(tmp_path)
    launcher = tmp_path / "llama-rl"  # as pip writes the console script
    launcher.write_text("import sys\nfrom train.launch import run\nif __name__ == '__main__':\n    sys.exit(run())\n")
    warning = (
        "llama-rl: warning: the agents of entry point 'half' (halfplug, group llama_rl.agents) are not loaded: "
        "ImportError: halfplug needs libfoo\n"
    )
    listed = subprocess.run(
        [sys.executable, str(launcher), "agents"], capture_output=True, text=True, env=env, timeout=120
    )
    assert (listed.returncode, listed.stderr) == (0, warning)
    assert "half_made" not in listed.stdout and "heuristic" in listed.stdout
    script = "from llama_env.agent import make, names; print('half_made' in names()); make('half_made')"
    made = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert made.stdout == "False\n" and "ValueError: unknown agent 'half_made'" in made.stderr


def test_a_plugin_that_fails_keeps_the_agents_of_another_plugin_it_imported(tmp_path):
    """A plugin that imported another plugin's module and then failed took that plugin's
    agents with it, without a word: its module stays imported, so its own entry point
    registered nothing again. Only the failing plugin's agents are dropped."""
    import subprocess
    import sys

    half, good = tmp_path / "a", tmp_path / "b"  # half's entry point is found, and loaded, first
    for folder, module, entry, source in (
        (half, "halfplug", "half", "import goodplug\n@register('half_made')\nclass HalfMade:\n"),
        (good, "goodplug", "good", "@register('good_one')\nclass GoodOne:\n"),
    ):
        installed_plugin(
            folder,
            module,
            entry,
            "from llama_env.agent import register\n" + source + "    def act(self, observation, action_mask):\n"
            "        return int(action_mask.nonzero()[0][0])\n",
        )
    with (half / "halfplug.py").open("a") as file:
        file.write("raise ImportError('halfplug needs libfoo')\n")
    script = "from llama_env.agent import make, names; print(sorted({'good_one', 'half_made'} & set(names())))"
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=finding(half, good),
        timeout=120,
    )
    assert done.stdout == "['good_one']\n", done.stderr
    assert "the agents of entry point 'half' (halfplug, group llama_rl.agents) are not loaded" in done.stderr
    assert "'good'" not in done.stderr


def test_a_plugin_reusing_a_built_in_name_is_refused_whatever_loads_first(tmp_path):
    """A plugin imported before ``agents`` took the name "heuristic" first, and then
    ``import agents`` failed; as an entry point listed first, it took the built-in agents
    with it."""
    import subprocess
    import sys

    source = (
        "from llama_env.agent import register\n"
        "@register('heuristic')\n"
        "class Mine:\n"
        "    def act(self, observation, action_mask):\n"
        "        return 7\n"
    )
    installed_plugin(tmp_path, "aaaplug", "aaa", source, package=True)
    env = finding(tmp_path)
    imported_first = (
        "try:\n"
        "    import aaaplug\n"
        "except ValueError as exc:\n"
        "    print('refused:', exc)\n"
        "import agents\n"
        "print(type(agents.make('heuristic')).__module__)\n"
    )
    as_entry_point = "from llama_env.agent import make; print(type(make('heuristic')).__module__)"
    for script in (imported_first, as_entry_point):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().endswith("agents.heuristic"), done.stdout  # the built-in one
        assert "an agent named 'heuristic' is already registered (a built-in agent of llama-rl)" in (
            done.stdout + done.stderr
        )


def test_an_agent_defined_again_replaces_itself_as_a_notebook_cell_run_twice_does():
    from llama_env.agent import _DOCS, _GROUPS, _REGISTRY, make

    def define():
        @register("redefined_test_agent")
        class Redefined:
            def act(self, observation, action_mask):
                return 7

        return Redefined

    first, second = define(), define()
    try:
        assert first is not second and type(make("redefined_test_agent")) is second
        with pytest.raises(ValueError, match="an agent named 'redefined_test_agent' is already registered"):
            register("redefined_test_agent")(type("Other", (), {"act": lambda self, o, m: 7}))
    finally:
        for table in (_REGISTRY, _DOCS, _GROUPS):
            table.pop("redefined_test_agent", None)


def test_registrations_name_the_entries_behind_specs_for_another_process():
    """What a worker process is sent: the entries of the registered names among specs,
    AgentSpec values, or one spec written as text (an env's ``opponents``); objects and
    unknown names are left to the caller's own checks."""
    from llama_env.agent import AgentSpec, registrations

    assert [e[0] for e in registrations("cautious:threshold=2")] == ["cautious"]  # not one per character
    entries = registrations(["heuristic", AgentSpec("random"), "heuristic:seed=3", object(), "nosuch", "x:=:"])
    assert [e[0] for e in entries] == ["heuristic", "random"]
    assert all(callable(factory) for _, factory, _, _ in entries)
