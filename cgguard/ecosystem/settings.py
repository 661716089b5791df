"""cgguard's settings and inline suppressions, applied to the adapters' reports.

Fixit and the codemod CLI hand the adapters one file at a time, so each file gets
the settings ``cgguard check FILE`` would use for it: the nearest ``cgguard.toml``,
or ``pyproject.toml`` with a ``[tool.cgguard]`` table, at or above the file
(:func:`cgguard.static.workflow.config.resolve`). The reports then pass through the
same finding filter as ``cgguard check`` and ``cgguard fix``
(:func:`cgguard.static.workflow.selection.make_filter`: ``select``/``ignore``,
``per-file-ignores``, ``# noqa`` / ``# cgguard: ignore[...]``, ``unfixable``), and a
fix is applied when ``cgguard fix`` without ``--unsafe-fixes`` would apply it: a
safe fix always, an unsafe one only with ``unsafe-fixes = true``.

Which files to look at stays the tool's business: cgguard's ``exclude``,
``extend-exclude`` and ``respect-gitignore`` decide what ``cgguard check`` finds
while walking a folder, and a file the tool hands over is treated like a file named
on cgguard's command line (checked).
"""

from __future__ import annotations

import os

from cgguard.static.source.findings import SAFE, UNSAFE, Finding
from cgguard.static.workflow.config import ConfigError, Settings, resolve
from cgguard.static.workflow.selection import make_filter


class SettingsError(SystemExit):
    """A settings file cgguard cannot use; str() is cgguard's one-line reason.

    It ends the tool's run, as the same file ends ``cgguard check``'s. It is a
    SystemExit, not an Exception: Fixit and the codemod CLI print the traceback of any
    Exception a rule raises (over a hundred lines for one wrong key), while a SystemExit
    passes their handlers, also back from their worker processes, and Python prints
    just this reason (exit code 1).
    """


def settings_for(path: str | None) -> Settings:
    """The settings ``cgguard check PATH`` would use (no path: those of the current folder)."""
    try:
        return resolve(start=path or os.getcwd())
    except ConfigError as exc:
        raise SettingsError(f"cgguard: error: {exc}") from None


def kept(findings: list[Finding], text: str, path: str | None, settings: Settings) -> list[Finding]:
    """The findings cgguard's finding filter keeps for ``path``, in their order; a finding
    whose fix ``unfixable`` drops comes back without its fix."""
    if not findings:
        return findings
    return make_filter(settings)(path or "-", text, findings)


def applies(applicability: str | None, settings: Settings) -> bool:
    """Would ``cgguard fix`` (without ``--unsafe-fixes`` / ``--no-unsafe-fixes``) apply a fix
    of this applicability (None: no fix)?"""
    if applicability is None:
        return False
    return applicability == SAFE or (settings.unsafe_fixes and applicability == UNSAFE)
