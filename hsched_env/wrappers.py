"""Action masks in the observation, for libraries that read them there (RLlib, TorchRL).

The HeteroSched environments give their mask through ``env.action_masks()`` (sb3-contrib's
convention). RLlib's and TorchRL's masking read it from the observation instead, under the key
``"action_mask"``. These wrappers put it there (``docs/environments.md``, "Masking for RLlib
and TorchRL"):

* :class:`ActionMaskObservation` adds ``"action_mask"`` to the ``Dict`` observation, next to
  the environment's own keys (TorchRL: ``GymEnv`` + the ``ActionMask`` transform).
* :class:`FlatActionMaskObservation` makes the observation ``{"action_mask": ...,
  "observations": <every other key, flattened into one float32 vector>}`` (RLlib's
  action-masking convention, no custom encoder needed).
* :class:`MultiBinaryAsMultiDiscrete` shows ``MultiBinary(K)`` keep bits (``hsched/Rank-v0``)
  as ``MultiDiscrete([2] * K)``: RLlib has no ``MultiBinary`` action distribution and TorchRL's
  ``ActionMask`` transform accepts only categorical action specs.
* :func:`wrap_masked` applies them to an environment, :func:`make_masked` to any registered
  id, in any process (it is an RLlib ``register_env`` creator and a Gymnasium entry point as
  it is).

The mask, per action space (``True``/1 = allowed):

* ``Discrete(K + 1)`` (``hsched/Schedule-*``): (K + 1,) in both wrappers, commit (index K)
  included;
* ``MultiBinary(K)`` or ``MultiDiscrete([2] * K)`` (``hsched/Rank-*``): (K, 2) in
  ``ActionMaskObservation``, (2K,) in ``FlatActionMaskObservation``; per slot [drop, keep].

The Schedule mask is ``env.action_masks()``, commit (index K) included. The Rank mask is
``env.action_masks()`` (sb3-contrib's (2K,) per-slot [drop, keep]) as a (K, 2) matrix: the
shape of TorchRL's mask for ``MultiDiscrete([2] * K)`` (K stacked two-way categoricals); the
flat wrapper keeps (2K,), the layout of RLlib's concatenated ``MultiCategorical`` logits.
When the episode has ended the environments report no valid action (all ``False``); the
wrappers then allow commit (Schedule) — only drop is allowed per slot in Rank already — so
that every mask leaves an action to a masked distribution (an all-``False`` mask makes NaN
probabilities). No action is ever taken from that observation.

This module imports only gymnasium and numpy; importing it imports ``hsched_env`` first, which
registers the ids (what an RLlib or multiprocessing worker that unpickles ``make_masked``
needs).
"""

from __future__ import annotations

from collections.abc import Mapping

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hsched_env.errors import ConfigError, check_switch, show

#: The observation key of the mask (RLlib's and TorchRL's default).
MASK_KEY = "action_mask"
#: The key of the flattened observation in :class:`FlatActionMaskObservation` (RLlib's).
OBSERVATIONS_KEY = "observations"


def _choices(action_space: gym.Space) -> tuple[int, int] | None:
    """(slots, choices per slot) of a factored binary/categorical space; None for Discrete."""
    if isinstance(action_space, spaces.Discrete):
        return None
    if isinstance(action_space, spaces.MultiBinary) and np.ndim(action_space.n) == 0:
        return int(action_space.n), 2
    if isinstance(action_space, spaces.MultiDiscrete) and action_space.nvec.ndim == 1:
        nvec = np.asarray(action_space.nvec)
        if nvec.size and (nvec == nvec[0]).all() and not np.any(getattr(action_space,
                                                                          "start", 0)):
            return int(nvec.size), int(nvec[0])
    raise ValueError(f"no action-mask layout for the action space {action_space}: "
                     f"Discrete, 1-D MultiBinary or MultiDiscrete with equal choices")


def mask_shape(action_space: gym.Space, *, flat: bool = False) -> tuple[int, ...]:
    """The shape of ``"action_mask"`` for ``action_space`` (see the module docstring)."""
    factored = _choices(action_space)
    if factored is None:
        return (int(action_space.n),)
    slots, n = factored
    return (slots * n,) if flat else (slots, n)


def mask_dtype(dtype) -> np.dtype:
    """``dtype`` as a mask's NumPy dtype (bool, integer or float), or a ``ConfigError``."""
    try:
        out = np.dtype(dtype)
    except Exception:               # noqa: BLE001 (TypeError, SyntaxError, ValueError: numpy's)
        out = None
    if out is None or out.kind not in "biuf":
        raise ConfigError(f"the mask dtype must be bool, integer or float, got {dtype!r}",
                          field="dtype")
    return out


