"""CGG100, unused suppression: a ``# noqa`` or ``# cgguard: ignore`` that silences nothing
(ruff's RUF100, for cgguard's own codes).

Off by default, like RUF100: the default ``select`` is every rule (``CGG0``), and CGG100 is
turned on by name (``--extend-select CGG100``, ``extend-select``... in the settings:
``select = ["CGG"]``). ``cgguard check`` then reports, for each directive in a checked file,
the cgguard codes it names that suppress no finding (``# noqa: CGG001`` where no CGG001 is
reported any more), and a bare ``# cgguard: ignore`` that suppresses nothing. Codes of other
tools (``E501``) and a bare ``# noqa`` (which flake8 and ruff read too) are not cgguard's to
judge. The finding sits on the directive and has no fix: delete the code (or the comment).

Only files whose bytes hold such a directive are read again; their findings are worked out
once more without the inline suppressions, from the same settings.
"""

from __future__ import annotations

import io
import re
import tokenize

from cgguard.static.source.findings import Finding
from cgguard.static.workflow.suppressions import (
    ALL,
    UNUSED_NOQA,
    covers,
    directives_by_kind,
    reach,
)

CODE = UNUSED_NOQA  # defined in workflow, which the settings read and may not import driver
NAME = "unused-noqa"
# A directive that names a cgguard code, or cgguard's own: the files worth a second look.
_SCREEN = re.compile(rb"#\s*noqa\s*:[^\n#]*cgg|#\s*cgguard\s*:\s*ignore", re.I)


def enabled(settings) -> bool:
    return settings.selected(CODE)


def add_unused_directives(run, settings) -> None:
    """Append a CGG100 finding to each checked file of ``run`` for each directive that
    silences nothing (per-file-ignores and a directive naming CGG100 silence these too)."""
    from cgguard.static.source import sourcefile

    for r in run.files:
        if not r.checked or r.path == "-":
            continue
        try:
            data = sourcefile.read_bytes(r.path)
            if not _SCREEN.search(data):
                continue
            text = sourcefile.decode(data).text
        except sourcefile.SourceError:
            continue  # reported by the run already, or changed since: nothing to judge
        r.findings.extend(unused_in_text(text, r.path, settings))


def unused_in_text(text: str, path: str, settings) -> list[Finding]:
    """The CGG100 findings of one file's text."""
    from cgguard.static.driver.context import RunContext
    from cgguard.static.driver.run import check_text
    from cgguard.static.workflow.selection import make_filter

    placed = _directives(text)
    if not placed:
        return []
    unsuppressed = make_filter(settings, suppress=False)  # select, ignore, per-file-ignores
    raw = check_text(text, path, unsuppressed, RunContext()).findings
    spans = reach(text, raw) if raw else []
    # As with RUF100, only a directive that names CGG100 silences this report: a bare
    # cgguard ignore, or a noqa naming the prefix CGG, cannot hide that it is unused itself.
    silenced = {line for line, _, _, _, codes in placed if codes is not ALL and CODE in codes}
    # A code this run does not report in this file (not selected, or in per-file-ignores)
    # is not judged: the directive may serve a run that reports it (`--select` in a hook).
    reported = _reported_codes(path, unsuppressed)
    out = []
    for line, col, comment, kind, codes in placed:
        if line in silenced:
            continue
        used = [f for f, (first, last) in zip(raw, spans) if first <= line <= last]
        if codes is ALL:
            if not used:
                out.append(_finding(path, line, col, comment, f"Unused blanket `{kind}` directive"))
            continue
        unused = [
            code
            for code in sorted(codes)
            if any(k.startswith(code) for k in reported)
            and not any(covers(frozenset({code}), f.code) for f in used)
        ]
        if unused:
            names = ", ".join(f"`{c}`" for c in unused)
            out.append(
                _finding(path, line, col, comment, f"Unused `{kind}` directive (unused: {names})")
            )
    return unsuppressed(path, text, out)


def _reported_codes(path: str, keep) -> set[str]:
    """The rule codes (CGG100 aside) that ``keep``, the run's filter, reports in ``path``."""
    from cgguard.static.workflow.config import _known_codes

    probes = [Finding(path, 1, 1, 1, 1, code, "") for code in _known_codes() if code != CODE]
    return {f.code for f in keep(path, "", probes)}


def _finding(path: str, line: int, col: int, comment: str, what: str) -> Finding:
    return Finding(
        path=path,
        line=line,
        col=col + 1,
        end_line=line,
        end_col=col + 1 + len(comment),
        code=CODE,
        message=f"{what}: it suppresses no finding; delete it",
    )


def _directives(text: str) -> list[tuple[int, int, str, str, frozenset[str] | None]]:
    """(line, column, comment, kind, codes) of each directive in a comment of ``text``; a
    bare ``# noqa`` is left out (other linters read it too)."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type != tokenize.COMMENT:
                continue
            for kind, codes in directives_by_kind(tok.string):
                if not (kind == "noqa" and codes is ALL):
                    out.append((tok.start[0], tok.start[1], tok.string, kind, codes))
    except (tokenize.TokenError, SyntaxError):
        return []
    return out
