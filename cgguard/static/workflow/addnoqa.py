"""``cgguard check --add-noqa``: silence every finding where it is, as ruff's ``--add-noqa`` does.

Adopting cgguard on a legacy fork: each statement with a finding gets a ``# noqa: CODE``
comment, so the next ``cgguard check`` reports nothing and a CI gate can start at zero.
The comment goes at the end of the last line of the finding's logical line (the closing
``)`` line of a statement over several lines), where :mod:`.suppressions` reads it. A line
that already holds ``# noqa: CODES`` gets the new code added to that list; another comment
is kept, the directive following it.

Only the comments change: each file keeps its encoding, line endings and every other byte,
is written atomically (:func:`cgguard.static.source.sourcefile.write_atomic`) and only when
no one changed it since it was read. Before a file is written, its new text is asked again
whether every finding is now suppressed; where one is not, nothing is written and the file is
an error.
"""

from __future__ import annotations

import io
import tokenize

import click

from cgguard.static.source.findings import Finding
from cgguard.static.source.sourcetext import split_lines
from cgguard.static.workflow.names import one_line
from cgguard.static.workflow.suppressions import CODE_LIST, NOQA, filter_suppressed


class NoqaError(Exception):
    """The file could not be given its comments; str() is the one-line reason."""


def add_noqa_to_run(run, *, quiet: bool = False) -> int:
    """Add the comments for every finding of ``run`` (a RunResult of ``cgguard check``);
    the exit code: 0, or 2 when a file could not be checked or written."""
    from cgguard.static.source.sourcefile import SourceError

    failed = False
    added = 0
    by_file: dict[str, list[Finding]] = {}
    for r in run.files:
        if r.error is not None:
            click.echo(one_line(f"{r.error.path}: error: {r.error.reason}"), err=True)
            failed = True
        elif r.skipped is not None and not quiet:
            click.echo(one_line(f"{r.path}: warning: {r.skipped}"), err=True)
        elif r.findings:
            by_file[r.path] = list(r.findings)
    for path, findings in by_file.items():
        try:
            added += add_noqa_file(path, findings)
        except (NoqaError, SourceError) as exc:
            click.echo(one_line(f"{path}: error: {exc}"), err=True)
            failed = True
    if not quiet:
        click.echo(f"Added {added} noqa directive{'' if added == 1 else 's'}.", err=True)
    return 2 if failed else 0


def add_noqa_file(path: str, findings: list[Finding]) -> int:
    """Write ``path`` with a directive for each of ``findings``; the directives added."""
    from cgguard.static.source import sourcefile

    data = sourcefile.read_bytes(path)
    source = sourcefile.decode(data)
    if sourcefile.encode(source, source.text) != data:
        raise NoqaError(f"not written: {source.encoding} does not round-trip this file's bytes")
    new_text, added = with_noqa(source.text, findings)
    if not added:
        return 0
    try:
        new_data = sourcefile.encode(source, new_text)
    except UnicodeEncodeError as exc:  # cannot happen for ASCII comments; said if it does
        raise NoqaError(f"not written: {exc.reason}") from None
    sourcefile.write_atomic(path, new_data, expected=data)
    return added


def with_noqa(text: str, findings: list[Finding]) -> tuple[str, int]:
    """``text`` with the directives that suppress ``findings``, and how many lines got one."""
    ends, comments = _line_ends_and_comments(text)
    wanted: dict[int, set[str]] = {}
    for f in findings:
        wanted.setdefault(ends.get(f.line, f.end_line), set()).add(f.code)
    lines = split_lines(text)  # numbered as the tokenizer numbers them (a form feed is no break)
    for number, codes in wanted.items():
        lines[number - 1] = _with_directive(lines[number - 1], comments.get(number), sorted(codes))
    new_text = "".join(lines)
    if filter_suppressed(new_text, findings):
        raise NoqaError("not written: a noqa comment would not reach every finding")
    return new_text, len(wanted)


def _with_directive(line: str, comment: tuple[int, str] | None, codes: list[str]) -> str:
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    if comment is not None:
        col, token = comment
        m = NOQA.search(token)
        listed = CODE_LIST.match(m.group("codes")) if m and m.group("codes") else None
        if m and listed:  # the list takes the code: E501 -> E501, CGG001
            at = col + m.start("codes") + listed.end("list")
            return body[:at] + "".join(f", {c}" for c in codes) + body[at:] + ending
        at = col + len(token)
    else:
        at = len(body.rstrip())
    return body[:at] + f"  # noqa: {', '.join(codes)}" + body[at:] + ending


def _line_ends_and_comments(text: str) -> tuple[dict[int, int], dict[int, tuple[int, str]]]:
    """({line: the last line of its logical line}, {line: (column, its comment token)})."""
    ends: dict[int, int] = {}
    comments: dict[int, tuple[int, str]] = {}
    start = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = (tok.start[1], tok.string)
            elif tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if start is not None:
                    for n in range(start, tok.start[0] + 1):
                        ends[n] = tok.start[0]
                start = None
            elif tok.type not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
                start = tok.start[0] if start is None else start
    except (tokenize.TokenError, SyntaxError) as exc:
        raise NoqaError(f"not written: cannot read its comments ({exc})") from None
    return ends, comments
