"""How a run's findings are written: ``--format text|full|json|sarif|github``.

- ``text``: ``PATH:LINE:COL: CODE message`` lines, then a one-line summary.
- ``full``: each finding with its source lines, a caret under the flagged code,
  and the proposed fix as a diff; then the summary.
- ``json``: a list of findings (code, message, path, line, column, end_line,
  end_column, fix with its edits' positions, or null).
- ``sarif``: SARIF 2.1.0 for GitHub code scanning (tool ``cgguard``, rule
  metadata with help from ``rules/``, results with physical locations and fixes).
- ``github``: GitHub Actions workflow commands (``::error file=...::message``).

In ``sarif`` and ``github`` a rule whose fix is a suggestion only (CGG002) is a
warning; the others (CGG001) are errors.

Errors (files that could not be checked) always go to standard error, one line
each. For the machine formats the summary goes to standard error too, so
standard output (or ``--output-file``) holds nothing but the document.
json is imported only by the formats that write it.
"""

from __future__ import annotations

import bisect
import os

from cgguard.static.source.findings import DISPLAY_ONLY, SAFE, UNSAFE, Finding
from cgguard.static.workflow.colour import PLAIN, Painter

FORMATS = ("text", "full", "json", "sarif", "github")
MACHINE_FORMATS = ("json", "sarif", "github")
# The formats that print a fix's edits (a diff, or the replacement text); the others print
# only whether a finding is fixable, and how safely.
SHOWS_FIX_TEXT = ("full", "json", "sarif")

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(run, *, fixing: bool) -> str:
    """One line: what was found (check), fixed and remains (fix), or would be (fix --diff).

    Files checked, findings, fixed, remaining and errors are counted apart: a path
    that failed is an error, never a checked file, and a fix that was not written
    leaves its finding remaining. Fixes that need `--unsafe-fixes` are counted and
    the flag named, as ruff does, unless the run applies them. While findings
    remain the line ends with the `cgguard rule` command that explains them.
    """
    findings = run.findings
    checked = _plural(run.checked, "file")
    unsafe_on = getattr(run, "unsafe_fixes", False)
    # Unsafe fixes the run leaves aside: `cgguard fix --unsafe-fixes` would apply them.
    hidden = 0 if unsafe_on else sum(1 for f in findings if _applicability(f) == UNSAFE)
    parts = []
    if not fixing:
        if findings:
            applies = (SAFE, UNSAFE) if unsafe_on else (SAFE,)
            fixable = sum(1 for f in findings if _applicability(f) in applies)
            parts.append(
                f"Found {_plural(len(findings), 'finding')}{_fixable(fixable, hidden)} in {checked} checked."
            )
        else:
            parts.append(f"No findings in {checked} checked.")
    else:
        dry = getattr(run, "dry_run", False)
        parts.append(f"{'Would fix' if dry else 'Fixed'} {_plural(run.fixed, 'finding')}.")
        if findings:
            verb = "would remain" if dry else "remain" if len(findings) != 1 else "remains"
            parts.append(
                f"{_plural(len(findings), 'finding')} {verb}{_fixable(0, hidden)} in {checked} checked."
            )
        else:
            parts.append(f"No findings {'would remain' if dry else 'remain'} in {checked} checked.")
    if run.errors:
        parts.append(f"{_plural(len(run.errors), 'error')}.")
    if findings:
        parts.append(rule_hint(findings))
    return " ".join(parts)


def _applicability(f: Finding) -> str | None:
    return f.fix.applicability if f.fix is not None else None


def _fixable(fixable: int, hidden: int) -> str:
    """`` (N fixable with `cgguard fix`, M more with `cgguard fix --unsafe-fixes`)``, or less."""
    said = []
    if fixable:
        said.append(f"{fixable} fixable with `cgguard fix`")
    if hidden:
        said.append(
            f"{hidden} {'more' if fixable else 'fixable'} with `cgguard fix --unsafe-fixes`"
        )
    return f" ({', '.join(said)})" if said else ""


def rule_hint(findings) -> str:
    """Where the why and the fix of each code are explained."""
    codes = sorted({f.code for f in findings})
    if len(codes) == 1:
        return f"Run `cgguard rule {codes[0]}` for why and how to fix."
    return f"Run `cgguard rule CODE` ({', '.join(codes)}) for why and how to fix."


