"""The fast path finds exactly what the unoptimised path finds (issue 5).

``check_source(text, path, fast=True)`` skips files without a capture-size
substring, cuts out the functions holding one (by indentation) and parses with
libcst only those that also hold a block-count word (the screen);
``fast=False`` parses the whole file with libcst. Both must give the same outcome
on every file: the same findings (fixes and messages included) or the same
exception type. The one allowed difference: where the fast path parses nothing
(no capture-size substring, or no function passing the screen) it yields no
findings even where the full parse fails (docs/robustness.md).

The corpus is real: every .py file of the installed vLLM package, its runner with
the old formula planted, and synthetic files shaped to trip indentation cutting.
The screen is also checked on its own: the fast path without it equals the full
path on every vLLM file holding a capture size.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cgguard.static.driver import run as static_run
from cgguard.static.driver import sourcefile
from cgguard.static.driver import screen
from cgguard.static.driver.check import check_source
from cgguard.static.driver.prefilter import might_match
from tests.conftest import PRE_FIX_RUNNER_EXPR, UPSTREAM_FIXED_RUNNER_EXPR

RUNNER_REL = Path("v1") / "worker" / "gpu_model_runner.py"
CAP = "self.compilation_config.max_cudagraph_capture_size"
# The planted bug: a block-named local is reported where it is made once its count
# leaves the function (issue 17: such a local is no sink by itself), here by a call.
BUG = f"min_blocks = {CAP} or 1; use(min_blocks)"


def outcome(text: str, path: str, *, fast: bool):
    """Findings, or the exception type the check raised."""
    try:
        return check_source(text, path, fast=fast)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return type(exc)


def compare(text: str, path: str) -> str | None:
    """None when both paths agree; else one line saying how they differ."""
    full = outcome(text, path, fast=False)
    fast = outcome(text, path, fast=True)
    if fast == full:
        return None
    if isinstance(full, type) and fast == [] and not might_match(text):
        return None  # skipped by the prefilter: nothing there for any rule
    return f"{path}: fast={_show(fast)} full={_show(full)}"


def unscreened(text: str, path: str):
    """The fast path with the block-count screen off: every cut function is parsed.

    Reaches into the screen's internals on purpose, to check that the screen (which
    decides what libcst parses) loses nothing.
    """
    saved = screen.mentions_sink_word
    screen.mentions_sink_word = lambda text: True
    try:
        return outcome(text, path, fast=True)
    finally:
        screen.mentions_sink_word = saved


def _show(result) -> str:
    if isinstance(result, type):
        return result.__name__
    return "[" + ", ".join(f"{f.line}:{f.col} {f.code}" for f in result) + "]"


def _vllm_files(vllm_dir: Path) -> list[Path]:
    return sorted(p for p in vllm_dir.rglob("*.py") if "__pycache__" not in p.parts)


def _buggy_runner(vllm_dir: Path) -> str:
    text = (vllm_dir / RUNNER_REL).read_text(encoding="utf-8")
    assert text.count(UPSTREAM_FIXED_RUNNER_EXPR) == 1, "upstream's formula moved: update the test corpus"
    return text.replace(UPSTREAM_FIXED_RUNNER_EXPR, PRE_FIX_RUNNER_EXPR)


# ---- the installed vLLM package ------------------------------------------------


def test_every_vllm_file_same_outcome(vllm_dir: Path) -> None:
    files = _vllm_files(vllm_dir)
    assert len(files) > 1000, f"only {len(files)} files under {vllm_dir}"
    mismatches, parsed_fast = [], 0
    for file in files:
        text = sourcefile.decode(sourcefile.read_bytes(str(file))).text
        if not might_match(text):
            assert check_source(text, str(file)) == []  # the allowed difference: nothing parsed
            continue
        diff = compare(text, str(file))
        if diff:
            mismatches.append(diff)
        parsed_fast += might_match(text)
    assert not mismatches, "fast and full paths differ:\n" + "\n".join(mismatches)
    # The comparison covered files the fast path really cuts (not only skipped ones).
    assert parsed_fast >= 20, parsed_fast


def test_screen_loses_nothing_on_vllm(vllm_dir: Path) -> None:
    """On every vLLM file holding a capture size, the screened fast path equals the unscreened one."""
    mismatches, compared = [], 0
    for file in _vllm_files(vllm_dir):
        text = sourcefile.decode(sourcefile.read_bytes(str(file))).text
        if not might_match(text):
            continue  # no needle: the flow has nothing to start from
        compared += 1
        full, everything = outcome(text, str(file), fast=False), unscreened(text, str(file))
        if full != everything:
            mismatches.append(f"{file}: full={_show(full)} unscreened={_show(everything)}")
    assert compared >= 20, compared
    assert not mismatches, "\n".join(mismatches)


def test_buggy_runner_same_findings(vllm_dir: Path) -> None:
    text = _buggy_runner(vllm_dir)
    path = str(vllm_dir / RUNNER_REL)
    full = check_source(text, path, fast=False)
    assert check_source(text, path, fast=True) == full
    planted = f"min_blocks = {PRE_FIX_RUNNER_EXPR}"
    assert [(f.code, f.line) for f in full] == [("CGG001", text[: text.index(planted)].count("\n") + 1)]


def test_tree_run_equals_full_path_per_file(vllm_dir: Path, tmp_path: Path) -> None:
    """What `cgguard check` runs (byte prefilter, forked split) equals the full path file by file."""
    tree = tmp_path / "vllm"
    for file in _vllm_files(vllm_dir):
        dest = tree / file.relative_to(vllm_dir)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(file.read_bytes())
    (tree / RUNNER_REL).write_text(_buggy_runner(vllm_dir), encoding="utf-8")

    result = static_run.check_paths([str(tree)])
    expected = {}
    for file in sorted(tree.rglob("*.py")):
        text = sourcefile.decode(sourcefile.read_bytes(str(file))).text
        # Without a capture size nothing is parsed (the allowed difference).
        expected[str(file)] = outcome(text, str(file), fast=False) if might_match(text) else []
    got = {r.path: (type(r.error) if r.error else r.findings) for r in result.files}
    assert set(got) == set(expected)
    diffs = [f"{p}: run={_show(got[p])} full={_show(expected[p])}" for p in expected if got[p] != expected[p]]
    assert not diffs, "\n".join(diffs)
    assert [(f.code, Path(f.path).relative_to(tree)) for f in result.findings] == [("CGG001", RUNNER_REL)]


# ---- synthetic files shaped to trip indentation cutting -------------------------

CASES = {
    "nested_def": (1, f"""
        class Runner:
            def outer(self):
                def inner():
                    {BUG}
                    self.cache_config.num_gpu_blocks_override = min_blocks
                return inner
    """),
    "module_level": (1, f"""
        import os
        cfg = get_config()
        min_blocks = cfg.compilation_config.max_cudagraph_capture_size or 1

        def unrelated():
            return os.getcwd()
    """),
    "module_level_and_function": (2, f"""
        min_blocks = cfg.compilation_config.max_cudagraph_capture_size or 1

        class Runner:
            def f(self):
                {BUG}
    """),
    "column0_string_before_bug": (1, f'''
        class Runner:
            def f(self):
                doc = """
        not indented
        at all
        """
                {BUG}
                return doc
    '''),
    "column0_string_holding_the_pattern": (0, f'''
        class Patch:
            def apply(self, text):
                old = """
        {BUG}
        """
                return text.replace(old, "")
    '''),
    "string_with_fake_def": (1, f'''
        class Runner:
            def f(self):
                s = """
              def fake():
                """
                {BUG}
                return s

            def g(self):
                return 1
    '''),
    "decorators": (1, f"""
        import functools

        class Runner:
            @functools.lru_cache
            @staticmethod
            def g():
                return 1

            @torch.inference_mode()
            def _init_minimal_kv_cache_for_profiling(self):
                {BUG}
                self.cache_config.num_gpu_blocks_override = min_blocks
    """),
    "class_inside_function": (1, f"""
        def make_runner(base):
            class PluginModelRunner(base):
                def _init_minimal_kv_cache_for_profiling(self):
                    {BUG}
                    self.cache_config.num_gpu_blocks_override = min_blocks
            return PluginModelRunner
    """),
    "multiline_signature": (1, f"""
        class Runner:
            def f(
                self,
                x: int = 1,
            ) -> None:
                {BUG}
    """),
    "dedented_call_arguments": (1, f"""
        class Runner:
            def f(self):
                x = foo(
        1,
        )
                {BUG}
                return x
    """),
    "backslash_continuation_at_column0": (1, f"""
        class Runner:
            def f(self):
                x = 1 + \\
        2
                {BUG}
                return x
    """),
    "comment_at_column0_in_body": (1, f"""
        class Runner:
            def f(self):
                x = 1
        # a comment at column 0
                {BUG}
                return x
    """),
    "async_and_one_line_def": (1, f"""
        class Runner:
            async def f(self):
                {BUG}
            def g(self): return {CAP}
    """),
    "needle_in_comment_and_docstring": (0, f'''
        """Module about {CAP}."""

        def f():
            # {BUG}
            return 1
    '''),
    "per_token_buffer_is_silent": (0, f"""
        class Runner:
            def __init__(self):
                max_size = {CAP}
                self.table = [0] * (max_size + 1)
    """),
    "upstream_fix_is_silent": (0, f"""
        class Runner:
            def f(self):
                min_blocks = {UPSTREAM_FIXED_RUNNER_EXPR}
    """),
    # Cross-method aliases are outside the rule (0 on both paths); the class facts
    # the fast path builds from text must still match the full path's.
    # An attribute set from the capture size in one method and read as the block count in
    # another (issue 17, members): reported at the assignment.
    "self_attr_alias_across_methods": (1, f"""
        class MyModelRunner:
            def __init__(self):
                self.cap = {CAP}

            def profile(self):
                self.cache_config.num_gpu_blocks_override = self.cap or 1
    """),
    "stored_on_object_for_later": (1, f"""
        class MambaMixer:
            def __init__(self, vllm_config):
                self.profiling_rows = vllm_config.compilation_config.max_cudagraph_capture_size
    """),
    "max_with_requests_cgg002": (1, f"""
        class Runner:
            def f(self):
                min_blocks = max({CAP} or 1, self.max_num_reqs)
                return min_blocks
    """),
    "conditional_def": (1, f"""
        if True:
            def f(self):
                {BUG}
                self.cache_config.num_gpu_blocks_override = min_blocks
    """),
    "walrus_and_try_finally": (1, f"""
        class Runner:
            def f(self):
                saved = self.cache_config.num_gpu_blocks_override
                try:
                    if (n := {CAP} or 1) > 0:
                        self.cache_config.num_gpu_blocks_override = n
                finally:
                    self.cache_config.num_gpu_blocks_override = saved
    """),
    "non_ascii_before_on_line": (1, f"""
        class Runner:
            def f(self):
                note = "µ-batch"; {BUG}
    """),
    "tabs": (1, "class Runner:\n\tdef f(self):\n\t\t" + BUG + "\n\t\treturn min_blocks\n"),
    "crlf": (1, f"class Runner:\r\n    def f(self):\r\n        {BUG}\r\n        return min_blocks\r\n"),
    "form_feed_between_defs": (1, f"class Runner:\n    def g(self):\n        return 1\n\x0c\n    def f(self):\n"
                               f"        {BUG}\n        return min_blocks\n"),
    # Taints carried through statements without a capture size must survive.
    "chain_without_needles": (1, f"""
        class Runner:
            def f(self):
                cap = {CAP}
                n = cap or 1
                m = n
                self.cache_config.num_gpu_blocks_override = m
    """),
    "parameter_fallback_to_keyword": (1, f"""
        class Runner:
            def f(self, n=None):
                n = n or {CAP}
                build(num_blocks=n)
    """),
    # Loop-carried and closure flows are outside the rule (0), on every path alike.
    # The second iteration stores the capture size (issue 17: loops to a fixed point).
    "loop_carried": (1, f"""
        class Runner:
            def f(self):
                n = 1
                for i in range(2):
                    self.cache_config.num_gpu_blocks_override = n
                    n = {CAP}
    """),
    "closure": (0, f"""
        class Runner:
            def f(self):
                cap = {CAP}
                def g():
                    self.cache_config.num_gpu_blocks_override = cap
                g()
    """),
    # A capture size on a def, decorator or class line (the def line makes the chunk);
    # a capture-size default makes the parameter carry it.
    "capture_size_parameter_default": (1, f"""
        class MyRunner:
            def f(self, n=cfg.compilation_config.max_cudagraph_capture_size):
                min_blocks = n or 1
                return min_blocks
    """),
    "capture_size_default_multiline_signature": (1, f"""
        class MyRunner:
            def f(
                self,
                n=cfg.compilation_config.max_cudagraph_capture_size,
            ):
                min_blocks = n or 1
                return min_blocks
    """),
    "capture_size_default_nested_function": (1, f"""
        def outer(cfg):
            def f(n=cfg.compilation_config.max_cudagraph_capture_size):
                min_blocks = n or 1
                return min_blocks
            return f
    """),
    "capture_size_in_decorator": (1, f"""
        class MyRunner:
            @deco(cfg.compilation_config.max_cudagraph_capture_size)
            def f(self):
                {BUG}
    """),
    "bug_on_the_def_line": (1, f"""
        class MyRunner:
            def f(self): {BUG}
    """),
    "capture_size_in_lambda_default": (0, f"""
        class MyRunner:
            def f(self):
                g = lambda n={CAP}: n
                min_blocks = g() or 1
    """),
    "capture_size_on_class_line": (1, f"""
        class MyRunner(Base, size={CAP}):
            def f(self):
                {BUG}
    """),
    # Class facts (runner or not, which self attributes exist) pick the request count
    # the fix uses; the fast path reads them from text found by indentation.
    # Needles outside functions: Python's parser cuts the file; the class or module
    # scope is parsed whole only when it could hold a finding itself.
    "class_field_needle_and_method_bug": (1, f"""
        class Runner:
            max_cudagraph_capture_size: int = 512
            num_gpu_blocks_override: int | None = None

            def f(self):
                {BUG}
                return min_blocks
    """),
    "class_scope_flow": (1, f"""
        class Runner:
            max_cudagraph_capture_size = 512
            num_blocks = compilation_config.max_cudagraph_capture_size or 1
    """),
    "module_scope_flow": (1, f"""
        from cfg import compilation_config
        num_blocks = compilation_config.max_cudagraph_capture_size or 1
    """),
    "class_hidden_by_column0_string": (1, f'''
        class MyRunner:
            def g(self):
                s = """
        x
        """
                return s

            def f(self):
                {BUG}
    '''),
    "class_hidden_by_dedented_bracket": (1, f"""
        class MyRunner:
            def g(self):
                return dict(
        a=1,
                )

            def f(self):
                {BUG}
    """),
    "self_attr_after_column0_string": (1, f'''
        class Worker:
            def f(self):
                {BUG}

            def g(self):
                s = """
        x
        """
                self.max_num_seqs = 4
    '''),
    "fake_class_header_in_string": (1, f'''
        class Worker:
            doc = """
          class FakeRunner:
            """

            def f(self):
                {BUG}
    '''),
    "fake_def_header_in_string": (1, f'''
        class MyRunner:
            def f(self):
                x = """
              def g(self, min_blocks=1):
                """
                {BUG}
                return x
    '''),
}

# Found by this test on 2026-11-29: the fast path finds the enclosing class by
# indentation, so a column-0 string or bracket line earlier in the class hid it (or a
# class header inside a string faked one). Fixed in the driver (then scan.py): a file with findings is
# settled on the full parse, so the class facts always come from the real class.

BROKEN = {
    # The needle's own function does not parse: both paths must fail.
    "syntax_error_in_needle_function": f"""
        class Runner:
            def f(self):
                {BUG}
                return (
    """,
    # The needle's function parses but another part of the file does not.
    "syntax_error_elsewhere": f"""
        class Runner:
            def f(self):
                {BUG}
                return min_blocks

        def broken(:
            pass
    """,
    # Another part does not parse and the matched function holds nothing: the fast
    # path parses only that function (found by the random-layout test).
    "syntax_error_elsewhere_no_hit": f"""
        def function(self):
            cap = {CAP}
        def broken(:
            n = cap or 1
            self.cache_config.num_gpu_blocks_override = n
    """,
    "syntax_error_elsewhere_def_line_needle": f"""
        class MyRunner:
            def f(self, n={CAP}):
                return n
        def broken(:
            pass
    """,
    "bad_indent_elsewhere": f"""
        class Runner:
            def f(self):
                {BUG}

              x = 1
    """,
}


def _text(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n") if "\t" not in src and "\r" not in src else src


@pytest.mark.parametrize("name", sorted(CASES))
def test_synthetic_same_findings(name: str) -> None:
    expected_count, src = CASES[name]
    text = _text(src)
    full = check_source(text, f"{name}.py", fast=False)
    assert check_source(text, f"{name}.py", fast=True) == full, compare(text, f"{name}.py")
    assert unscreened(text, f"{name}.py") == full
    # The case really exercises what it is meant to (a finding where a bug is planted).
    assert len(full) == expected_count, [(f.line, f.code, f.message) for f in full]


# Found by this test on 2026-11-29: the fast path parsed only the needle's function,
# so a syntax error elsewhere went unseen (exit 1 instead of 2). Fixed the same way:
# findings are settled on the full parse.


# The documented trade-off (docs/robustness.md, "Only what can hold a finding is
# parsed"): a syntax error outside the parsed functions of a file with no finding is
# not seen by the fast path. Pinned by its own test below, not hidden.
_NO_HIT_CASES = {"syntax_error_elsewhere_no_hit", "syntax_error_elsewhere_def_line_needle"}


@pytest.mark.parametrize("name", sorted(_NO_HIT_CASES))
def test_syntax_error_outside_the_parsed_functions_of_a_clean_file_is_not_seen(name: str) -> None:
    text = _text(BROKEN[name])
    full = outcome(text, f"{name}.py", fast=False)
    assert isinstance(full, type) and issubclass(full, SyntaxError)
    assert outcome(text, f"{name}.py", fast=True) == []


@pytest.mark.parametrize("name", sorted(set(BROKEN) - _NO_HIT_CASES))
def test_unparsable_file_fails_on_both_paths(name: str) -> None:
    text = _text(BROKEN[name])
    full = outcome(text, f"{name}.py", fast=False)
    assert full is SyntaxError or (isinstance(full, type) and issubclass(full, SyntaxError))
    assert outcome(text, f"{name}.py", fast=True) == full, compare(text, f"{name}.py")
