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
from collections.abc import Callable
from dataclasses import replace

import libcst as cst

from cgguard.static.rules.base import SAFE, UNSAFE, Context, Report, RuleFix, Span
from cgguard.static.rules.engine import statement_lines
from cgguard.static.source.findings import Finding, Fix
from cgguard.static.workflow.config import ConfigError, Settings, resolve
from cgguard.static.workflow.selection import make_filter


class SettingsError(Exception):
    """A settings file cgguard cannot use; str() is cgguard's one-line reason."""


def settings_for(path: str | None) -> Settings:
    """The settings ``cgguard check PATH`` would use (no path: those of the current folder)."""
    try:
        return resolve(start=path or os.getcwd())
    except ConfigError as exc:
        raise SettingsError(f"cgguard: error: {exc}") from None


def kept(
    found: list[Report],
    module: cst.Module,
    text: str,
    lines: list[str],
    position: Callable[[cst.CSTNode], Span],
    path: str | None,
    settings: Settings,
) -> list[Report]:
    """The reports cgguard's finding filter keeps for ``path``, in their order; a report
    whose fix ``unfixable`` drops comes back without its fix."""
    if not found:
        return found
    ctx = Context(module, text, lines, position)
    findings = [_as_finding(report, ctx, path or "-") for report in found]
    by_key = {_key(f): report for f, report in zip(findings, found)}
    out = []
    for f in make_filter(settings)(path or "-", text, findings):
        report = by_key[_key(f)]
        out.append(report if f.fix is not None or report.fix is None else replace(report, fix=None))
    return out


def applies(fix: RuleFix | None, settings: Settings) -> bool:
    """Would ``cgguard fix`` (without ``--unsafe-fixes`` / ``--no-unsafe-fixes``) apply it?"""
    if fix is None:
        return False
    return fix.applicability == SAFE or (settings.unsafe_fixes and fix.applicability == UNSAFE)


def _as_finding(report: Report, ctx: Context, path: str) -> Finding:
    # What the filter reads: place, code, statement lines, and whether there is a fix.
    line, col, end_line, end_col = ctx.span(report.hit.node)
    fix = None if report.fix is None else Fix(report.fix.applicability, report.fix.description, ())
    return Finding(
        path=path,
        line=line,
        col=col + 1,
        end_line=end_line,
        end_col=end_col + 1,
        code=report.code,
        message=report.message,
        fix=fix,
        stmt_lines=statement_lines(report.hit.stmt, ctx),
    )


def _key(f: Finding) -> tuple:
    return (f.line, f.col, f.end_line, f.end_col, f.code, f.message)
