"""A fix made from the core's spans, with libcst parsing only the statement that holds it.

The core says where a fix goes as spans of the intermediate form; :func:`text_edit` parses
the statement there (not the function, not the file), finds the nodes at those spans and
writes upstream's bound as a text edit. Applied, the edits give every case's documented
fix byte for byte; the fixed text parses, and a second run changes nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cgguard.static.core import ir, pyast
from cgguard.static.core.analysis import Analysis
from cgguard.static.driver.report import finding
from cgguard.static.fixes import site as sites
from cgguard.static.fixes.edit import bound_text, text_edit
from cgguard.static.rules.model import MODEL
from cgguard.static.source.edits import apply_edits
from cgguard.static.source.findings import SAFE
from cgguard.static.source.sourcetext import split_lines
from cgguard.static.workflow.ruledocs import all_rules
from tests.conftest import PRE_FIX_RUNNER_EXPR, UPSTREAM_FIXED_RUNNER_EXPR

CASES = [case for rule in all_rules() for case in rule.cases()]


def _hits(text: str, path: Path) -> list:
    program = Analysis(MODEL, str(path.parent))
    return program.hits(program.add(str(path), text))


def _fixed_once(text: str, path: Path) -> str:
    lines = split_lines(text)
    edits, claimed = [], []
    for hit in sorted(_hits(text, path), key=lambda h: (h.node.span.line, h.node.span.col)):
        fix = finding(hit, text, lines, str(path)).fix
        if fix is None or fix.applicability != SAFE:
            continue
        (edit,) = fix.edits
        if any(edit.start < end and start < edit.end for start, end in claimed):
            continue  # nested in another fix: the next round sees it
        claimed.append((edit.start, edit.end))
        edits.append(edit)
    return apply_edits(text, edits)


def _fixed(text: str, path: Path) -> str:
    for _ in range(8):
        fixed = _fixed_once(text, path)
        if fixed == text:
            return text
        ast.parse(fixed)  # every round's result is Python
        text = fixed
    raise AssertionError("still changing after 8 rounds")


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.kind}/{c.name}")
def test_the_edits_write_each_cases_documented_fix(case) -> None:
    fixed = _fixed(case.source(), case.path)
    assert fixed == case.expected_fix()
    assert _fixed_once(fixed, case.path) == fixed  # a second run changes nothing


def test_only_the_statement_is_parsed(vllm_dir: Path) -> None:
    runner = vllm_dir / "v1" / "worker" / "gpu_model_runner.py"
    installed = runner.read_text(encoding="utf-8")
    text = installed.replace(UPSTREAM_FIXED_RUNNER_EXPR, PRE_FIX_RUNNER_EXPR)
    lines = split_lines(text)
    (hit,) = _hits(text, runner)
    parsed = sites.statement_site(hit.stmt, hit.rewrite.target.span, lines)
    assert parsed is not None
    # `if 1:` and the one assignment: a few hundred bytes of a file of several hundred KB.
    assert parsed.module.code.count("\n") == 2
    assert len(parsed.module.code) < 200 < len(text) // 1000
    edit = text_edit(hit, lines)
    assert edit is not None
    assert apply_edits(text, [edit]) == installed  # upstream's 0.26.0 line
    fix = finding(hit, text, lines, str(runner)).fix
    assert fix is not None and fix.applicability == SAFE and fix.edits == (edit,)
    assert bound_text(hit, lines) in fix.description


def test_a_fix_keeps_comments_and_the_lines_around_it(tmp_path: Path) -> None:
    text = (
        "class Runner(GPUModelRunner):\n"
        "    def _init_minimal_kv_cache_for_profiling(self):\n"
        "        # the profiling cache\n"
        "        min_blocks = (\n"
        "            self.compilation_config.max_cudagraph_capture_size  # tokens\n"
        "            or 1\n"
        "        )\n"
        "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
    )
    path = tmp_path / "runner.py"
    fixed = _fixed(text, path)
    # Only the count changes; it splits at its own brackets, its comment stays behind it.
    assert fixed == text.replace(
        "            self.compilation_config.max_cudagraph_capture_size  # tokens\n",
        "            min(\n"
        "                self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size\n"
        "            )  # tokens\n",
    )


def test_an_elif_header_is_parsed_alone(tmp_path: Path) -> None:
    text = (
        "def blocks(runner, flag):\n"
        "    if flag:\n"
        "        pass\n"
        "    elif runner.compilation_config.max_cudagraph_capture_size or 1:\n"
        "        runner.cache_config.num_gpu_blocks_override = 1\n"
    )
    func = pyast.parse(text).body[0]
    assert isinstance(func, ir.FunctionDef)
    elif_ = ir.body_of(func)[0].orelse[0]  # type: ignore[union-attr]
    parsed = sites.statement_site(elif_, elif_.test.span, split_lines(text))
    assert parsed is not None
    assert "    if   runner.compilation_config.max_cudagraph_capture_size or 1: pass" in (
        parsed.module.code
    )
    found = parsed.expr(elif_.test.span)
    assert found is not None and parsed.span(found) == tuple(elif_.test.span)
