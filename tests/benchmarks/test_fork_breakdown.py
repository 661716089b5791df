"""benchmarks/fork_breakdown.py prints where a fork's checkout costs more than a package.

A small work folder stands in for run.py's corpora: a package with the bug (``tree-buggy/``)
and the same files as a fork's checkout (``fork/``: ``pyproject.toml`` and ``git init`` at
its top). No time is asserted: the rows, the ratio to the package's row, and the findings.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import BUGGY_RUNNER, REPO

SCRIPT = REPO / "benchmarks" / "fork_breakdown.py"


def _work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    package = work / "tree-buggy" / "worker"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "gpu_model_runner.py").write_text(BUGGY_RUNNER)
    fork = work / "fork"
    shutil.copytree(work / "tree-buggy", fork / "vllm")
    (fork / "pyproject.toml").write_text('[project]\nname = "fork"\n')
    subprocess.run(["git", "init", "-q", str(fork)], check=True)
    return work


def test_prints_each_row_with_its_ratio_to_the_package_and_its_findings(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--work", str(_work(tmp_path)), "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = {}
    for line in done.stdout.splitlines()[2:]:
        name, cpu, ratio, findings = (c.strip() for c in line.strip("|").split("|"))
        rows[name] = (float(cpu.removesuffix(" s")), float(ratio.removesuffix("×")), int(findings))
    assert list(rows) == [
        "package",
        "fork",
        "fork, no importer parsed",
        "fork, sources with a sink word only",
    ]
    assert rows["package"][1] == 1.0
    package = rows["package"][0]
    for cpu, ratio, _ in rows.values():
        # the ratio is the row's median over the package's, to the rounding of the three cells
        low = (cpu - 0.005) / (package + 0.005) - 0.005
        high = (cpu + 0.005) / max(package - 0.005, 1e-9) + 0.005
        assert low <= ratio <= high
    assert {name: row[2] for name, row in rows.items()} == dict.fromkeys(rows, 1)


def test_a_work_folder_without_the_corpora_says_what_to_run(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--work", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert re.fullmatch(
        r"fork_breakdown: .* has no fork, tree-buggy/: run benchmarks/run\.py once to build "
        r"the corpora\n",
        done.stderr,
    )
    assert done.stdout == ""


def test_the_command_runs_with_the_cyclic_collector_off_as_the_breakdown_times_it():
    # fork_breakdown.py turns the collector off in its child because the command does: its
    # full passes over the modules a fork's check keeps would be timed as the fork's cost.
    probe = (
        "import gc, cgguard.cli as cli\n"
        "cli.main = lambda **kw: print('collector on:', gc.isenabled(), flush=True)\n"
        "cli.run()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout == "collector on: False\n", done.stderr
    assert "gc.disable()" in SCRIPT.read_text(encoding="utf-8")
