"""The helper process that lists a project's modules naming a sink word while the run finds
its files (``cgguard/static/driver/prescan.py``). Real processes: the helper is forked from
the test's own process, and what this process reads is counted here (the helper's reads,
in another process, are not)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cgguard.static.core import project
from cgguard.static.driver import parallel, prescan
from cgguard.static.driver.context import RunContext
from cgguard.static.driver.run import check_paths
from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS
from tests.static.test_sink_reach import HELPERS, _fork

# What the fork of test_sink_reach holds that names a sink word.
NAMING = ["helpers.py"]
# A runner with a finding the fix rewrites, that imports from its project (so its check asks
# for the project's sink callees).
RUNNER = """from fork.helpers import log_blocks


class Runner:
    def __init__(self, scheduler_config, cache_config, compilation_config):
        self.max_num_reqs = scheduler_config.max_num_seqs
        self.cache_config = cache_config
        self.compilation_config = compilation_config

    def profile(self):
        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1
        log_blocks(self.cache_config, min_blocks)
        self.cache_config.num_gpu_blocks_override = min_blocks
"""


def _sink_modules(context: RunContext, root: Path) -> list[str]:
    reach = context.sink_reach(str(root), CAPTURE_SIZE_BLOCKS)
    return [os.path.basename(p) for p in reach.sink_modules()]


def test_the_helper_lists_what_the_run_would_read_and_the_run_reads_nothing(
    tmp_path, monkeypatch, project_reads
):
    _fork(tmp_path)
    monkeypatch.setenv("CGGUARD_JOBS", "2")  # a second process, whatever the machine's load
    context = RunContext()
    context.list_ahead([str(tmp_path)])
    helper = context.prescan
    assert helper is not None and helper._pid is not None
    pid = helper._pid
    try:
        assert _sink_modules(context, tmp_path) == NAMING
        assert project_reads == []  # the helper read them
    finally:
        context.close()
    with pytest.raises(ChildProcessError):  # reaped: no process is left behind
        os.waitpid(pid, os.WNOHANG)
    # The same list as this process finds reading every file itself.
    assert _sink_modules(RunContext(), tmp_path) == NAMING
    assert len(project_reads) == len(project.project_python_files(str(tmp_path)))


def test_a_helper_that_dies_leaves_the_reading_to_the_run(tmp_path, monkeypatch, project_reads):
    _fork(tmp_path)
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    # The helper is a fork of this process: it dies on its first read, answering nothing.
    monkeypatch.setattr(prescan, "read_bytes", lambda path: os._exit(3))
    context = RunContext()
    context.list_ahead([str(tmp_path)])
    assert context.prescan is not None
    try:
        assert _sink_modules(context, tmp_path) == NAMING
    finally:
        context.close()
    assert "helpers.py" in project_reads and len(project_reads) == len(
        project.project_python_files(str(tmp_path))
    )


def test_a_helper_never_asked_is_stopped_when_the_run_ends(tmp_path, monkeypatch):
    _fork(tmp_path)
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    monkeypatch.setattr(prescan, "project_python_files", lambda root: os.pause())  # never ends
    context = RunContext()
    context.list_ahead([str(tmp_path)])
    helper = context.prescan
    assert helper is not None and helper._pid is not None
    pid = helper._pid
    assert pid in parallel.HELPERS
    context.close()
    assert pid not in parallel.HELPERS
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize(
    "layout",
    [
        "one process",
        "a folder of the project",
        "a file of the project",
        "two projects",
        "no project",
        "nothing following imports",
    ],
)
def test_no_helper_where_it_cannot_pay(tmp_path, monkeypatch, layout):
    """No second process where one is not allowed; none where the run checks part of a
    project (reading all of it ahead would not pay), files of two projects or of none,
    or where no selected rule follows imports."""
    _fork(tmp_path / "a")
    monkeypatch.setenv("CGGUARD_JOBS", "1" if layout == "one process" else "2")
    paths = [str(tmp_path / "a")]
    selected = None
    if layout == "a folder of the project":
        paths = [str(tmp_path / "a" / "fork")]
    elif layout == "a file of the project":
        paths = [str(tmp_path / "a" / "fork" / "caller.py")]
    elif layout == "two projects":
        _fork(tmp_path / "b")
        paths.append(str(tmp_path / "b" / "fork"))
    elif layout == "no project":
        (tmp_path / "plain").mkdir()
        (tmp_path / "plain" / "x.py").write_text("x = 1\n")
        paths = [str(tmp_path / "plain" / "x.py")]
    elif layout == "nothing following imports":
        selected = {"CGG003"}.__contains__
    context = RunContext(selected)
    context.list_ahead(paths)
    try:
        assert context.prescan is None
    finally:
        context.close()
    if layout != "one process":  # the same paths, the tree's own project: a helper
        monkeypatch.setenv("CGGUARD_JOBS", "2")
        context = RunContext()
        context.list_ahead([str(tmp_path / "a")])
        assert context.prescan is not None
        context.close()


def test_a_shared_run_with_the_helper_finds_what_one_process_finds(tmp_path, monkeypatch):
    _fork(tmp_path)
    for i in range(30):  # enough files for the run to share them
        (tmp_path / "fork" / f"plain_{i}.py").write_text(f"import os\n\nVALUE = {i}\n")
    found = {}
    for jobs in ("1", "2"):
        monkeypatch.setenv("CGGUARD_JOBS", jobs)
        run = check_paths([str(tmp_path)])
        found[jobs] = [
            (os.path.basename(f.path), x.line, x.code) for f in run.files for x in f.findings
        ]
    assert found["1"] == found["2"] and found["1"]


def test_a_helper_is_alive_until_it_ends():
    """A helper counts as a busy CPU of the run's own while it lives (parallel.busy_cpus),
    not once it has ended, reaped or not."""
    assert parallel._alive(os.getpid())
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    for _ in range(1000):  # ended, not reaped yet: a zombie
        if not parallel._alive(pid):
            break
        time.sleep(0.001)
    assert not parallel._alive(pid)
    os.waitpid(pid, 0)
    assert not parallel._alive(pid)  # reaped: gone from /proc


def test_a_fix_in_place_takes_the_helpers_list_and_writes_what_one_process_writes(
    tmp_path, monkeypatch, project_reads
):
    """``cgguard fix PATH`` fixes file by file in one process; the helper lists the modules
    naming a sink word meanwhile, and this process reads none of them for it."""
    from cgguard.cli import _fix_in_place
    from cgguard.static.workflow.config import Settings

    written = {}
    for jobs in ("1", "2"):
        root = tmp_path / jobs
        pkg = _fork(root)
        # No sink callee (as in vLLM): the modules naming a sink word are read once.
        (pkg / "helpers.py").write_text(HELPERS.split("\n\n\n")[1])
        (pkg / "middle.py").unlink()
        (pkg / "caller.py").unlink()
        (pkg / "runner.py").write_text(RUNNER)
        monkeypatch.setenv("CGGUARD_JOBS", jobs)
        project_reads.clear()
        run = _fix_in_place([str(root)], None, Settings())
        assert run.fixed == 1
        written[jobs] = {p.name: p.read_text() for p in (root / "fork").glob("*.py")}
        if jobs == "2":
            assert project_reads == []  # the helper read them
        else:  # read here: those not screened yet when the runner asked for them
            assert project_reads == ["runner.py", "token_buffer.py", "warmup.py"]
    assert written["1"] == written["2"]
    assert "min(self.max_num_reqs, self.compilation_config" in written["2"]["runner.py"]


def test_the_runs_own_live_helper_is_no_busy_cpu(monkeypatch):
    """Three tasks runnable: this process, its helper, and a kernel thread the helper's
    reading woke. While the helper lives, no CPU is busy with another's work; once it has
    ended, two are."""
    import builtins
    import io

    real_open = builtins.open

    def fake_open(path, *args, **kwargs):
        if path == "/proc/loadavg":
            return io.BytesIO(b"1.00 0.90 0.80 3/120 4242\n")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    helper = os.fork()
    if helper == 0:
        os.pause()
        os._exit(0)
    try:
        monkeypatch.setattr(parallel, "HELPERS", {helper})
        assert parallel.busy_cpus() == 0
    finally:
        os.kill(helper, 9)
        os.waitpid(helper, 0)
    assert parallel.busy_cpus() == 2
