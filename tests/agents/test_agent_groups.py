"""`llama-rl agents` leads with the agent to pick: every built-in agent declares its
group where it is registered, and the listing follows the groups' order."""

from __future__ import annotations

import io
import re

import pytest

from llama_env.agent import GROUPS, grouped, register
from train.cli.agents import list_agents


def test_the_built_in_agents_are_grouped_for_a_user_choosing_one():
    groups = grouped()
    assert list(groups) == [g for g in GROUPS if g in groups]  # in the declared order
    assert list(groups["strongest"]) == ["search"] and list(groups["policy"]) == ["ppo"]
    assert set(groups["baseline"]) == {"random", "greedy", "cautious", "heuristic", "perturbed"}
    assert set(groups["history"]) == {"ppo_v0", "ppo_v1", "ppo_v2", "ppo_v3"}
    assert re.search(r"about \d+\.\d+ s a 4-player game", groups["strongest"]["search"])  # its cost is stated


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
