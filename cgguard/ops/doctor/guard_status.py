"""Would the cgguard runtime guard run inside vLLM here, and in which mode?

vLLM loads every entry point of the ``vllm.general_plugins`` group unless the
``VLLM_PLUGINS`` allow-list leaves it out (docs/vllm.md, "Plugins"). The list is read
here exactly as vLLM reads it (0.18.0 to 0.33.0, ``vllm/envs.py``): unset allows every
plugin; set, it is ``value.split(",")`` with nothing stripped, and a plugin loads only
when its name is one of those pieces. So ``"other, cgguard"`` allows ``" cgguard"``,
which names no plugin, and ``""`` allows none. The mode comes from ``CGGUARD_MODE``
exactly as the plugin will read it.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

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
    # Why VLLM_PLUGINS leaves cgguard out although it seems to name it (a space
    # around the name): None when it does not, or when cgguard is allowed.
    allow_list_problem: str | None = None
    # False when no vLLM was found: then there is nothing for the plugin to guard.
    vllm_found: bool = True

    @property
    def active(self) -> bool:
        return (
            self.vllm_found
            and self.plugin_registered
            and self.allowed_by_vllm_plugins
            and self.mode != "off"
        )

    def to_json(self) -> dict:
        return {**asdict(self), "active": self.active}


def _entry_point(search_path: Sequence[str] | None) -> str | None:
    dists = (
        metadata.distributions()
        if search_path is None
        else metadata.distributions(path=list(search_path))
    )
    for dist in dists:
        for ep in dist.entry_points:
            if ep.group == PLUGIN_GROUP and ep.name == PLUGIN_NAME:
                return ep.value
    return None


def allowed_names(value: str | None) -> list[str] | None:
    """The plugin names VLLM_PLUGINS allows, as vLLM computes them; None: every plugin."""
    return None if value is None else value.split(",")


def _allowed(value: str | None) -> bool:
    names = allowed_names(value)
    return names is None or PLUGIN_NAME in names


def _allow_list_problem(value: str | None) -> str | None:
    names = allowed_names(value)
    if names is None or PLUGIN_NAME in names:
        return None
    near = [n for n in names if n != PLUGIN_NAME and n.strip() == PLUGIN_NAME]
    if near:
        return (
            f"{ALLOW_LIST_ENV} lists {near[0]!r}, which vLLM does not strip: it matches no plugin; "
            f"write the names without spaces, as in {ALLOW_LIST_ENV}=other,{PLUGIN_NAME}"
        )
    if value == "":
        return f"{ALLOW_LIST_ENV} is set but empty: vLLM then loads no plugin at all"
    return None


def guard_status(
    search_path: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    vllm_found: bool = True,
) -> GuardStatus:
    env = os.environ if env is None else env
    entry = _entry_point(search_path)
    raw = env.get(MODE_ENV)
    mode, problem = resolve_mode(raw)
    allow_list = env.get(ALLOW_LIST_ENV)
    return GuardStatus(
        plugin_registered=entry is not None,
        entry_point=entry,
        allowed_by_vllm_plugins=_allowed(allow_list),
        mode=mode,
        mode_env=raw,
        mode_problem=problem,
        allow_list_problem=_allow_list_problem(allow_list),
        vllm_found=vllm_found,
    )
