"""Check one source text: decide what to parse, run the flow, turn hits into findings.

Two paths give the same findings (a test compares them over all of vLLM):

- the *full* path parses the whole file with :mod:`ast` and walks every scope;
- the *fast* path (default) first looks for the capture-size substrings every rule
  needs (most files have none and are never parsed), then parses only the
  functions that contain them, cut out by indentation. Anything it cannot cut
  cleanly (a match outside a function, a chunk that does not parse) falls back to
  the full path for that file.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from itertools import accumulate

from cgguard.static.driver.prefilter import TEXT_NEEDLES as _NEEDLES
from cgguard.static.driver.prefilter import might_match
from cgguard.static.rules.edits import build_fix
from cgguard.static.driver.findings import Finding
from cgguard.static.rules.flow import MAX, ClassFacts, Hit, ScopeFlow
from cgguard.static.rules.messages import message_for
from cgguard.static.driver.sourcetext import SourceText

_DEF = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]")


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


# Characters str.splitlines() breaks at but Python's tokenizer does not.
_ODD_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def split_lines(text: str) -> list[str]:
    """Physical lines with their endings, split only where Python's tokenizer splits."""
    if _ODD_BREAKS.search(text) is None:
        return text.splitlines(keepends=True)  # same result, much faster
    return _LINE.findall(text)


_NEEDLE = re.compile("|".join(map(re.escape, _NEEDLES)))


def _needle_lines(text: str, lines: list[str]) -> list[int]:
    """1-based numbers of the lines holding a needle, ascending."""
    starts = list(accumulate(map(len, lines), initial=0))
    found: list[int] = []
    for m in _NEEDLE.finditer(text):
        n = bisect_right(starts, m.start())
        if not found or found[-1] != n:
            found.append(n)
    return found


def check_source(text: str, path: str, *, fast: bool = True) -> list[Finding]:
    """Findings for one file's text. Raises SyntaxError/ValueError/RecursionError on bad input."""
    if fast and not might_match(text):
        return []
    lines = split_lines(text)
    # 1-based numbers of the lines that mention a capture size: scopes and statements
    # without one cannot start a taint, so the flow skips them (exactly, not heuristically).
    needles = _needle_lines(text, lines)
    hits: list[tuple[Hit, int]] = []  # (hit, line offset of the tree it came from)
    chunks = _function_chunks(lines, needles) if fast else None
    if chunks is None:
        tree = ast.parse(text, filename=path)
        hits = [(h, 0) for h in _walk(tree, None, lines, 0, needles)]
    else:
        for start, end, facts in chunks:
            indented = lines[start][:1] in (" ", "\t")
            source = ("if 1:\n" if indented else "") + "".join(lines[start:end])
            offset = start - (1 if indented else 0)
            try:
                tree = ast.parse(source, filename=path)
            except SyntaxError:
                return check_source(text, path, fast=False)
            hits.extend((h, offset) for h in _walk(tree, facts, lines, offset, needles))
        if hits:
            # Findings are rare and their fix depends on the whole class (which request
            # count it offers) and on the whole file parsing: settle them on the full
            # parse, which the chunks were only a shortcut to.
            return check_source(text, path, fast=False)
    src = SourceText(text, lines)
    findings = [_to_finding(h, off, src, path) for h, off in hits]
    return sorted(set(findings), key=Finding.sort_key)


# ---- scopes -----------------------------------------------------------------


