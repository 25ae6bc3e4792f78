"""The one place that knows PettingZoo's internals: the fast wrapper chain of :func:`llama_env.env`.

Why it exists: the loop PettingZoo documents (``agent_iter()``, ``last()``, pick from the
mask, ``step()``) crosses three wrappers per call in a plain ``env()``, and PettingZoo's
wrappers reach every attribute of the wrapped env through a chain of ``__getattr__``
calls, which cost more than the game itself. :func:`wrap` builds PettingZoo's three
standard classic wrappers (:func:`standard_wrap`) with the same behaviour, but

* every wrapper reads and writes the attributes used at every decision (``_HOT``) on the
  raw env directly, through properties declared on its class (:func:`_forwarding`);
* the outer wrapper answers the per-decision calls (``agent_iter``, ``last``, ``step`` of a
  legal action, ``reset``, ``action_space``) straight from the raw env and leaves the
  wrappers' private flags as PettingZoo's own calls would leave them; everything else,
  every illegal or odd action included, goes through the wrapper chain.

That second point writes PettingZoo's private fields, so it holds only as long as
PettingZoo keeps them. Checked against **pettingzoo 1.27** (``pyproject.toml`` pins the
minor version); :func:`broken_assumptions` checks every assumption below and
``tests/api/test_third_party.py`` fails, naming the PettingZoo version and the assumption,
when an upgrade breaks one:

1. the three wrapper classes and ``BaseWrapper`` override exactly the methods listed in
   ``_WRAPPER_METHODS`` (a new override would be skipped by the fast paths);
2. ``BaseWrapper.__getattr__`` hands every public attribute (and ``_cumulative_rewards``)
   to the wrapped env, so the raw env's attributes are the chain's;
3. ``OrderEnforcingWrapper`` keeps its order checks in ``_has_reset`` (set by ``reset``,
   and here by a game set on the raw env) and ``_has_updated`` (set by ``step`` and
   ``reset``, cleared by each agent of ``agent_iter``);
4. ``TerminateIllegalWrapper`` keeps the observation its mask check reads in
   ``_prev_obs``/``_prev_info`` (both ``None`` after ``reset`` and ``step``), whether an
   illegal move ended the game in ``_terminated`` (``False`` after ``reset``), and pays
   the offender ``_illegal_value``, read in ``step``: the fast chain sets it to the env's
   own penalty (:meth:`llama_env.aec_env.LlamaAECEnv.illegal_action_reward`, which
   depends on what the agent was paid) before each step it hands PettingZoo's wrapper,
   and gives the wrapper NaN to start with, so a wrapper that kept its number elsewhere
   pays NaN and fails 6;
5. ``AECEnv`` has the env author's helper ``_was_dead_step`` and ``last()`` reports
   ``_cumulative_rewards[agent]`` (PettingZoo's documented contract for env authors, which
   :class:`llama_env.aec_env.LlamaAECEnv` also relies on);
6. and, as a whole, the fast chain plays a scripted game (legal moves, the dead agents'
   steps, an illegal move, calls before ``reset``) exactly as PettingZoo's chain does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

from llama_env.engine import NUM_ACTIONS, action_index

__all__ = ["CHECKED_VERSION", "wrap", "standard_wrap", "broken_assumptions"]

CHECKED_VERSION = "1.27"
"""The PettingZoo minor version the assumptions were checked against."""

# the attributes read at every decision: each wrapper forwards them to the raw env
_HOT = ("agent_selection", "agents", "rewards", "terminations", "truncations", "infos", "_cumulative_rewards")

# assumption 1: the methods each PettingZoo class defines itself, in the checked version
_WRAPPER_METHODS: dict[type, frozenset[str]] = {
    wrappers.BaseWrapper: frozenset(
        {
            "__init__",
            "__getattr__",
            "unwrapped",
            "close",
            "render",
            "reset",
            "observe",
            "state",
            "step",
            "observation_space",
            "action_space",
            "__str__",
        }
    ),
    wrappers.OrderEnforcingWrapper: frozenset(
        {"__init__", "__getattr__", "render", "step", "observe", "state", "agent_iter", "reset", "__str__"}
    ),
    wrappers.TerminateIllegalWrapper: frozenset({"__init__", "reset", "observe", "step", "__str__"}),
    wrappers.AssertOutOfBoundsWrapper: frozenset({"__init__", "step", "__str__"}),
}


def wrap(raw: AECEnv) -> AECEnv:
    """``raw`` in PettingZoo's three classic wrappers, with the fast paths of this module;
    an illegal move pays the offender ``raw.illegal_action_reward(agent)``.

    ``raw`` is a :class:`llama_env.aec_env.LlamaAECEnv` (it provides ``step_legal`` and
    ``illegal_action_reward``)."""
    return _FastOrderEnforcing(_FastAssertOutOfBounds(_FastTerminateIllegal(raw)))


def standard_wrap(raw: AECEnv, illegal_reward: float) -> AECEnv:
    """``raw`` in PettingZoo's own three classic wrappers, as they are, an illegal move
    paying ``illegal_reward``: what :func:`wrap` must behave exactly like where its penalty
    is that number (in ``"game"`` mode, -1)."""
    return wrappers.OrderEnforcingWrapper(
        wrappers.AssertOutOfBoundsWrapper(wrappers.TerminateIllegalWrapper(raw, illegal_reward))
    )


def _forward(name: str, guarded: bool) -> property:
    def get(self: Any) -> Any:
        if guarded and not self._has_reset:
            # the error OrderEnforcingWrapper.__getattr__ raises
            raise AttributeError(f"{name} cannot be accessed before reset")
        return getattr(self._raw, name)

    def set_(self: Any, value: Any) -> None:
        setattr(self._raw, name, value)

    return property(get, set_)


def _forwarding(guarded: bool) -> Callable[[type], type]:
    """A class decorator: the class reads and writes the ``_HOT`` attributes on ``self._raw``
    (``guarded``: before ``reset`` they raise as in ``OrderEnforcingWrapper``, all but
    ``_cumulative_rewards``, which PettingZoo's ``__getattr__`` does not guard)."""

    def decorate(cls: type) -> type:
        for name in _HOT:
            setattr(cls, name, _forward(name, guarded and name != "_cumulative_rewards"))
        return cls

    return decorate


@_forwarding(guarded=False)
class _FastTerminateIllegal(wrappers.TerminateIllegalWrapper):
    def __init__(self, env: AECEnv) -> None:
        self._raw = env
        super().__init__(env, float("nan"))  # never paid: step sets the env's penalty first

    def step(self, action: Any) -> None:
        # PettingZoo's wrapper pays one fixed number; the env's penalty depends on what the
        # selected agent was paid so far (assumption 4). Only the slow path comes here.
        raw = self._raw
        if raw.agents:
            self._illegal_value = raw.illegal_action_reward(raw.agent_selection)
        super().step(action)


@_forwarding(guarded=False)
class _FastAssertOutOfBounds(wrappers.AssertOutOfBoundsWrapper):
    def __init__(self, env: _FastTerminateIllegal) -> None:
        self._raw = env._raw
        super().__init__(env)

    def step(self, action: Any) -> None:
        # PettingZoo's check asks the space whether it contains the action, which answers
        # a bool with numpy's "truth value of an array" error; the engine's one rule
        # (llama_env.engine.action_index) decides what an action is here.
        raw = self._raw
        agent = raw.agent_selection
        dead = raw.terminations[agent] or raw.truncations[agent]
        if not (action is None and dead):
            a = action_index(action)
            if a is None or not 0 <= a < NUM_ACTIONS:
                raise AssertionError(
                    f"action {action!r} ({type(action).__name__}) is not in the action space Discrete({NUM_ACTIONS}): "
                    f"an action is an integer 0..{NUM_ACTIONS - 1}"
                    + ("; a dead agent's action is None" if dead else "")
                )
        self.env.step(action)


@_forwarding(guarded=True)
class _FastOrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` over the other two, with fast paths.

    A fast path is taken only where the wrapper chain would do exactly the same:
    ``step`` of a legal action by a live agent after ``reset`` (the chain would check it
    is in bounds and legal, then step the raw env), ``last`` after ``reset`` (the chain
    observes the raw env), ``reset`` (the chain sets its flags and resets the raw env),
    and ``agent_iter`` (the same order checks as PettingZoo's iterator). Everything else
    goes through the chain.
    """

    def __init__(self, env: _FastAssertOutOfBounds) -> None:
        self._raw: Any = env._raw
        self._illegal: _FastTerminateIllegal = env.env
        super().__init__(env)
        self._raw.on_begin = self._begun  # a game set on the raw env (env.unwrapped.game = g)

    def _begun(self) -> None:
        """The raw env began a game (``reset``, or a game set on it): the chain's flags as
        ``reset`` leaves them. A game set before any ``reset`` is then played as on the
        raw env (the order checks refused every call and ``reset`` dealt it away); the old
        game's observation must not judge the new game's moves, nor an illegal move of the
        old one keep the slow path."""
        self._has_reset = True
        self._has_updated = True
        illegal = self._illegal
        illegal._terminated = False
        illegal._prev_obs = None
        illegal._prev_info = None

    def step(self, action: Any) -> None:
        raw = self._raw
        illegal = self._illegal
        if self._has_reset and raw.agents and not illegal._terminated:  # else the chain warns or ends the game
            agent = raw.agent_selection
            if raw.terminations[agent] or raw.truncations[agent]:
                if action is None:  # the dead agent's step at the end of a game
                    raw._was_dead_step(None)
                    self._has_updated = True
                    illegal._prev_obs = illegal._prev_info = None
                    return
            else:
                a = action if type(action) is int else action_index(action)
                # an illegal move leaves the game untouched: the chain ends the game with
                # the penalty, as PettingZoo's wrapper does
                if a is not None and 0 <= a < NUM_ACTIONS and raw.step_legal(agent, a):
                    # what the chain's step leaves in the wrappers
                    self._has_updated = True
                    illegal._prev_obs = illegal._prev_info = None
                    return
        super().step(action)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        # what the chain's reset does (PettingZoo's OrderEnforcingWrapper and
        # TerminateIllegalWrapper set their flags; AssertOutOfBoundsWrapper has no reset)
        self._has_reset = True
        self._has_updated = True
        illegal = self._illegal
        illegal._terminated = False
        illegal._prev_obs = None
        illegal._prev_info = None
        self._raw.reset(seed=seed, options=options)

    def action_space(self, agent: str) -> spaces.Space:
        return self._raw.action_space(agent)

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        raw = self._raw
        if not raw.agents:  # every agent stepped out: the raw env says so
            return raw.last(observe)
        agent = raw.agent_selection
        return (
            raw.observe(agent) if observe else None,
            raw._cumulative_rewards[agent],
            raw.terminations[agent],
            raw.truncations[agent],
            raw.infos[agent],
        )

    def agent_iter(self, max_iter: int = 2**63) -> Iterator[str]:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return self._agents(max_iter)

    def _agents(self, max_iter: int) -> Iterator[str]:
        raw = self._raw
        while raw.agents and max_iter > 0:
            max_iter -= 1
            if not self._has_updated:
                raise AssertionError("need to call step() or reset() in a loop over `agent_iter`")
            self._has_updated = False
            yield raw.agent_selection


# --------------------------------------------------------------------------- the checks


def broken_assumptions(make_raw: Callable[[], AECEnv]) -> list[str]:
    """Each assumption of this module (see its docstring) that the installed PettingZoo
    breaks, in words; empty when all hold. ``make_raw()`` makes a raw Llama env."""
    problems: list[str] = []
    for cls, expected in _WRAPPER_METHODS.items():
        own = {name for name, value in vars(cls).items() if callable(value) or isinstance(value, property)}
        own -= {"__class_getitem__", "__init_subclass__"}
        if own != expected:
            added, gone = sorted(own - expected), sorted(expected - own)
            problems.append(
                f"1: {cls.__name__} now defines {added} and no longer {gone}: the fast paths may skip or redo them"
            )
    for name in ("_was_dead_step", "last"):
        if not callable(getattr(AECEnv, name, None)):
            problems.append(f"5: AECEnv has no method {name}")
    for numbers, check in (("2-5", _flags_as_assumed), ("6", _same_play)):
        if problems:  # the later checks would fail for reasons already named
            break
        try:
            problems += check(make_raw)
        except Exception as e:  # a field gone, say: name the assumptions, not a traceback
            problems.append(f"{numbers}: checking them raised {e!r}")
    return problems


def _flags_as_assumed(make_raw: Callable[[], AECEnv]) -> list[str]:
    """Assumptions 2 to 5 on PettingZoo's own chain."""
    problems: list[str] = []
    chain = standard_wrap(make_raw(), -1.0)
    order, illegal = chain, chain.env.env
    if getattr(order, "_has_reset", None) is not False or getattr(order, "_has_updated", None) is not False:
        problems.append("3: a new OrderEnforcingWrapper has no _has_reset = _has_updated = False")
    chain.reset(seed=0)
    if (order._has_reset, order._has_updated) != (True, True):
        problems.append("3: OrderEnforcingWrapper.reset does not set _has_reset and _has_updated")
    if (illegal._terminated, illegal._prev_obs, illegal._prev_info) != (False, None, None):
        problems.append("4: TerminateIllegalWrapper.reset does not set _terminated, _prev_obs, _prev_info as assumed")
    if getattr(illegal, "_illegal_value", None) != -1.0:
        problems.append("4: TerminateIllegalWrapper does not keep the reward of an illegal move in _illegal_value")
    raw = chain.unwrapped
    if chain.agent_selection is not raw.agent_selection or chain._cumulative_rewards is not raw._cumulative_rewards:
        problems.append("2: BaseWrapper.__getattr__ does not hand agent_selection and _cumulative_rewards to the env")
    agent = next(iter(chain.agent_iter()))
    if order._has_updated is not False:
        problems.append("3: agent_iter does not clear OrderEnforcingWrapper._has_updated")
    raw._cumulative_rewards[agent] = 0.25
    if chain.last()[1] != 0.25:
        problems.append("5: last() does not report _cumulative_rewards[agent]")
    raw._cumulative_rewards[agent] = 0.0
    obs = chain.last()[0]
    if illegal._prev_obs is None:
        problems.append("4: TerminateIllegalWrapper.observe does not keep the acting agent's observation in _prev_obs")
    legal = int(obs["action_mask"].argmax())
    chain.step(legal)
    if order._has_updated is not True or (illegal._prev_obs, illegal._prev_info) != (None, None):
        problems.append("3/4: step does not set _has_updated and clear _prev_obs, _prev_info as assumed")
    return problems


def _same_play(make_raw: Callable[[], AECEnv]) -> list[str]:
    """Assumption 6: the fast chain and PettingZoo's play the same script alike."""

    def trace(env: AECEnv) -> list[Any]:
        out: list[Any] = []

        def call(what: str, f: Callable[[], Any], same_error: bool = True) -> Any:
            try:
                value = f()
            except Exception as e:  # the same error, not just some error
                out.append((what, "raises", type(e).__name__ if same_error else "an error"))
                return None
            out.append((what, _plain(value)))
            return value

        # the one difference, on purpose: the fast last() says "reset() needs to be called
        # before observe" (EnvLogger's AssertionError), PettingZoo's chain fails to read
        # agent_selection (AttributeError)
        call("last before reset", lambda: env.last(), same_error=False)
        call("agents before reset", lambda: env.agents)
        call("_cumulative_rewards before reset", lambda: env._cumulative_rewards)
        for seed, illegal_at in ((1, None), (2, 5)):
            call("reset", partial(env.reset, seed=seed))
            rng = np.random.default_rng(seed)
            for k, agent in enumerate(env.agent_iter(500)):
                obs, *_ = call(agent, lambda: env.last())
                if env.terminations[agent] or env.truncations[agent]:
                    action = None
                elif k == illegal_at:
                    action = int(np.flatnonzero(obs["action_mask"] == 0)[0])
                else:
                    action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
                call(f"step {action}", partial(env.step, action))
                call("flags", lambda: _flags(env))  # (after last(), only PettingZoo's keeps _prev_obs)
            call("step after the end", lambda: env.step(None))
            call("flags", lambda: _flags(env))
        call("out of bounds", lambda: (env.reset(seed=3), env.step(NUM_ACTIONS)))
        return out

    # (in "game" mode, make_raw's default, the fast chain's penalty is -1 throughout)
    fast, standard = trace(wrap(make_raw())), trace(standard_wrap(make_raw(), -1.0))
    for i, (a, b) in enumerate(zip(fast, standard, strict=False)):
        if a != b:
            return [f"6: the fast chain and PettingZoo's differ at call {i}: {a!r} != {b!r}"]
    if len(fast) != len(standard):
        return [f"6: the fast chain made {len(fast)} calls and PettingZoo's {len(standard)}"]
    return []


def _flags(env: AECEnv) -> tuple[Any, ...]:
    illegal = env.env.env
    return (env._has_updated, illegal._terminated, illegal._prev_obs is None, illegal._prev_info is None)


def _plain(value: Any) -> Any:
    """``value`` with arrays as lists, so that two traces compare with ``==``."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if type(value) in (tuple, list):
        return [_plain(v) for v in value]
    return value
