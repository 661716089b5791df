"""A run over a fork's checkout reads the project's modules naming a sink word in a helper
process while discovery runs (``driver/prefetch.py``, issue 36): the run takes its answer,
and no process of the run reads a project file for it again. The answer is what the core
finds itself; a folder below a project's root, a file, a failed or a slow helper change
nothing but the cost, and no helper outlives the run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cgguard.static.core import project
from cgguard.static.core.modulefiles import naming_a_sink, project_files, read_bytes
from cgguard.static.driver import prefetch
from cgguard.static.driver.context import RunContext
from cgguard.static.driver.run import check_paths, fix_paths
from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS
from tests.static.test_sink_reach import HELPERS, _fork


def _no_child_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _started(monkeypatch) -> list[prefetch.SinkModules | None]:
    """The helpers the run starts (None where it starts none), recorded."""
    started: list[prefetch.SinkModules | None] = []
    real = prefetch.SinkModules.start.__func__  # type: ignore[attr-defined]

    def start(cls, jobs):
        helper = real(cls, jobs)
        started.append(helper)
        return helper

    monkeypatch.setattr(prefetch.SinkModules, "start", classmethod(start))
    return started


def test_the_helper_finds_what_the_core_finds(tmp_path, monkeypatch):
    pkg = _fork(tmp_path)
    # A builder's definition names its own name: no sink word there (after ``def``).
    (pkg / "builder.py").write_text("def get_kv_cache_config_from_groups(a, b, c):\n    pass\n")
    (pkg / "notes.py").write_text("# num_gpu_blocks_override, in a comment: named all the same\n")
    monkeypatch.setenv("CGGUARD_JOBS", "2")  # a second core, whatever the machine's load
    monkeypatch.setattr(prefetch, "MIN_WAIT", 30.0)  # a test process forks slowly: wait
    context = RunContext()
    root = str(tmp_path)
    context.read_sink_modules([root])
    context.take_sink_modules()
    found = context.sink_modules[(root, CAPTURE_SIZE_BLOCKS.name)]
    names = CAPTURE_SIZE_BLOCKS.mentions_sink_word
    assert found == naming_a_sink(project_files(root), names, {}, read_bytes)
    assert {Path(p).name for p in found} == {"helpers.py", "notes.py"}
    # The core's own reading, without the helper, says the same.
    reach = (
        RunContext()
        .program(root, CAPTURE_SIZE_BLOCKS)
        .sink_reach(CAPTURE_SIZE_BLOCKS.sink_words, names)
    )
    assert reach.sink_modules() == found
    assert _no_child_left()


def test_a_checkout_run_reads_no_file_again_for_them(tmp_path, tmp_path_factory, monkeypatch):
    """With the helper's answer, the core reads no project file's bytes for the modules
    naming a sink word (before, a file that needed them read every file of the project),
    and the findings are those of a run without it."""
    pkg = _fork(tmp_path)
    # No sink callee in this fork (as in vLLM): the helpers only read the override, so no
    # later round of the sink callees' search reads the project's files for their names.
    (pkg / "helpers.py").write_text(HELPERS.split("\n\n\n")[1])
    (pkg / "middle.py").unlink()
    (pkg / "caller.py").write_text(
        "def profile(cache_config, compilation_config) -> None:\n"
        "    n = compilation_config.max_cudagraph_capture_size or 1\n"
        "    cache_config.num_gpu_blocks_override = n\n"
    )
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    monkeypatch.setattr(prefetch, "MIN_WAIT", 30.0)  # a test process forks slowly: wait
    started = _started(monkeypatch)
    # Written to a file: the run's forked process reads too, and it is counted.
    log = tmp_path_factory.mktemp("reads") / "read.log"
    real = project.read_bytes

    def counted(path: str) -> bytes | None:
        with open(log, "a") as out:
            out.write(os.path.basename(path) + "\n")
        return real(path)

    monkeypatch.setattr(project, "read_bytes", counted)
    run = check_paths([str(tmp_path)])
    assert len(started) == 1 and started[0] is not None
    assert not log.exists(), log.read_text()
    found = [(os.path.basename(f.path), x.line, x.code) for f in run.files for x in f.findings]
    assert found == [("caller.py", 3, "CGG001")]
    assert _no_child_left()


def test_without_the_helper_the_findings_are_the_same(tmp_path, monkeypatch):
    _fork(tmp_path)
    findings = {}
    for jobs in ("1", "2"):  # CGGUARD_JOBS=1 starts no helper
        monkeypatch.setenv("CGGUARD_JOBS", jobs)
        started = _started(monkeypatch)
        run = check_paths([str(tmp_path)])
        assert [h is not None for h in started] == [jobs == "2"]
        findings[jobs] = [(f.path, x.line, x.code) for f in run.files for x in f.findings]
    assert findings["1"] == findings["2"] != []


def test_a_fix_starts_no_helper(tmp_path, monkeypatch):
    """A fix runs in one process, which decides a file needing them after screening the
    others: the screen tells which modules name a sink word, and a helper would read them
    for nothing."""
    _fork(tmp_path)
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    started = _started(monkeypatch)
    run = fix_paths([str(tmp_path)], write=False)
    assert started == []
    assert [(Path(f.path).name, x.line) for f in run.files for x in f.findings] == [
        ("caller.py", 5)
    ]


def test_a_file_or_a_folder_below_the_root_starts_no_helper(tmp_path, monkeypatch):
    """pre-commit names files: their project's modules are read only where a file needs
    them. A folder below the root may need none of the project's, and the project may be
    far bigger than it."""
    pkg = _fork(tmp_path)
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    for paths in ([str(pkg / "caller.py")], [str(pkg)]):
        context = RunContext()
        context.read_sink_modules(paths)
        assert context._sink_helper is None
    outside = tmp_path / "elsewhere"  # a folder in no project
    outside.mkdir()
    context = RunContext()
    context.read_sink_modules([str(outside)])
    assert context._sink_helper is None


def test_one_process_starts_no_helper(tmp_path, monkeypatch):
    _fork(tmp_path)
    monkeypatch.setenv("CGGUARD_JOBS", "1")
    context = RunContext()
    context.read_sink_modules([str(tmp_path)])
    assert context._sink_helper is None


def _failing(data: bytes) -> bool:
    raise ValueError("broken")


def _stuck(data: bytes) -> bool:
    time.sleep(60)
    return False


@pytest.mark.parametrize("names_a_sink", [_failing, _stuck], ids=["failed", "slow"])
def test_a_failed_or_slow_helper_gives_no_answer_and_is_ended(tmp_path, monkeypatch, names_a_sink):
    """No answer (the run reads the modules itself where it needs them), and the helper is
    gone: a slow one is not waited for past its share of the time."""
    _fork(tmp_path)
    monkeypatch.setenv("CGGUARD_JOBS", "2")
    helper = prefetch.SinkModules.start([(str(tmp_path), "any", names_a_sink)])
    assert helper is not None
    assert helper.answer() == {}
    assert _no_child_left()
