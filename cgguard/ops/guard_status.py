"""Would the cgguard runtime guard run inside vLLM here, and in which mode?

vLLM loads every entry point of the ``vllm.general_plugins`` group unless the
``VLLM_PLUGINS`` allow-list leaves it out (field notes, section 5). The mode comes
from ``CGGUARD_MODE`` exactly as the plugin will read it.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

from cgguard.shared.modes import MODE_ENV, resolve_mode

PLUGIN_GROUP = "vllm.general_plugins"
PLUGIN_NAME = "cgguard"
ALLOW_LIST_ENV = "VLLM_PLUGINS"


@dataclass(frozen=True)
class GuardStatus:
    plugin_registered: bool
    entry_point: str | None  # "module:function" the plugin entry point names
    allowed_by_vllm_plugins: bool  # False when VLLM_PLUGINS is set and leaves cgguard out
    mode: str
    mode_env: str | None  # the raw CGGUARD_MODE value, None when unset
    mode_problem: str | None

    @property
    def active(self) -> bool:
        return self.plugin_registered and self.allowed_by_vllm_plugins and self.mode != "off"

    def to_json(self) -> dict:
        return {**asdict(self), "active": self.active}


def _entry_point(search_path: Sequence[str] | None) -> str | None:
    dists = metadata.distributions() if search_path is None else metadata.distributions(path=list(search_path))
    for dist in dists:
        for ep in dist.entry_points:
            if ep.group == PLUGIN_GROUP and ep.name == PLUGIN_NAME:
                return ep.value
    return None


def _allowed(env: Mapping[str, str]) -> bool:
    # vLLM: unset means "load all"; otherwise a comma-separated list of names.
    value = env.get(ALLOW_LIST_ENV)
    if value is None:
        return True
    return PLUGIN_NAME in {name.strip() for name in value.split(",")}


def guard_status(search_path: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> GuardStatus:
    env = os.environ if env is None else env
    entry = _entry_point(search_path)
    raw = env.get(MODE_ENV)
    mode, problem = resolve_mode(raw)
    return GuardStatus(
        plugin_registered=entry is not None,
        entry_point=entry,
        allowed_by_vllm_plugins=_allowed(env),
        mode=mode,
        mode_env=raw,
        mode_problem=problem,
    )
