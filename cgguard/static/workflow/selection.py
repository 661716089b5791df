"""Which findings a run keeps: the run's finding filter built from its settings.

In order: ``select``/``ignore``, ``per-file-ignores``, inline suppressions
(``# noqa``...), and ``unfixable`` (the finding stays, its fix is dropped). The
filter runs on every check the fixer makes too, so a suppressed or unselected
finding is never fixed.
"""

from __future__ import annotations

from dataclasses import replace

from cgguard.static.source.findings import Finding
from cgguard.static.workflow.config import Settings
from cgguard.static.workflow.globs import PathGlobs, relative_to_root
from cgguard.static.workflow.suppressions import filter_suppressed


def make_filter(settings: Settings, *, suppress: bool = True):
    """The run's finding filter; ``suppress=False``: without the inline suppressions (what
    they would silence, for the report of those that silence nothing, CGG100)."""
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
            f
            for f in findings
            if settings.selected(f.code) and not any(f.code.startswith(c) for c in skip)
        ]
        if suppress:
            findings = filter_suppressed(text, findings)
        if settings.unfixable:
            findings = [
                f if f.fix is None or settings.fixable(f.code) else replace(f, fix=None)
                for f in findings
            ]
        return findings

    return keep


def with_command_line_selection(
    settings: Settings, *, select=None, extend_select=(), ignore=()
) -> Settings:
    """``--select``/``--extend-select``/``--ignore`` on top of the settings, as ruff does.

    The command line is a layer over the file's ``select``/``ignore``:
    ``--select`` starts over (the file's ``select`` and ``ignore`` no longer
    apply), ``--extend-select`` turns codes on and ``--ignore`` turns them off,
    whatever the file said. Within the command line the most specific selector
    wins (``--select CGG --ignore CGG002``; ``--ignore CGG --extend-select
    CGG001``), and ``--ignore`` wins a tie. The result lists the rule codes that
    stay on. Codes were validated by the caller (:func:`command_line_codes`).
    """
    if select is None and not extend_select and not ignore:
        return settings
    from cgguard.static.workflow.config import COMMAND_LINE, _known_codes

    on = {c for c in _known_codes() if select is None and settings.selected(c)}
    for code in _known_codes():
        verdict = _most_specific(code, tuple(select or ()) + tuple(extend_select), tuple(ignore))
        if verdict is not None:
            (on.add if verdict else on.discard)(code)
    origins = dict(settings.origins, select=COMMAND_LINE, ignore=COMMAND_LINE)
    return replace(settings, select=tuple(sorted(on)), ignore=(), origins=origins)


def _most_specific(code: str, enable: tuple[str, ...], disable: tuple[str, ...]) -> bool | None:
    """True/False from the longest selector matching ``code`` (ignore wins a tie), None if none does."""
    best = max((len(s) for s in enable if code.startswith(s)), default=-1)
    worst = max((len(s) for s in disable if code.startswith(s)), default=-1)
    if best < 0 and worst < 0:
        return None
    return best > worst


def command_line_codes(option: str, values) -> tuple[str, ...]:
    """The codes of a repeatable, comma-separated option (``--select CGG001,CGG002``),
    validated as in a settings file; a bad one raises ConfigError naming the option."""
    from cgguard.static.workflow.config import ConfigError, _codes

    codes = [c.strip() for value in values for c in value.split(",") if c.strip()]
    if any(not value.strip(" ,") for value in values):
        # `--select ''` would check with no rule at all and report "No findings".
        raise ConfigError(f"{option}: an empty value names no rule code")
    return _codes(codes, option)