class _MaskMixin:
    """The mask of the wrapped environment's current state, in the observation's shape."""

    env: gym.Env

    def _setup_mask(self, dtype, flat: bool) -> None:
        self._mask_dtype = mask_dtype(dtype)
        if not self.env.has_wrapper_attr("action_masks"):
            raise TypeError(f"{self.env} has no action_masks() to read the mask from")
        self._mask_shape = mask_shape(self.env.action_space, flat=flat)
        self._discrete = isinstance(self.env.action_space, spaces.Discrete)
        self._per_slot = None if self._discrete else _choices(self.env.action_space)[1]
        self.mask_space = spaces.Box(0, 1, self._mask_shape, dtype=self._mask_dtype)

    def current_mask(self) -> np.ndarray:
        """The current action mask as the observation carries it (a new array)."""
        mask = np.asarray(self.env.get_wrapper_attr("action_masks")(), dtype=bool)
        mask = mask.reshape(self._mask_shape).copy()
        if self._discrete:
            if not mask.any():
                mask[-1] = True                   # episode over: commit (the no-op)
        else:
            rows = mask.reshape(-1, self._per_slot)  # a view of ``mask``
            rows[~rows.any(axis=1), 0] = True     # a slot with nothing allowed: drop
        return mask.astype(self._mask_dtype)


