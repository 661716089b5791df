"""The rules on real vLLM source: the installed (fixed) release and a buggy copy of it.

vLLM 0.26.0+ carries upstream's bound; the tests plant the 0.18.0-0.25.x line back into a
copy of the installed package and expect exactly one finding, fixed back to upstream's bytes.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from tests.conftest import PRE_FIX_RUNNER_EXPR, UPSTREAM_FIXED_RUNNER_EXPR, run_cgguard

RUNNER = Path("vllm/v1/worker/gpu_model_runner.py")


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}


@pytest.fixture(scope="module")
def buggy_tree(tmp_path_factory, vllm_dir) -> Path:
    """A copy of the installed vLLM package with the pre-fix line planted in its runner."""
    root = tmp_path_factory.mktemp("buggy")
    shutil.copytree(vllm_dir, root / "vllm", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    runner = root / RUNNER
    text = runner.read_text()
    assert text.count(UPSTREAM_FIXED_RUNNER_EXPR) == 1, "upstream's expression moved: update the test"
    runner.write_text(text.replace(UPSTREAM_FIXED_RUNNER_EXPR, PRE_FIX_RUNNER_EXPR))
    return root


def test_the_installed_fixed_release_has_no_findings(vllm_dir):
    n_files = sum(1 for _ in vllm_dir.rglob("*.py"))
    assert n_files > 2000
    result = run_cgguard("check", str(vllm_dir))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines() == [f"No findings in {n_files} files checked."]


def test_the_buggy_copy_has_exactly_one_finding_on_the_min_blocks_line(buggy_tree):
    runner_text = (buggy_tree / RUNNER).read_text()
    lineno = next(
        i for i, line in enumerate(runner_text.splitlines(), 1) if f"min_blocks = {PRE_FIX_RUNNER_EXPR}" in line
    )
    result = run_cgguard("check", "vllm", cwd=buggy_tree)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0] == (
        f"{RUNNER}:{lineno}:22: CGG001 `min_blocks` counts one block per captured token; "
        "use `min(self.max_num_reqs, <capture size>) or 1`"
    )
    assert lines[1].startswith("Found 1 finding (1 fixable with `cgguard fix`) in ")


def test_fix_restores_upstreams_form_and_touches_nothing_else(buggy_tree, vllm_dir, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(buggy_tree, tree)
    before = _snapshot(tree)

    diff = run_cgguard("fix", "--diff", "vllm", cwd=tree)
    assert diff.returncode == 1  # it would change a file
    assert "\nWould fix 1 finding. No findings would remain in " in diff.stdout
    assert _snapshot(tree) == before, "--diff must write nothing"
    assert diff.stdout.count("+++ b/") == 1

    result = run_cgguard("fix", "vllm", cwd=tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Fixed 1 finding." in result.stdout
    after = _snapshot(tree)
    changed = [name for name in after if after[name] != before[name]]
    assert changed == [str(RUNNER)]
    # The fixed runner is byte-for-byte the installed upstream file.
    assert after[changed[0]] == (vllm_dir / RUNNER.relative_to("vllm")).read_bytes()

    # A second run changes nothing and finds nothing.
    again = run_cgguard("fix", "vllm", cwd=tree)
    assert again.returncode == 0
    assert "Fixed 0 findings." in again.stdout
    assert _snapshot(tree) == after


def test_fixed_expression_equals_upstreams_as_syntax():
    fixed = ast.dump(ast.parse("min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size) or 1"))
    upstream = ast.dump(ast.parse(UPSTREAM_FIXED_RUNNER_EXPR.strip()))
    assert fixed == upstream
