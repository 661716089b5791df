"""Random file layouts: the fast path agrees with the full parse (issue 5).

The fast path cuts functions out by indentation; these files mix, at random, the
layouts that make indentation lie: strings, bracket lines and backslash continuations
at column 0 inside functions, comments at column 0, nested functions and classes,
decorators, code at module level, runner and non-runner classes, class and def
headers inside strings, and now and then a syntax error. Both paths must give the
same findings or the same exception type, and the screen (what libcst parses) must lose nothing.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from tests.benchmarks.test_fast_path_identity import compare, outcome, unscreened

CAP = "self.compilation_config.max_cudagraph_capture_size"

# Statements for a function body: lists of (relative indent or None for column 0, text).
SIMPLE_STATEMENTS = [
    [(0, f"min_blocks = {CAP} or 1")],
    [(0, f"cap = {CAP}"), (0, "n = cap or 1"), (0, "self.cache_config.num_gpu_blocks_override = n")],
    [(0, f"min_blocks = min(self.max_num_reqs, {CAP}) or 1")],
    [(0, f"self.table = [0] * ({CAP} + 1)")],
    [(0, f"build(num_blocks=self.cudagraph_batch_sizes[-1])")],
    [(0, f"min_blocks = max({CAP} or 1, self.max_num_reqs)")],
    [(0, 's = """'), (None, "text at column 0"), (None, '"""')],
    [(0, 's = """'), (None, f"min_blocks = {CAP} or 1"), (None, '"""')],
    [(0, 's = """'), (2, "class FakeRunner:"), (2, '"""')],
    [(0, 's = """'), (2, "def fake(self):"), (2, '"""')],
    [(0, "x = dict("), (None, "a=1,"), (0, ")")],
    [(0, "y = 1 + \\"), (None, "2")],
    [(None, "# a comment at column 0"), (0, "pass")],
    [(0, "self.max_num_seqs = 4")],
    [(0, "self.max_num_reqs = 4")],
    [(0, f'msg = "min_blocks = {CAP} or 1"')],
    [(0, "return None")],
]
BROKEN_LINE = "def broken(:"


@st.composite
def body(draw, depth: int) -> list[tuple[int | None, str]]:
    """Lines of a block body, indents relative to the block."""
    lines: list[tuple[int | None, str]] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 9 if depth < 2 else 7))
        if kind <= 7:
            lines += draw(st.sampled_from(SIMPLE_STATEMENTS))
        elif kind == 8:
            lines += [(0, "def inner():")] + _shift(draw(body(depth + 1)), 4)
        else:
            lines += [(0, f"class {draw(class_name())}:")] + _shift(draw(methods(depth + 1)), 4)
    return lines


@st.composite
def methods(draw, depth: int) -> list[tuple[int | None, str]]:
    lines: list[tuple[int | None, str]] = []
    for i in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            lines.append((0, "@torch.inference_mode()"))
        header = draw(st.sampled_from([
            "def m{}(self):", "async def m{}(self):", "def m{}(\n    self,\n):",
            "def m{}(self, n=cfg.compilation_config.max_cudagraph_capture_size):",
            "def m{}(\n    self,\n    n=cfg.compilation_config.max_cudagraph_capture_size,\n):",
        ]))
        for j, part in enumerate(header.format(i).split("\n")):
            lines.append((0 if j == 0 or part.startswith(")") else 4, part.strip()))
        lines += _shift(draw(body(depth)), 4)
        lines.append((0, ""))
    return lines


def class_name():
    return st.sampled_from(["GPUModelRunner", "MyForkModelRunner", "Worker", "MambaMixer", "Helper"])


def _shift(lines, by):
    return [(None if ind is None else ind + by, text) for ind, text in lines]


@st.composite
def module(draw, broken: bool = False) -> str:
    lines: list[tuple[int | None, str]] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            lines += [(0, f"class {draw(class_name())}(Base):")] + _shift(draw(methods(0)), 4)
        elif kind == 1:
            lines += [(0, "def function(self):")] + _shift(draw(body(0)), 4)
        elif kind == 2:
            lines += [(0, "if True:"), (4, "def conditional(self):")] + _shift(draw(body(0)), 8)
        else:
            lines += draw(st.sampled_from([
                [(0, "cfg = get_config()")],
                [(0, "min_blocks = cfg.compilation_config.max_cudagraph_capture_size or 1")],
                [(0, 'DOC = """'), (None, "def fake():"), (None, '"""')],
            ]))
        lines.append((0, ""))
    if broken:
        lines.insert(draw(st.integers(0, len(lines))), (0, BROKEN_LINE))
    return "".join(("" if ind is None else " " * ind) + text + "\n" for ind, text in lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(module())
def test_random_layout_same_outcome(text: str) -> None:
    full = outcome(text, "random.py", fast=False)
    assert not isinstance(full, type), f"the generator made a file that does not parse:\n{text}"
    assert compare(text, "random.py") is None, text
    assert unscreened(text, "random.py") == full, text
    event("findings" if full else "no findings")  # --hypothesis-show-statistics: both occur


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(module(broken=True))
def test_random_broken_layout_never_gets_findings(text: str) -> None:
    """A file that does not parse gets an error, never findings, on the fast path too.

    Weaker than identity on purpose: in a file with no finding, a syntax error outside
    the parsed functions is not seen (the documented trade-off pinned in
    test_fast_path_identity.py), so "no findings" is the other allowed outcome.
    """
    full = outcome(text, "random.py", fast=False)
    assume(isinstance(full, type))  # the broken line can land inside a string
    fast = outcome(text, "random.py", fast=True)
    assert fast == full or fast == [], (text, fast)