def _walk(
    tree: ast.AST, facts: ClassFacts | None, lines: list[str], offset: int, needles: list[int]
) -> list[Hit]:
    """Run the flow over every scope in ``tree``; methods get their class's facts."""
    hits: list[Hit] = []

    def has_needle(node: ast.AST) -> bool:
        lo = getattr(node, "lineno", None)
        if lo is None:
            return True
        i = bisect_left(needles, lo + offset)
        return i < len(needles) and needles[i] <= node.end_lineno + offset

    def visit(node: ast.AST, facts: ClassFacts | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            positional = a.posonlyargs + a.args
            params = [p.arg for p in positional + a.kwonlyargs]
            # Default values, by parameter name (a capture-size default starts a taint).
            defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults):]], a.defaults))
            defaults.update((p.arg, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)
            hits.extend(ScopeFlow(facts, params, has_needle, defaults).run(node.body))
        elif isinstance(node, ast.ClassDef):
            start = node.lineno - 1 + offset
            end = node.end_lineno + offset
            facts = _class_facts(node.name, lines, start, end)
            hits.extend(ScopeFlow(None, [], has_needle).run(node.body))
        elif isinstance(node, ast.Module):
            hits.extend(ScopeFlow(None, [], has_needle).run(node.body))
        for child in _scope_children(node, has_needle):
            visit(child, facts)

    if needles:
        visit(tree, facts)
    return hits


def _scope_children(node: ast.AST, has_needle):
    """Function and class definitions inside ``node``'s scope that mention a capture size."""
    stack = [c for c in ast.iter_child_nodes(node) if has_needle(c)]
    while stack:
        cur = stack.pop()
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield cur
        else:
            stack.extend(c for c in ast.iter_child_nodes(cur) if has_needle(c))


def _class_facts(name: str, lines: list[str], start: int, end: int) -> ClassFacts:
    """Facts of the class on ``lines[start:end]``, read only if a fix needs them."""
    return ClassFacts(name, lambda: lines[start:end])


def _indent(line: str) -> int | None:
    """Width of the leading whitespace, None for blank and comment-only lines."""
    stripped = line.lstrip(" \t")
    if not stripped.strip() or stripped.startswith("#"):
        return None
    return len(line) - len(stripped)


def _block_end(lines: list[str], start: int) -> int:
    """Index after the last line of the block whose header is ``lines[start]``."""
    base = _indent(lines[start])
    end = start + 1
    last = start + 1
    while end < len(lines):
        ind = _indent(lines[end])
        if ind is not None:
            if ind <= base and end > start + 1 and not _is_continuation(lines, end):
                break
            last = end + 1
        end += 1
    return last


def _is_continuation(lines: list[str], i: int) -> bool:
    # A bracket closed at the opening line's indentation (`):` of a multi-line
    # signature, `)` of a call) continues that line; it opens no block.
    return lines[i].lstrip()[:1] in (")", "]", "}")


def _function_chunks(lines: list[str], needles: list[int]):
    """(start, end, class facts) of each function holding a needle; None to parse all."""
    chunks: dict[int, tuple[int, int, ClassFacts | None]] = {}
    covered = 0  # needles before this line index lie in a chunk already found
    for i in (n - 1 for n in needles):
        if i < covered:
            continue
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("#"):
            continue  # a comment: nothing to parse for
        # A needle on a def line sits in its parameters or defaults, which no scope
        # analyses: the function itself is the chunk to parse.
        start = i if _DEF.match(line) else _enclosing(lines, i, _DEF)
        if start is None:
            return None
        if start in chunks:
            continue
        end = _block_end(lines, start)
        if end <= i:
            return None
        # No class facts here: a chunk with a hit is settled on the full parse,
        # which reads them from the real class.
        chunks[start] = (start, end, None)
        covered = max(covered, end)
    # Nested chunks: keep only outermost functions (their walk covers the inner ones).
    spans = sorted(chunks.values(), key=lambda c: (c[0], -c[1]))
    kept: list[tuple[int, int, ClassFacts | None]] = []
    for c in spans:
        if kept and c[0] < kept[-1][1]:
            continue
        kept.append(c)
    return kept


def _enclosing(lines: list[str], i: int, header: re.Pattern) -> int | None:
    """Index of the nearest line above ``i`` (by indentation) matching ``header``."""
    level = _indent(lines[i])
    if level is None:
        return None
    for j in range(i - 1, -1, -1):
        ind = _indent(lines[j])
        if ind is None or ind >= level or _is_continuation(lines, j):
            continue
        if header.match(lines[j]):
            return j
        level = ind
        if level == 0:
            return None
    return None


# ---- findings ---------------------------------------------------------------


def _to_finding(hit: Hit, offset: int, src: SourceText, path: str) -> Finding:
    lines = src.lines
    node = hit.node
    line = node.lineno + offset
    end_line = node.end_lineno + offset
    col = src.col(line, node.col_offset)
    end_col = src.col(end_line, node.end_col_offset)
    code = "CGG002" if hit.kind == MAX else "CGG001"
    fix, bound = build_fix(hit, offset, src)
    return Finding(
        path=path,
        line=line,
        col=col + 1,
        end_line=end_line,
        end_col=end_col + 1,
        code=code,
        message=message_for(code, hit, lines, offset, bound),
        fix=fix,
        stmt_lines=(hit.stmt_span[0] + offset, hit.stmt_span[1] + offset) if hit.stmt_span[0] else (0, 0),
    )
