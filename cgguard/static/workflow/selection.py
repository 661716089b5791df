"""Which findings a run keeps: the run's finding filter built from its settings.

In order: ``select``/``ignore``, ``per-file-ignores``, inline suppressions
(``# noqa``...), and ``unfixable`` (the finding stays, its fix is dropped). The
filter runs on every check the fixer makes too, so a suppressed or unselected
finding is never fixed.
"""

from __future__ import annotations

from dataclasses import replace

from cgguard.static.workflow.config import Settings
from cgguard.static.driver.findings import Finding
from cgguard.static.workflow.globs import PathGlobs, relative_to_root
from cgguard.static.workflow.suppressions import filter_suppressed


def make_filter(settings: Settings):
    per_file = [(PathGlobs([glob]), codes) for glob, codes in settings.per_file_ignores]
    ignored_for: dict[str, tuple[str, ...]] = {}

    def file_ignores(path: str) -> tuple[str, ...]:
        if path not in ignored_for:
            rel = relative_to_root(path, settings.root)
            ignored_for[path] = tuple(
                c for globs, codes in per_file if globs.match_within(rel) for c in codes
            )
        return ignored_for[path]

    def keep(path: str, text: str, findings: list[Finding]) -> list[Finding]:
        if not findings:
            return findings
        skip = file_ignores(path) if per_file else ()
        findings = [
            f for f in findings if settings.selected(f.code) and not any(f.code.startswith(c) for c in skip)
        ]
        findings = filter_suppressed(text, findings)
        if settings.unfixable:
            findings = [
                f if f.fix is None or settings.fixable(f.code) else replace(f, fix=None) for f in findings
            ]
        return findings

    return keep
