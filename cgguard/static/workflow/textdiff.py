"""Unified diffs that stay fast on big files with many small changes.

``difflib.unified_diff`` alone goes quadratic when a file holds thousands of
fixes among repetitive lines (seconds for 2,000 fixes, minutes without its junk
heuristic). Fixes never move lines, so the two texts are first split at anchors:
the common prefix and suffix, then lines that occur exactly once in each text, in
the same order (patience diff). Only the short stretches between anchors go to
``difflib``. The output has the same form as ``difflib.unified_diff``.
"""

from __future__ import annotations

import bisect
import difflib
import os
from collections.abc import Iterable, Iterator

Opcode = tuple[str, int, int, int, int]


# ---- the names in the headers --------------------------------------------------------
#
# `git apply` (and `patch -p1`) take the names after `a/` and `b/` relative to
# the folder they run in, and refuse names holding `..` or `.` parts or starting
# with `/`. So a diff names every file from one folder, with no such parts: the
# current folder when every file lies in it (the usual case, `a/pkg/runner.py`),
# otherwise the nearest folder holding the current folder and every file
# (`cgguard fix --diff ../x.py` run in `repo/sub` names `a/x.py`, to apply in
# `repo`), which the command says on standard error.


def diff_base(paths: Iterable[str]) -> str:
    """The folder a run's diff names its files from (absolute)."""
    cwd = os.getcwd()
    full = [os.path.abspath(p) for p in paths]
    if all(_inside(p, cwd) for p in full):
        return cwd
    return os.path.commonpath([cwd, *full])


def diff_label(path: str, base: str) -> str:
    """``path`` as a diff header names it (without the ``a/``/``b/`` prefix): relative
    to ``base``, in POSIX form."""
    if path == "-":
        return path
    return os.path.relpath(os.path.abspath(path), base).replace(os.sep, "/")


_C_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _odd(c: str) -> bool:
    """A control character, or a byte of a name that is not valid UTF-8 (a surrogate escape)."""
    return c < " " or c == "\x7f" or "\udc80" <= c <= "\udcff"


def header_name(name: str) -> str:
    """A name for a ``---``/``+++`` line: as it is, or in double quotes with C escapes, as
    git writes (and ``git apply`` reads) a name holding a control character, which would
    otherwise end the header line early, or bytes that are not valid UTF-8 (surrogate
    escapes, from ``os.fsdecode``), each an octal escape (``"a/runner_\\377.py"``)."""
    if not any(map(_odd, name)) and not name.startswith('"'):
        return name
    body = "".join(
        _C_ESCAPES.get(c)
        or (f"\\{ord(c) - 0xDC00 if c >= chr(0xDC80) else ord(c):03o}" if _odd(c) else c)
        for c in name
    )
    return f'"{body}"'


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def unified_diff(
    a: list[str], b: list[str], fromfile: str, tofile: str, n: int = 3
) -> Iterator[str]:
    matcher = _Fixed(opcodes(a, b))
    started = False
    for group in matcher.get_grouped_opcodes(n):
        if not started:
            started = True
            yield f"--- {header_name(fromfile)}\n"
            yield f"+++ {header_name(tofile)}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in a[i1:i2]:
                    yield " " + line
                continue
            if tag in ("replace", "delete"):
                for line in a[i1:i2]:
                    yield "-" + line
            if tag in ("replace", "insert"):
                for line in b[j1:j2]:
                    yield "+" + line


def opcodes(a: list[str], b: list[str]) -> list[Opcode]:
    """Edit operations turning ``a`` into ``b`` (``SequenceMatcher.get_opcodes`` form)."""
    raw: list[Opcode] = []
    lo_a, lo_b, hi_a, hi_b = 0, 0, len(a), len(b)
    while lo_a < hi_a and lo_b < hi_b and a[lo_a] == b[lo_b]:
        lo_a, lo_b = lo_a + 1, lo_b + 1
    while hi_a > lo_a and hi_b > lo_b and a[hi_a - 1] == b[hi_b - 1]:
        hi_a, hi_b = hi_a - 1, hi_b - 1
    raw.append(("equal", 0, lo_a, 0, lo_b))
    i, j = lo_a, lo_b
    for ai, bj in _anchors(a, lo_a, hi_a, b, lo_b, hi_b) + [(hi_a, hi_b)]:
        raw.extend(_gap(a, i, ai, b, j, bj))
        if (ai, bj) != (hi_a, hi_b):
            raw.append(("equal", ai, ai + 1, bj, bj + 1))
        i, j = ai + 1, bj + 1
    raw.append(("equal", hi_a, len(a), hi_b, len(b)))
    return _merge(raw)


def _anchors(a, lo_a, hi_a, b, lo_b, hi_b) -> list[tuple[int, int]]:
    """Lines unique in both ranges, as (i, j) pairs increasing in both (longest such chain)."""
    count_a: dict[str, int] = {}
    for i in range(lo_a, hi_a):
        count_a[a[i]] = -1 if a[i] in count_a else i
    count_b: dict[str, int] = {}
    for j in range(lo_b, hi_b):
        count_b[b[j]] = -1 if b[j] in count_b else j
    pairs = [
        (i, count_b[line]) for line, i in count_a.items() if i >= 0 and count_b.get(line, -1) >= 0
    ]
    pairs.sort()
    # Longest increasing subsequence in j (patience sorting), keeping predecessors.
    tails: list[int] = []
    tail_at: list[int] = []
    prev = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect.bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_at.append(k)
        else:
            tails[pos] = j
            tail_at[pos] = k
        prev[k] = tail_at[pos - 1] if pos else -1
    chain: list[tuple[int, int]] = []
    k = tail_at[-1] if tail_at else -1
    while k >= 0:
        chain.append(pairs[k])
        k = prev[k]
    return chain[::-1]


def _gap(a, i1, i2, b, j1, j2) -> list[Opcode]:
    if i1 == i2 and j1 == j2:
        return []
    if i1 == i2:
        return [("insert", i1, i1, j1, j2)]
    if j1 == j2:
        return [("delete", i1, i2, j1, j1)]
    # difflib's own junk heuristic stays on: without it a long stretch with no
    # unique line (nothing to anchor on) takes minutes instead of seconds.
    matcher = difflib.SequenceMatcher(None, a[i1:i2], b[j1:j2])
    return [
        (tag, x1 + i1, x2 + i1, y1 + j1, y2 + j1) for tag, x1, x2, y1, y2 in matcher.get_opcodes()
    ]


def _merge(raw: list[Opcode]) -> list[Opcode]:
    out: list[Opcode] = []
    for op in raw:
        tag, i1, i2, j1, j2 = op
        if i1 == i2 and j1 == j2:
            continue
        if out and out[-1][0] == tag:
            p = out[-1]
            out[-1] = (tag, p[1], i2, p[3], j2)
        else:
            out.append(op)
    return out


class _Fixed(difflib.SequenceMatcher):
    """A matcher whose opcodes are already known (for ``get_grouped_opcodes``)."""

    def __init__(self, codes: list[Opcode]) -> None:
        super().__init__(None, [], [])
        self._codes = codes

    def get_opcodes(self):
        return list(self._codes) or [("equal", 0, 0, 0, 0)]


def _range(start: int, stop: int) -> str:
    """``difflib``'s unified range: 1-based start, then length when not 1."""
    beginning = start + 1
    length = stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"