class Sources:
    """Source texts for formats that show code or locate fix edits; read once, on demand."""

    def __init__(self, known: dict[str, str] | None = None):
        self._texts: dict[str, str | None] = dict(known or {})
        self._starts: dict[str, list[int]] = {}

    def text(self, path: str) -> str | None:
        if path not in self._texts:
            from cgguard.static.source import sourcefile

            try:
                self._texts[path] = sourcefile.decode(sourcefile.read_bytes(path)).text
            except sourcefile.SourceError:
                self._texts[path] = None
        return self._texts[path]

    def lines(self, path: str) -> list[str]:
        from cgguard.static.source.sourcetext import split_lines

        text = self.text(path)
        return split_lines(text) if text is not None else []

    def position(self, path: str, offset: int) -> tuple[int, int]:
        """(line, column), both 1-based, of a character offset into the file."""
        starts = self._starts.get(path)
        if starts is None:
            starts = [0]
            for line in self.lines(path):
                starts.append(starts[-1] + len(line))
            self._starts[path] = starts
        i = max(0, bisect.bisect_right(starts, offset) - 1)
        return i + 1, offset - starts[i] + 1


def render(
    run, fmt: str, *, fixing: bool, sources: Sources, quiet: bool = False, paint: Painter = PLAIN
) -> str:
    """The document for standard output (or --output-file); ``quiet`` (``-q``): the
    findings without the summary line; ``paint``: colour for a terminal (text and full)."""
    from cgguard.static.workflow.names import printable_strings

    findings = sorted(run.findings, key=Finding.sort_key)
    tail = "" if quiet else summary(run, fixing=fixing) + "\n"
    if fmt == "text":
        return "".join(_line(f, paint) for f in findings) + tail
    if fmt == "full":
        return "".join(_full(f, sources, paint) for f in findings) + tail
    if fmt == "json":
        import json

        document = [_json_finding(f, sources) for f in findings]
        return json.dumps(printable_strings(document), indent=2) + "\n"
    if fmt == "sarif":
        import json

        return json.dumps(printable_strings(sarif(run, findings, sources)), indent=2) + "\n"
    if fmt == "github":
        return "".join(_github(f) for f in findings) + "".join(
            f"::error file={_gh_prop(e.path)},title=cgguard::{_gh_data(e.reason)}\n"
            for e in run.errors
        )
    raise ValueError(f"unknown format {fmt!r}")


# ---- --statistics ---------------------------------------------------------------------

STATISTICS_FORMATS = ("text", "json")


def statistics(run, fmt: str, *, quiet: bool = False, paint: Painter = PLAIN) -> str:
    """``--statistics``, as ruff writes it: one row per code, the most frequent first.

    text: ``COUNT<tab>CODE<tab>MARK NAME``, MARK ``[*]`` when every finding of the code is
    fixable by the run's fixes (safe ones; unsafe ones too under ``unsafe-fixes``), ``[~]``
    when some are, ``[ ]`` when none is; then the summary line. json: a list of
    ``{code, name, count, fixable_count}``.
    """
    applies = (SAFE, UNSAFE) if getattr(run, "unsafe_fixes", False) else (SAFE,)
    counts: dict[str, list[int]] = {}
    for f in run.findings:
        row = counts.setdefault(f.code, [0, 0])
        row[0] += 1
        row[1] += _applicability(f) in applies
    rows = sorted(counts.items(), key=lambda item: (-item[1][0], item[0]))
    names = _rule_names()
    if fmt == "json":
        import json

        document = [
            {"code": code, "name": names.get(code, ""), "count": n, "fixable_count": fixable}
            for code, (n, fixable) in rows
        ]
        return json.dumps(document, indent=2) + "\n"
    count_width = max((len(str(n)) for _, (n, _) in rows), default=1)
    code_width = max((len(code) for code, _ in rows), default=1)
    out = []
    for code, (n, fixable) in rows:
        mark = "[*]" if fixable == n else "[~]" if fixable else "[ ]"
        name = names.get(code, "")
        line = f"{n:>{count_width}}\t{paint.code(code.ljust(code_width))}\t{mark} {name}"
        out.append(line.rstrip() + "\n")
    if any(fixable for _, (_, fixable) in rows):
        out.append("[*] fixable with `cgguard fix` ([~]: some of them)\n")
    if not quiet:
        out.append(summary(run, fixing=False) + "\n")
    return "".join(out)


