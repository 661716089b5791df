"""The 88-column promise: every line a fix writes fits in 88 columns whenever the
statement can be split, laid out as `ruff format` lays out that statement.

Checked two ways against the real `ruff format` (installed by the `test` extra):

* a generated set of ruff-formatted files (long receivers: nested `self.` chains,
  `num_blocks=` keywords inside calls, `cap * 2`, `or K` fallbacks, walrus and
  conditional expressions, tuples, trailing comments, several indentations). The
  originals are `ruff format` output, so after `cgguard fix` the whole file must
  still be exactly what `ruff format` writes;
* every rules/ case with an expected fix. Those originals are not ruff-formatted
  (their `# expect:` markers run long), so each statement the fix wrote is compared
  with `ruff format --range` of that statement alone.

Both also check that the fixed files parse and a second `cgguard fix` changes nothing.
"""

from __future__ import annotations

import ast
import difflib
import itertools
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cgguard.static.driver.run import fix_source_text
from cgguard.static.workflow.ruledocs import all_rules
from tests.conftest import run_cgguard

LIMIT = 88


def _ruff() -> str:
    here = os.path.dirname(sys.executable)
    ruff = shutil.which("ruff", path=here + os.pathsep + os.environ.get("PATH", ""))
    assert ruff, "ruff is not installed: it comes with the test extra (pip install -e '.[test]')"
    return ruff


