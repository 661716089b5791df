"""A fix longer than its line is laid out as `ruff format` writes it only where its text is
shown or written: `cgguard fix`, and `cgguard check --format full|json|sarif`. The text and
GitHub formats, `--statistics` and `--add-noqa` print whether a finding is fixable, never the
fix, so they skip the layout (most of a finding's cost: docs/performance.md) and print the
same bytes as a run that lays every fix out.

Each run is the real CLI in a fresh interpreter; a wrapper counts the calls of the layout
(`cgguard.static.fixes.layout.render`) and prints the count on standard error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The fix's one-line form, `num_blocks = min(vllm_config.scheduler_config.max_num_seqs,
# compilation_config.max_cudagraph_capture_size) or 16`, is longer than 88 columns.
SOURCE = """\
def plugin_profiling_blocks(vllm_config):
    compilation_config = vllm_config.compilation_config
    num_blocks = compilation_config.max_cudagraph_capture_size or 16
    vllm_config.cache_config.num_gpu_blocks_override = num_blocks
"""

LAID_OUT = """\
    num_blocks = (
        min(
            vllm_config.scheduler_config.max_num_seqs,
            compilation_config.max_cudagraph_capture_size,
        )
        or 16
    )
"""

# Runs cgguard's CLI with the layout counted; `LAYOUT_FORCED=1` makes every run lay its
# fixes out (what a check did before it knew which formats show them).
WRAPPER = """\
import atexit, os, sys
from cgguard.static.fixes import layout
from cgguard.static.driver import context
calls = []
real = layout.render
def counted(*args, **kwargs):
    calls.append(1)
    return real(*args, **kwargs)
layout.render = counted
if os.environ.get("LAYOUT_FORCED"):
    init = context.RunContext.__init__
    def forced(self, *args, **kwargs):
        kwargs["fix_layout"] = True
        init(self, *args, **kwargs)
    context.RunContext.__init__ = forced
atexit.register(lambda: print(f"layout calls: {len(calls)}", file=sys.stderr))
from cgguard.cli import main
main(sys.argv[1:], prog_name="cgguard")
"""


def _run(tmp_path: Path, *args: str, forced: bool = False) -> tuple[str, int]:
    env = dict(os.environ, CGGUARD_JOBS="1", NO_COLOR="1")
    stdin = SOURCE if "-" in args else None
    if forced:
        env["LAYOUT_FORCED"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, *args],
        cwd=tmp_path,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    counts = [line for line in proc.stderr.splitlines() if line.startswith("layout calls: ")]
    assert len(counts) == 1, proc.stderr
    return proc.stdout, int(counts[0].split(": ")[1])


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "plugin.py").write_text(SOURCE)
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ("check", "plugin.py"),
        ("check", "--format", "github", "plugin.py"),
        ("check", "--statistics", "plugin.py"),
        ("check", "--statistics", "--format", "json", "plugin.py"),
        ("check", "--stdin-filename", "plugin.py", "-"),
    ],
    ids=["text", "github", "statistics", "statistics-json", "stdin"],
)
def test_formats_that_never_show_a_fix_skip_its_layout(project: Path, args) -> None:
    out, calls = _run(project, *args)
    forced_out, forced_calls = _run(project, *args, forced=True)
    assert calls == 0
    assert forced_calls == 1  # the wrapper does see a layout when there is one
    assert out == forced_out
    assert "plugin.py" in out or "CGG001" in out  # the finding is there


@pytest.mark.parametrize("fmt", ["full", "json", "sarif"])
@pytest.mark.parametrize("where", ["plugin.py", "-"], ids=["file", "stdin"])
def test_formats_that_show_a_fix_lay_it_out(project: Path, fmt: str, where: str) -> None:
    named = ("--stdin-filename", "plugin.py") if where == "-" else ()
    out, calls = _run(project, "check", "--format", fmt, *named, where)
    assert calls == 1
    if fmt == "json":
        (finding,) = json.loads(out)
        (edit,) = finding["fix"]["edits"]
        assert edit["content"] + "\n" == LAID_OUT.lstrip()
    else:
        assert "max_num_seqs," in out  # the argument on a line of its own


def test_fix_writes_the_laid_out_statement(project: Path) -> None:
    _, calls = _run(project, "fix", "plugin.py")
    assert calls == 1
    written = (project / "plugin.py").read_text()
    assert LAID_OUT in written


def test_add_noqa_skips_the_layout(project: Path) -> None:
    _, calls = _run(project, "check", "--add-noqa", "plugin.py")
    assert calls == 0
    assert "# noqa: CGG001" in (project / "plugin.py").read_text()