class ActionMaskObservation(_MaskMixin, gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Adds ``"action_mask"`` (``Box(0, 1, mask_shape(env.action_space), dtype)``) to the
    ``Dict`` observation; the other keys are unchanged.

    ``dtype`` defaults to ``int8`` (0/1): TorchRL's ``ActionMask`` transform turns it into a
    bool mask, and it is the ``int8`` 0/1 mask of PettingZoo and RLlib's old API stack; use
    ``"bool"`` or ``"float32"`` where a library wants those.
    """

    def __init__(self, env: gym.Env, dtype="int8") -> None:
        gym.utils.RecordConstructorArgs.__init__(self, dtype=mask_dtype(dtype).name)
        gym.ObservationWrapper.__init__(self, env)
        if not isinstance(env.observation_space, spaces.Dict):
            raise TypeError(f"ActionMaskObservation needs a Dict observation space, got "
                            f"{env.observation_space}")
        if MASK_KEY in env.observation_space.spaces:
            raise ValueError(f"the observation already has a {MASK_KEY!r} key")
        self._setup_mask(dtype, flat=False)
        self.observation_space = spaces.Dict({**env.observation_space.spaces,
                                              MASK_KEY: self.mask_space})

    def observation(self, observation: dict) -> dict:
        return {**observation, MASK_KEY: self.current_mask()}


class FlatActionMaskObservation(_MaskMixin, gym.ObservationWrapper,
                                gym.utils.RecordConstructorArgs):
    """The observation ``{"action_mask": Box(0, 1, mask, dtype), "observations":
    Box(float32)}``: RLlib's action-masking convention, with every key of the environment's
    ``Dict`` observation flattened into ``"observations"`` (``gymnasium.spaces.flatten``, in
    the space's key order: ``candidates``, ``cluster``, ``global``, ``valid`` for the
    HeteroSched environments), so a plain MLP reads it without a custom encoder.

    ``observation_slices`` maps each original key to its slice of ``"observations"`` (and
    ``observation_shapes`` to its shape), for a model that wants the candidate matrix back:
    ``obs["observations"][..., s["candidates"]].reshape(-1, K, F)``. ``dtype`` (float32 by
    default, the mask dtype RLlib's examples use) is the mask's.
    """

    def __init__(self, env: gym.Env, dtype="float32") -> None:
        gym.utils.RecordConstructorArgs.__init__(self, dtype=mask_dtype(dtype).name)
        gym.ObservationWrapper.__init__(self, env)
        inner = env.observation_space
        if not isinstance(inner, spaces.Dict):
            raise TypeError(f"FlatActionMaskObservation needs a Dict observation space, got "
                            f"{inner}")
        self._setup_mask(dtype, flat=True)
        self._inner = spaces.Dict({k: s for k, s in inner.spaces.items() if k != MASK_KEY})
        flat = spaces.flatten_space(self._inner)
        self._flat_dtype = np.result_type(flat.dtype, np.float32)
        flat = spaces.Box(flat.low.astype(self._flat_dtype), flat.high.astype(self._flat_dtype),
                          dtype=self._flat_dtype)
        self.observation_slices: dict[str, slice] = {}
        self.observation_shapes: dict[str, tuple[int, ...]] = {}
        start = 0
        for key, space in self._inner.spaces.items():
            size = spaces.flatdim(space)
            self.observation_slices[key] = slice(start, start + size)
            self.observation_shapes[key] = tuple(space.shape or ())
            start += size
        self.observation_space = spaces.Dict({MASK_KEY: self.mask_space,
                                              OBSERVATIONS_KEY: flat})

    def observation(self, observation: dict) -> dict:
        rest = {k: observation[k] for k in self._inner.spaces}
        flat = np.asarray(spaces.flatten(self._inner, rest), dtype=self._flat_dtype)
        return {MASK_KEY: self.current_mask(), OBSERVATIONS_KEY: flat}


class MultiBinaryAsMultiDiscrete(gym.ActionWrapper, gym.utils.RecordConstructorArgs):
    """``MultiBinary(K)`` actions as ``MultiDiscrete([2] * K)`` (same bits, int64); the
    environment receives the array as given and checks it itself: a value other than 0 or 1
    (a probability, 2, −1) is its error, not cast to a bit (an ``astype(int8)`` here read
    0.7 as 0, 1.9 as 1 and 257 as 1, session 49)."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ActionWrapper.__init__(self, env)
        space = env.action_space
        if not (isinstance(space, spaces.MultiBinary) and np.ndim(space.n) == 0):
            raise TypeError(f"MultiBinaryAsMultiDiscrete needs a 1-D MultiBinary action "
                            f"space, got {space}")
        self.action_space = spaces.MultiDiscrete(np.full(int(space.n), 2, dtype=np.int64),
                                                 seed=None)

    def action(self, action) -> np.ndarray:
        return np.asarray(action)


def wrap_masked(env: gym.Env, *, flat: bool = False, multidiscrete: bool = True,
                mask_dtype=None) -> gym.Env:
    """``env`` with its action mask in the observation: :class:`ActionMaskObservation`
    (``flat=False``, int8 mask) or :class:`FlatActionMaskObservation` (``flat=True``, float32
    mask, RLlib), after :class:`MultiBinaryAsMultiDiscrete` when ``multidiscrete`` and the
    action space is ``MultiBinary`` (``hsched/Rank-*``). ``mask_dtype`` overrides the mask's
    dtype."""
    if not isinstance(env, gym.Env):
        raise ConfigError(f"expected a Gymnasium environment (gymnasium.make(...)), got "
                          f"{show(env)}", field="env")
    check_switch(flat, "flat")
    check_switch(multidiscrete, "multidiscrete")
    if multidiscrete and isinstance(env.action_space, spaces.MultiBinary):
        env = MultiBinaryAsMultiDiscrete(env)
    if flat:
        return FlatActionMaskObservation(env, dtype=mask_dtype or "float32")
    return ActionMaskObservation(env, dtype=mask_dtype or "int8")


def make_masked(env_id=None, *, flat: bool = False, multidiscrete: bool = True,
                mask_dtype=None, **kwargs) -> gym.Env:
    """``wrap_masked(gymnasium.make(env_id, **kwargs), flat=..., multidiscrete=...,
    mask_dtype=...)``: any registered id (``hsched/Schedule-v0``, ``hsched/Rank-Tiny-v0``,
    ...) with the action mask in the observation. ``kwargs`` go to ``gymnasium.make``
    (environment arguments, ``max_episode_steps``, ``disable_env_checker``...).

    ``env_id`` may also be a mapping (an RLlib ``EnvContext``, a Tune or TorchRL config)
    holding ``"env_id"`` and any of the keywords above, so ``register_env("name",
    make_masked)`` works as it is; and it is a Gymnasium entry point:
    ``gymnasium.register("my/Masked-v0", entry_point="hsched_env.wrappers:make_masked",
    kwargs={"env_id": "hsched/Schedule-v0", ...})`` gives a masked id (for TorchRL's
    ``GymEnv``). It lives in ``hsched_env``, so a process that unpickles it has imported
    ``hsched_env`` and the ids are registered there.
    """
    if isinstance(env_id, Mapping):
        config = dict(env_id)
        if "env_id" not in config:
            raise ValueError("make_masked(config): the config needs an 'env_id' entry, e.g. "
                             "{'env_id': 'hsched/Schedule-v0', 'flat': True, ...}")
        env_id = config.pop("env_id")
        flat = config.pop("flat", flat)
        multidiscrete = config.pop("multidiscrete", multidiscrete)
        mask_dtype = config.pop("mask_dtype", mask_dtype)
        kwargs = {**config, **kwargs}
    if not isinstance(env_id, str):
        raise TypeError(f"make_masked needs a registered environment id (str) or a config "
                        f"with 'env_id', got {env_id!r}")
    check_switch(flat, "flat")
    check_switch(multidiscrete, "multidiscrete")
    return wrap_masked(gym.make(env_id, **kwargs), flat=flat, multidiscrete=multidiscrete,
                       mask_dtype=mask_dtype)


__all__ = ["MASK_KEY", "OBSERVATIONS_KEY", "ActionMaskObservation",
           "FlatActionMaskObservation", "MultiBinaryAsMultiDiscrete", "make_masked",
           "mask_shape", "wrap_masked"]
