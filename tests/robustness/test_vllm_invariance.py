"""Invariance on real code: `cgguard fix` over a copy of the whole installed vLLM
package (thousands of files) changes only the one file carrying a planted bug.

Every file without a finding stays byte for byte (Python or not, mode included),
the changed file parses, and a second run changes nothing. The same holds when every
source file of the copy uses CRLF line endings.
"""

from __future__ import annotations

import ast
import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.conftest import PRE_FIX_RUNNER_EXPR, UPSTREAM_FIXED_RUNNER_EXPR, installed_vllm_dir
from tests.robustness.conftest import assert_no_traceback, cgguard

pytestmark = pytest.mark.needs_vllm

RUNNER = "vllm/v1/worker/gpu_model_runner.py"


def _state(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file (and link) under root: its bytes and mode, by relative path."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = (os.readlink(path).encode(), -1)
            else:
                out[rel] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


def _copy(dest: Path, crlf: bool) -> Path:
    src = installed_vllm_dir()
    shutil.copytree(src, dest / "vllm", ignore=shutil.ignore_patterns("*.so", "__pycache__"), symlinks=True)
    if crlf:
        for path in (dest / "vllm").rglob("*.py"):
            data = path.read_bytes()
            path.write_bytes(data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    runner = dest / RUNNER
    text = runner.read_bytes().decode()
    nl = "\r\n" if crlf else "\n"
    fixed_expr = UPSTREAM_FIXED_RUNNER_EXPR.replace("\n", nl)
    assert text.count(fixed_expr) == 1, "upstream's expression moved: update the test"
    runner.write_bytes(text.replace(fixed_expr, PRE_FIX_RUNNER_EXPR).encode())
    return dest


@pytest.mark.parametrize("crlf", [False, True], ids=["as-installed", "all-crlf"])
def test_fix_over_all_of_vllm_changes_only_the_planted_bug(tmp_path, crlf):
    root = _copy(tmp_path, crlf)
    before = _state(root)
    n_py = sum(1 for rel in before if rel.endswith(".py"))
    assert n_py > 2000

    check = cgguard("check", "vllm", cwd=root)
    assert_no_traceback(check)
    assert check.returncode == 1, check.stdout + check.stderr
    with_findings = {line.split(":", 1)[0] for line in check.stdout.splitlines() if ": CGG" in line}
    assert with_findings == {RUNNER}

    fixed = cgguard("fix", "vllm", cwd=root)
    assert_no_traceback(fixed)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert fixed.stderr == ""
    assert f"Fixed 1 finding. No findings remain in {n_py} files checked." in fixed.stdout
    after = _state(root)

    assert sorted(after) == sorted(before)  # nothing added (no temp files), nothing lost
    changed = sorted(rel for rel in before if after[rel] != before[rel])
    assert changed == [RUNNER]
    assert set(changed) <= with_findings
    new_bytes, mode = after[RUNNER]
    assert mode == before[RUNNER][1]
    ast.parse(new_bytes)
    # The fix is upstream's own text, in the file's own line endings.
    original = (installed_vllm_dir() / "v1/worker/gpu_model_runner.py").read_bytes()
    if crlf:
        original = original.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    assert new_bytes == original

    again = cgguard("fix", "vllm", cwd=root)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Fixed 0 findings." in again.stdout
    assert _state(root) == after