def _rule_names() -> dict[str, str]:
    from cgguard.static.workflow.ruledocs import documented_rules

    try:
        return {doc.code: doc.name for doc in documented_rules()}
    except FileNotFoundError:
        return {}


# ---- full ---------------------------------------------------------------------------


def _line(f: Finding, paint: Painter) -> str:
    """``PATH:LINE:COL: CODE message``, one line whatever the path holds."""
    from cgguard.static.workflow.names import one_line

    return f"{paint.path(one_line(f.path))}:{f.line}:{f.col}: {paint.code(f.code)} {f.message}\n"


def _full(f: Finding, sources: Sources, paint: Painter = PLAIN) -> str:
    out = [_line(f, paint)]
    lines = sources.lines(f.path)
    if lines:
        last = min(f.end_line, f.line + 5)
        width = len(str(last + 1))
        gutter = " " * width + " |"
        out.append(gutter + "\n")
        for n in range(max(1, f.line - 1), min(len(lines), last + 1) + 1):
            out.append(f"{n:>{width}} | {lines[n - 1].rstrip()}\n")
            if n == f.line:
                shown = lines[n - 1].rstrip()
                end = f.end_col if f.end_line == f.line else len(shown) + 1
                out.append(
                    f"{gutter} {_under(shown[: f.col - 1])}{'^' * max(1, end - f.col)} {f.code}\n"
                )
        out.append(gutter + "\n")
    why = _why(f.code)
    if why:
        out.append(why)
    if f.fix is not None:
        out.append(f"  = fix ({f.fix.applicability}): {f.fix.description}\n")
        out.extend(_fix_diff(f, sources))
    out.append(
        f"  = help: `cgguard rule {f.code}` (what it flags, why, when the fix is safe, examples)\n"
    )
    out.append("\n")
    return "".join(out)


def _under(prefix: str) -> str:
    """Blanks as wide as ``prefix`` on a terminal: its tabs are kept as tabs, so the
    caret lands under the same character whatever the tab width."""
    return "".join(c if c == "\t" else " " for c in prefix)


_WHY: dict[str, str] = {}


def _why(code: str) -> str:
    """The rule page's "Why is this bad?" (its first paragraph), wrapped, for ``full``."""
    if code not in _WHY:
        import re
        import textwrap

        from cgguard.static.workflow.ruledocs import get_rule

        try:
            doc = get_rule(code)
        except (OSError, FileNotFoundError):
            doc = None
        text = ""
        if doc is not None:
            m = re.search(r"^## Why is this bad\?\n+(.*?)(?:\n\n|\n## |\Z)", doc.body, re.S | re.M)
            text = " ".join(m.group(1).replace("**", "").split()) if m else doc.summary
        _WHY[code] = "".join(
            line + "\n"
            for line in textwrap.wrap(
                text, width=96, initial_indent="  = why: ", subsequent_indent="    "
            )
        )
    return _WHY[code]


def _fix_diff(f: Finding, sources: Sources) -> list[str]:
    import difflib

    from cgguard.static.source.edits import apply_edits

    text = sources.text(f.path)
    if text is None or f.fix is None:
        return []
    before = text.splitlines(keepends=True)
    after = apply_edits(text, list(f.fix.edits)).splitlines(keepends=True)
    rows = []
    for row in difflib.unified_diff(before, after, n=0, lineterm=""):
        if row.startswith(("---", "+++", "@@")):
            continue
        rows.append(f"    {row.rstrip()}\n")
    return rows


# ---- json ---------------------------------------------------------------------------


def _json_finding(f: Finding, sources: Sources) -> dict:
    fix = None
    if f.fix is not None:
        edits = []
        for e in f.fix.edits:
            (line, col), (end_line, end_col) = (
                sources.position(f.path, e.start),
                sources.position(f.path, e.end),
            )
            edits.append(
                {
                    "content": e.text,
                    "line": line,
                    "column": col,
                    "end_line": end_line,
                    "end_column": end_col,
                }
            )
        fix = {
            "applicability": f.fix.applicability,
            "description": f.fix.description,
            "edits": edits,
        }
    return {
        "code": f.code,
        "message": f.message,
        "path": f.path,
        "line": f.line,
        "column": f.col,
        "end_line": f.end_line,
        "end_column": f.end_col,
        "fix": fix,
    }


