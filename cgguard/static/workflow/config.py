"""Settings from ``[tool.cgguard]`` in pyproject.toml or a ``cgguard.toml``, validated.

Where the settings come from (first that applies):

1. ``--config PATH``: that file (a pyproject.toml's ``[tool.cgguard]`` table, or a
   cgguard.toml's top level);
2. ``--isolated``: no file, the defaults;
3. the nearest ``cgguard.toml``, or ``pyproject.toml`` with a ``[tool.cgguard]``
   table, in the start folder or a folder above it (a cgguard.toml wins over a
   pyproject.toml in the same folder);
4. the defaults.

Path globs (``exclude``, ``per-file-ignores``) are relative to the folder of the
file they come from (the current folder when there is none). A bad file, key or
value raises :class:`ConfigError`, whose text names the file and the key.

tomllib is imported only when a file is read: most runs of ``cgguard check``
in a project without settings never pay for it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any

# Folders skipped while walking, unless ``exclude`` replaces this list
# (``extend-exclude`` adds to it).
DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "node_modules",
    "build",
    "dist",
    "site-packages",
)

DEFAULTS_ORIGIN = "default"


class ConfigError(Exception):
    """A settings file that cannot be used; str() is the one-line reason."""


@dataclass(frozen=True)
class Settings:
    # Every rule of rules/ (CGG0xx); CGG100, unused suppressions, only when selected, as
    # ruff's RUF100 (`--extend-select CGG100`, or `select = ["CGG"]`).
    select: tuple[str, ...] = ("CGG0",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    unfixable: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    respect_gitignore: bool = True
    force_exclude: bool = False
    # The file the values came from (None: defaults only) and the folder path
    # globs are relative to.
    source: str | None = None
    root: str = field(default_factory=os.getcwd)
    # key (as written in TOML) -> where its value came from.
    origins: dict[str, str] = field(default_factory=dict, compare=False)

    def selected(self, code: str) -> bool:
        return _matches(code, self.select) and not _matches(code, self.ignore)

    def fixable(self, code: str) -> bool:
        return not _matches(code, self.unfixable)

    def all_excludes(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude


def _matches(code: str, selectors: tuple[str, ...]) -> bool:
    return any(code.startswith(s) for s in selectors)


# ---- finding the file --------------------------------------------------------------


def find_config_file(start: str) -> str | None:
    """The nearest cgguard.toml, or pyproject.toml with [tool.cgguard], at or above ``start``."""
    found = _find_config(start)
    return None if found is None else found[0]


def _find_config(start: str) -> tuple[str, dict | None] | None:
    """The nearest config file and, for a pyproject.toml, its parsed TOML (None where it does
    not parse: loading it reports why)."""
    folder = os.path.abspath(start)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    while True:
        candidate = os.path.join(folder, "cgguard.toml")
        if os.path.isfile(candidate):
            return candidate, None
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            has_table, data = _cgguard_table(candidate)
            if has_table:
                return candidate, data
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _cgguard_table(path: str) -> tuple[bool, dict | None]:
    """Does the pyproject.toml hold a [tool.cgguard] table, and its parsed TOML."""
    # A cheap text test first: most pyproject.toml files have no such table, and
    # parsing TOML is the slow part. A real parse decides when the text mentions it.
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return False, None
    if "cgguard" not in text:
        return False, None
    try:
        data = _read_toml(path)
    except ConfigError:
        return True, None  # let loading report the broken file rather than skip it silently
    tool = data.get("tool")
    return isinstance(tool, dict) and "cgguard" in tool, data


def _read_toml(path: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8") from None


# ---- reading and validating -------------------------------------------------------


def load_config_file(path: str, data: dict | None = None) -> Settings:
    """Settings from one file (a pyproject.toml reads its [tool.cgguard] table); ``data``: its
    parsed TOML where finding it parsed it already."""
    if data is None:
        data = _read_toml(path)
    if os.path.basename(path) == "pyproject.toml":
        table = data.get("tool", {}).get("cgguard") if isinstance(data.get("tool"), dict) else None
        if table is None:
            raise ConfigError(f"{path}: no [tool.cgguard] table")
        where = f"{path}: [tool.cgguard]"
    else:
        table = data
        where = path
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    return settings_from_table(
        table, where, source=path, root=os.path.dirname(os.path.abspath(path))
    )


def settings_from_table(table: dict, where: str, *, source: str | None, root: str) -> Settings:
    values: dict[str, Any] = {}  # each validated for its key by _KEYS
    origins: dict[str, str] = {}
    for key, value in table.items():
        spec = _KEYS.get(key)
        if spec is None:
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(f"{where}: unknown key {key!r} (known keys: {known})")
        attr, check = spec
        values[attr] = check(value, f"{where}: {key}")
        origins[key] = source or DEFAULTS_ORIGIN
    return Settings(source=source, root=root, origins=origins, **values)


def _known_codes() -> tuple[str, ...]:
    from cgguard.static.workflow.ruledocs import all_rules
    from cgguard.static.workflow.suppressions import UNUSED_NOQA

    try:
        return (*(r.code for r in all_rules()), UNUSED_NOQA)
    except FileNotFoundError:
        return (UNUSED_NOQA,)


def _codes(value: object, where: str) -> tuple[str, ...]:
    items = _strings(value, where)
    if not items:
        return items  # nothing to validate: the rule pages are not read
    known = _known_codes()
    for code in items:
        # A full code, or a prefix of one ("CGG", "CGG00") like ruff's selectors.
        if not code or not any(k.startswith(code) for k in known):
            raise ConfigError(
                f"{where}: unknown rule code {code!r} (known: {', '.join(known) or 'none'})"
            )
    return items


def _selection(value: object, where: str) -> tuple[str, ...]:
    """``select``: the codes or prefixes to report; an empty list would report nothing."""
    codes = _codes(value, where)
    if not codes:
        raise ConfigError(
            f"{where}: an empty list selects no rule (leave `select` out to select every rule)"
        )
    return codes


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {_show(value)}")
    return tuple(value)


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {_show(value)}")
    return value


def _per_file(value: object, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of glob = [codes], got {_show(value)}")
    return tuple((glob, _codes(codes, f"{where}: {glob!r}")) for glob, codes in value.items())


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# TOML key -> (Settings attribute, validator). Kebab-case, like ruff.
_KEYS = {
    "select": ("select", _selection),
    "ignore": ("ignore", _codes),
    "exclude": ("exclude", _strings),
    "extend-exclude": ("extend_exclude", _strings),
    "per-file-ignores": ("per_file_ignores", _per_file),
    "unfixable": ("unfixable", _codes),
    "unsafe-fixes": ("unsafe_fixes", _bool),
    "respect-gitignore": ("respect_gitignore", _bool),
    "force-exclude": ("force_exclude", _bool),
}

KEYS = tuple(_KEYS)


def resolve(
    *, config: str | None = None, isolated: bool = False, start: str | None = None
) -> Settings:
    """The settings for a run (see the module docstring for the order)."""
    if config is not None:
        if not os.path.isfile(config):
            raise ConfigError(f"{config}: no such config file")
        return load_config_file(config)
    if isolated:
        return Settings()
    found = _find_config(start or os.getcwd())
    return load_config_file(*found) if found else Settings()


COMMAND_LINE = "command line"


def with_overrides(settings: Settings, **values) -> Settings:
    """Settings with command-line values on top (None values are left as they are)."""
    given = {k: v for k, v in values.items() if v is not None}
    if not given:
        return settings
    origins = dict(settings.origins)
    for k in given:
        origins[k.replace("_", "-")] = COMMAND_LINE
    return replace(settings, origins=origins, **given)