def _ruff_format(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [_ruff(), "format", "--isolated", "--line-length", str(LIMIT), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _width(line: str) -> int:
    return len(line.rstrip("\r\n").expandtabs(4))


def _too_long(line: str) -> bool:
    """Past 88 columns although it could split. As ruff counts: a pragma comment
    (`# noqa`, `# type:` ...) takes no width; a line with one word of code (a lone
    attribute chain such as `self.a.b.c,`) has no place to split."""
    code, _, comment = line.partition("  #")
    width = _width(code) if re.match(r"\s*(noqa|type:|pyright:|pylint:)", comment) else _width(line)
    return width > LIMIT and len(code.split()) > 1


def _written(before: str, after: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(original lines, fixed lines) of each change, 0-based half-open ranges."""
    diff = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    return [((i1, i2), (j1, j2)) for tag, i1, i2, j1, j2 in diff.get_opcodes() if tag != "equal"]


# ---- the generated set -------------------------------------------------------

RECEIVERS = {
    "short": "self.compilation_config.max_cudagraph_capture_size",
    "vllm_config": "self.vllm_config.compilation_config.max_cudagraph_capture_size",
    "nested": "self.model_runner_state.holder.vllm_config.compilation_config.max_cudagraph_capture_size",
    "sizes_list": "self.compilation_config.cudagraph_capture_sizes[-1]",
    "times_two": "self.vllm_config.compilation_config.max_cudagraph_capture_size * 2",
    "local": "cc.max_cudagraph_capture_size",
}

# {cap}: the capture-size receiver; each body is one method of a model runner.
TEMPLATES = {
    "assign_or_1": "min_blocks = {cap} or 1\nself.cache_config.num_gpu_blocks_override = min_blocks",
    "assign_or_16": "self.cache_config.num_gpu_blocks_override = {cap} or 16",
    "assign_bare": "num_blocks = {cap}\nself.cache_config.num_gpu_blocks_override = num_blocks",
    "assign_comment": "min_blocks = {cap} or 1  # one block per captured token\nself.cache_config.num_gpu_blocks_override = min_blocks",
    "assign_noqa": "min_blocks = {cap} or 1  # noqa: E501\nself.cache_config.num_gpu_blocks_override = min_blocks",
    "keyword": "return builder.get_kv_cache_config_from_groups(groups, num_blocks={cap})",
    "keyword_magic_comma": (
        "return builder.get_kv_cache_config_from_groups(\n"
        "    self.vllm_config,\n"
        "    groups,\n"
        "    num_blocks={cap} or 1,\n"
        ")"
    ),
    "positional": "return get_profiling_kv_cache_config(self.vllm_config, groups, {cap})",
    "walrus": "if (min_blocks := {cap} or 1) > 0:\n    self.cache_config.num_gpu_blocks_override = min_blocks",
    "conditional": "self.cache_config.num_gpu_blocks_override = 1 if self.model_config.enforce_eager else {cap}",
    "tuple": "min_blocks, groups = {cap} or 1, self.kv_cache_groups\nself.cache_config.num_gpu_blocks_override = min_blocks",
    "annotated": "min_blocks: int = {cap} or 1\nself.cache_config.num_gpu_blocks_override = min_blocks",
    "list_and_strings": 'return builder.get_kv_cache_config_from_groups("profiling", [self.vllm_config, groups], f"{{name}}", num_blocks={cap})',
    "while_walrus": (
        "while (min_blocks := {cap} or 1) > self.limit:\n"
        "    self.cache_config.num_gpu_blocks_override = min_blocks"
    ),
}

# How deep the statement sits in the method: inside 0, 1 or 3 blocks.
BLOCKS = ["if self.use_cuda_graph:", "for _ in range(2):", "with self.lock:"]
DEPTHS = (0, 1, 3)


def _generated_source(template: str, receiver: str, depth: int) -> str:
    body = TEMPLATES[template].format(cap=RECEIVERS[receiver])
    if receiver == "local":
        body = "cc = self.compilation_config\n" + body
    lines = ["class ForkModelRunner(GPUModelRunner):", "    def profile(self, groups, builder):"]
    lines += ["    " * (2 + k) + header for k, header in enumerate(BLOCKS[:depth])]
    lines.append(textwrap.indent(body, "    " * (2 + depth)))
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The generated files, ruff-formatted, then fixed by the real CLI."""
    root = tmp_path_factory.mktemp("layout")
    for template, receiver, depth in itertools.product(TEMPLATES, RECEIVERS, DEPTHS):
        (root / f"{template}__{receiver}__{depth}.py").write_text(_generated_source(template, receiver, depth))
    formatted = _ruff_format(str(root))
    assert formatted.returncode == 0, formatted.stderr
    originals = {p.name: p.read_text() for p in sorted(root.glob("*.py"))}
    for name, text in originals.items():
        ast.parse(text, name)
    fixed = run_cgguard("fix", "--isolated", str(root))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    return root, originals


def test_generated_fixes_change_every_file(generated):
    root, originals = generated
    unchanged = [name for name, text in originals.items() if (root / name).read_text() == text]
    assert not unchanged, unchanged  # each file holds a finding with a safe fix: none may be left out


def test_generated_fixes_write_no_line_past_88_columns(generated):
    root, originals = generated
    long_lines = []
    for name, before in originals.items():
        after = (root / name).read_text()
        lines = after.splitlines()
        for _, (j1, j2) in _written(before, after):
            long_lines += [f"{name}:{j + 1}: {lines[j]}" for j in range(j1, j2) if _too_long(lines[j])]
    assert not long_lines, "\n".join(long_lines)


def test_generated_fixes_are_what_ruff_format_writes(generated):
    root, _ = generated
    check = _ruff_format("--diff", str(root))
    # The originals were ruff's own output, so any difference is the fix's layout.
    assert check.returncode == 0, check.stdout


def test_generated_fixes_parse_and_settle(generated):
    root, _ = generated
    before = {p.name: p.read_text() for p in root.glob("*.py")}
    for name, text in before.items():
        ast.parse(text, name)
    again = run_cgguard("fix", "--isolated", str(root))
    assert again.returncode == 0, again.stdout + again.stderr
    assert {p.name: p.read_text() for p in root.glob("*.py")} == before


# ---- the rules/ cases ----------------------------------------------------------

# Statements the layout does not rebuild keep their layout; only the new code splits,
# at its own brackets (lines still fit in 88 columns, but ruff would lay them out
# otherwise): a comment inside the statement (ruff would move it), and a dict display
# (docs/architecture.md: dicts, comprehensions... fall back). Each is listed with the 1-based line,
# in the fixed file, where the statement starts.
KEPT_LAYOUT = {
    ("CGG001/flagged/prerelease_byte_budget", 6),  # `# expect:` after an operand of `*`
    ("CGG001/flagged/version_dict_key_sink", 12),  # the count is a value in a dict display
    ("CGG001/flagged/version_dict_key_sink", 33),  # the same, beside another key
}


def _fixed_cases():
    for rule in all_rules():
        for case in rule.cases("flagged"):
            if case.fixed_path is not None:
                yield pytest.param(case, id=case.id)


def _statement_lines(tree: ast.Module, line: int) -> tuple[int, int]:
    """The first and last line of the innermost statement holding ``line`` (a compound
    statement: its header)."""
    best = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or not node.lineno <= line <= node.end_lineno:
            continue
        end = node.end_lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            end = body[0].lineno - 1
            if line > end:
                continue
        if best is None or node.lineno >= best[0]:
            best = (node.lineno, end)
    assert best is not None, line
    return best


@pytest.mark.parametrize("case", list(_fixed_cases()))
def test_rule_case_fixes_fit_and_follow_ruff(case, tmp_path):
    before = case.source()
    after = case.expected_fix()
    assert fix_source_text(before, str(case.path)).new_text == after
    lines = after.splitlines()
    tree = ast.parse(after)
    path = tmp_path / "case.py"
    path.write_text(after)
    changes = _written(before, after)
    assert changes
    for (i1, i2), (j1, j2) in changes:
        for j in range(j1, j2):
            assert not _too_long(lines[j]), f"{case.id}:{j + 1}: {lines[j]}"
        first, last = _statement_lines(tree, j1 + 1)
        last = max(last, _statement_lines(tree, j2)[1])
        if (case.id, first) in KEPT_LAYOUT:
            continue
        ruff = _ruff_format("--diff", "--range", f"{first}-{last}", str(path))
        assert ruff.returncode == 0, f"{case.id}: line {first}\n{ruff.stdout}"
    assert fix_source_text(after, str(case.path)).new_text == after


def test_kept_layouts_are_still_cases():
    ids = {case.id for rule in all_rules() for case in rule.cases("flagged")}
    assert {case_id for case_id, _ in KEPT_LAYOUT} <= ids