# ---- severity (sarif, github) --------------------------------------------------------
#
# A rule whose fix is a suggestion only (rule.md's `fix: display-only`, CGG002)
# reports code the author may have meant: a warning. The others are errors.

_LEVELS: dict[str, str] = {}


def level(code: str) -> str:
    """ "error" or "warning" for a rule code (its rule page decides; "error" when it has none)."""
    if not _LEVELS:
        from cgguard.static.workflow.ruledocs import all_rules

        try:
            docs = all_rules()
        except FileNotFoundError:
            docs = []
        for doc in docs:
            _LEVELS[doc.code] = rule_level(doc.fix)
    return _LEVELS.get(code, "error")


def rule_level(fix: str) -> str:
    return "warning" if fix == DISPLAY_ONLY else "error"


# ---- sarif --------------------------------------------------------------------------


def sarif(run, findings: list[Finding], sources: Sources) -> dict:
    from cgguard import __version__

    rules = _sarif_rules({f.code for f in findings})
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for f in findings:
        location = {
            "artifactLocation": _artifact(f.path),
            "region": _region(f.line, f.col, f.end_line, f.end_col),
        }
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": level(f.code),
            "message": {"text": f.message},
            "locations": [{"physicalLocation": location}],
        }
        if f.fix is not None:
            replacements = []
            for e in f.fix.edits:
                (line, col), (end_line, end_col) = (
                    sources.position(f.path, e.start),
                    sources.position(f.path, e.end),
                )
                replacements.append(
                    {
                        "deletedRegion": _region(line, col, end_line, end_col),
                        "insertedContent": {"text": e.text},
                    }
                )
            result["fixes"] = [
                {
                    "description": {"text": f.fix.description},
                    "artifactChanges": [
                        {"artifactLocation": _artifact(f.path), "replacements": replacements}
                    ],
                }
            ]
            result["properties"] = {"fixApplicability": f.fix.applicability}
        results.append(result)
    notifications = [
        {
            "level": "error",
            "message": {"text": e.reason},
            "locations": [{"physicalLocation": {"artifactLocation": _artifact(e.path)}}],
        }
        for e in run.errors
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "cgguard",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": _dir_uri(os.getcwd())}},
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {
                        "executionSuccessful": not run.errors,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": results,
            }
        ],
    }


def _sarif_rules(codes_seen: set[str]) -> list[dict]:
    from cgguard.static.workflow.ruledocs import all_rules

    try:
        docs = all_rules()
    except FileNotFoundError:
        docs = []
    rules = []
    for doc in docs:
        rules.append(
            {
                "id": doc.code,
                "name": doc.name or doc.code,
                "shortDescription": {"text": doc.summary or doc.code},
                "fullDescription": {"text": doc.summary or doc.code},
                "help": {"text": doc.body, "markdown": doc.body},
                "defaultConfiguration": {"level": rule_level(doc.fix)},
                "properties": {"fix": doc.fix},
            }
        )
    documented = {r["id"] for r in rules}
    for code in sorted(codes_seen - documented):  # never leave a result without its rule
        rules.append({"id": code, "shortDescription": {"text": code}})
    return rules


def _artifact(path: str) -> dict:
    from urllib.parse import quote

    if path == "-":
        return {"uri": "stdin"}
    from cgguard.static.workflow.globs import relative_to_root

    rel = relative_to_root(path, os.getcwd())
    if not os.path.isabs(rel):
        # Percent-encoded from the name's own bytes: valid UTF-8 or not, the URI is exact.
        return {"uri": quote(os.fsencode(rel), safe="/"), "uriBaseId": "%SRCROOT%"}
    from pathlib import Path

    return {"uri": Path(rel).as_uri()}


def _dir_uri(folder: str) -> str:
    from pathlib import Path

    uri = Path(folder).as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _region(line: int, col: int, end_line: int, end_col: int) -> dict:
    return {"startLine": line, "startColumn": col, "endLine": end_line, "endColumn": end_col}


# ---- github -------------------------------------------------------------------------


def _github(f: Finding) -> str:
    props = (
        f"file={_gh_prop(f.path)},line={f.line},col={f.col},"
        f"endLine={f.end_line},endColumn={f.end_col},title={_gh_prop(f.code)}"
    )
    return f"::{level(f.code)} {props}::{_gh_data(f.message)}\n"


def _gh_data(text: str) -> str:
    # Workflow command escaping (the same as GitHub's own toolkit).
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")
