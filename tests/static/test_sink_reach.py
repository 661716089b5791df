"""A module of a fork's checkout that names a capture size but no sink word is parsed only
where another module can complete a flow from it (issue 36): it calls a function of the
project one of whose parameters reaches a sink (a *sink callee*, found from the modules that
name a sink word, through any number of helpers), or a module that names a sink word or a
sink callee imports it. Counted in-process, on the parser the core reads modules with, over
the run the CLI makes (``check_paths``, one process); the findings are those of the real CLI.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cgguard.static.driver.context import RunContext
from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS
from tests.conftest import parsed_by_check, run_cgguard

# Sets the override from what it is handed: its parameter reaches a sink.
HELPERS = (
    "def set_profiling_blocks(cache_config, num_blocks) -> None:\n"
    "    cache_config.num_gpu_blocks_override = num_blocks\n\n\n"
    "def log_blocks(cache_config, num_blocks) -> None:\n"
    "    print(cache_config.num_gpu_blocks_override, num_blocks)\n"
)
# Names neither a source nor a sink word: hands its parameter on to the helper.
MIDDLE = (
    "from fork.helpers import set_profiling_blocks\n\n\n"
    "def reserve(cache_config, n) -> None:\n"
    "    set_profiling_blocks(cache_config, n)\n"
)
# Names a capture size, no sink word: the count reaches the override two calls away.
CALLER = (
    "from fork.middle import reserve\n\n\n"
    "def profile(cache_config, compilation_config) -> None:\n"
    "    reserve(cache_config, compilation_config.max_cudagraph_capture_size)\n"
)
# Names a capture size, no sink word, and calls only what reaches no sink.
WARMUP = (
    "from fork.helpers import log_blocks\n\n\n"
    "def warm_up(runner, cache_config, compilation_config) -> None:\n"
    "    for size in compilation_config.cudagraph_capture_sizes:\n"
    "        runner.dummy_run(size)\n"
    "    log_blocks(cache_config, compilation_config.max_cudagraph_capture_size)\n"
)
# A helper returning a capture size, imported by no module that names a sink.
LIMITS = (
    "def graph_tokens(compilation_config) -> int:\n"
    "    return compilation_config.max_cudagraph_capture_size or 1\n"
)
TOKEN_BUFFER = (
    "from fork.limits import graph_tokens\n\n\n"
    "def buffer_rows(compilation_config) -> int:\n"
    "    return graph_tokens(compilation_config) + 1\n"
)


def _fork(root: Path) -> Path:
    """A fork's checkout: ``.git`` and ``pyproject.toml`` at its top, package ``fork``."""
    (root / ".git").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    pkg = root / "fork"
    pkg.mkdir()
    for name, text in {
        "__init__.py": "",
        "helpers.py": HELPERS,
        "middle.py": MIDDLE,
        "caller.py": CALLER,
        "warmup.py": WARMUP,
        "limits.py": LIMITS,
        "token_buffer.py": TOKEN_BUFFER,
    }.items():
        (pkg / name).write_text(text)
    return pkg


def _parsed_names(monkeypatch, folder: Path) -> tuple[set[str], list]:
    """:func:`tests.conftest.parsed_by_check`, the files by name."""
    parsed, findings = parsed_by_check(monkeypatch, folder)
    return {os.path.basename(p) for p in parsed}, findings


def test_the_sink_callees_are_found_through_a_helper_that_names_no_sink(tmp_path):
    pkg = _fork(tmp_path)
    context = RunContext()
    root = str(tmp_path)
    reach = context.analysis(root, CAPTURE_SIZE_BLOCKS).sink_reach(
        CAPTURE_SIZE_BLOCKS.sink_words, CAPTURE_SIZE_BLOCKS.mentions_sink_word
    )
    # ``log_blocks`` names the sink word but hands its parameter to none.
    assert reach.callees() == {"set_profiling_blocks", "reserve"}
    # The modules naming a sink word or a sink callee (those that can complete a flow).
    assert {Path(p).name for p in reach.reaching()} == {"helpers.py", "middle.py", "caller.py"}
    assert reach.may_complete(
        (pkg / "caller.py").read_bytes(), str(pkg / "caller.py"), "fork.caller"
    )
    for name in ("warmup", "limits"):
        path = pkg / f"{name}.py"
        assert not reach.may_complete(path.read_bytes(), str(path), f"fork.{name}")


# Bindings at module level that name the sink word or a sink callee: an alias and a
# ``partial`` can be called (callees), a string holding code cannot (a test's fixture).
FIXTURES = (
    "from functools import partial\n\n"
    "from fork.helpers import set_profiling_blocks\n\n"
    "OLD = 'cache_config.num_gpu_blocks_override = n'\n"
    "NEW = f'cache_config.num_gpu_blocks_override = {min}(r, n)'\n"
    "reserve_blocks = set_profiling_blocks\n"
    "reserve_one = partial(set_profiling_blocks, num_blocks=1)\n"
)
# Names a fixture only: no flow from a source can complete through it.
USES_FIXTURE = "from fork.fixtures import OLD, NEW\n\nprint(OLD, NEW)\n"


def test_a_string_naming_a_sink_word_is_no_sink_callee(tmp_path):
    pkg = _fork(tmp_path)
    (pkg / "fixtures.py").write_text(FIXTURES)
    (pkg / "uses_fixture.py").write_text(USES_FIXTURE)
    reach = (
        RunContext()
        .analysis(str(tmp_path), CAPTURE_SIZE_BLOCKS)
        .sink_reach(CAPTURE_SIZE_BLOCKS.sink_words, CAPTURE_SIZE_BLOCKS.mentions_sink_word)
    )
    assert reach.callees() == {"set_profiling_blocks", "reserve", "reserve_blocks", "reserve_one"}
    assert "uses_fixture.py" not in {Path(p).name for p in reach.reaching()}


def test_a_fork_checkout_parses_the_sources_another_module_can_complete(monkeypatch, tmp_path):
    _fork(tmp_path)
    parsed, findings = _parsed_names(monkeypatch, tmp_path)
    # caller.py hands its count to a sink callee: parsed, and its finding found. warmup.py
    # and limits.py name a capture size, but no module that names a sink or a sink callee
    # can complete a flow from them: a package leaves them alone, and so does a fork now
    # (before, every module of a project that named a source was parsed).
    assert [(Path(f.path).name, f.line, f.code) for f in findings] == [("caller.py", 5, "CGG001")]
    assert "caller.py" in parsed
    assert not parsed & {"warmup.py", "limits.py"}, parsed


def test_a_source_module_a_sink_naming_module_imports_is_parsed(monkeypatch, tmp_path):
    pkg = _fork(tmp_path)
    (pkg / "runner.py").write_text(
        "from fork.limits import graph_tokens\n\n\n"
        "def profile(cache_config, compilation_config) -> None:\n"
        "    cache_config.num_gpu_blocks_override = graph_tokens(compilation_config)\n"
    )
    parsed, findings = _parsed_names(monkeypatch, tmp_path)
    assert "limits.py" in parsed
    # The helper also sizes a token buffer: the finding stays at the runner's use.
    assert sorted((Path(f.path).name, f.line) for f in findings) == [
        ("caller.py", 5),
        ("runner.py", 5),
    ]


def test_a_one_file_run_on_the_caller_agrees_with_the_checkout(tmp_path):
    """pre-commit checks the files a commit changes: the caller alone gives its finding."""
    pkg = _fork(tmp_path)
    env = {"CGGUARD_JOBS": "1"}
    done = run_cgguard("check", "--isolated", str(pkg / "caller.py"), cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stderr
    assert "caller.py:5:" in done.stdout and "CGG001" in done.stdout
    quiet = run_cgguard("check", "--isolated", str(pkg / "warmup.py"), cwd=tmp_path, env=env)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr


@pytest.mark.parametrize(
    ("importer", "reaches"),
    [
        ("from fork.limits import graph_tokens\n", True),
        ("from fork import limits\n", True),
        ("import fork.limits as lim\n", True),
        ("from fork.api import graph_tokens\n", True),  # re-exported by another module
        ("from fork.limits import LIMIT\n", False),  # a constant's module: no call into it
        ("import fork\n", False),  # ``fork.limits.f()`` is no call the core resolves
    ],
)
def test_which_imports_can_call_into_a_module(tmp_path, importer, reaches):
    pkg = _fork(tmp_path)
    (pkg / "limits.py").write_text(LIMITS + "\n\nclass LIMIT:\n    pass\n")
    (pkg / "api.py").write_text("from fork.limits import graph_tokens\n")
    (pkg / "runner.py").write_text(
        importer + "\n\ndef store(cfg, n):\n    cfg.num_gpu_blocks_override = n\n"
    )
    reach = (
        RunContext()
        .analysis(str(tmp_path), CAPTURE_SIZE_BLOCKS)
        .sink_reach(CAPTURE_SIZE_BLOCKS.sink_words, CAPTURE_SIZE_BLOCKS.mentions_sink_word)
    )
    path = pkg / "limits.py"
    assert reach.may_complete(path.read_bytes(), str(path), "fork.limits") is reaches


def test_the_parent_works_out_the_sink_callees_and_the_child_takes_them(tmp_path, monkeypatch):
    """In a run shared with a forked child, what the project's modules say is worked out
    once, by the parent, which sends it to the child (``parallel.publish``). The child puts
    a file that needs it aside (Awaited) until it has come, then decides the file from
    what came, reading none of the project's files for it; until then it leaves a file
    naming a sink word to the parent (ParentOnly), which parses it for the callees. A
    walk in the parent asks for the sink callees and works them out, instead of walking
    a module whole."""
    from cgguard.static.driver import parallel

    pkg = _fork(tmp_path)
    caller, helpers, warmup = pkg / "caller.py", pkg / "helpers.py", pkg / "warmup.py"
    sent: dict = {}
    monkeypatch.setattr(parallel, "publish", lambda key, facts: sent.__setitem__(key, facts))
    monkeypatch.setattr(parallel, "_IN_CHILD", True)
    monkeypatch.setattr(parallel, "_FACTS_IN", {})
    monkeypatch.setattr(parallel, "_FACTS_READ", [])
    child = RunContext()
    with pytest.raises(parallel.Awaited):
        child.may_reach_a_sink(caller.read_bytes(), str(caller))
    # A file that names a sink word is decided from its own text, in the child too; the
    # byte screen leaves it to the parent, which parses it to work the callees out.
    assert child.may_reach_a_sink(helpers.read_bytes(), str(helpers))
    with pytest.raises(parallel.ParentOnly):
        child.may_reach_a_sink(helpers.read_bytes(), str(helpers), screening=True)
    assert sent == {}  # the child works nothing out

    monkeypatch.setattr(parallel, "_IN_CHILD", False)
    monkeypatch.setattr(parallel, "_SHARING", True)
    parent = RunContext()
    program = parent.analysis(str(tmp_path), CAPTURE_SIZE_BLOCKS)
    assert program._derived_sink_callees() == {"set_profiling_blocks", "reserve"}
    key = (str(tmp_path), CAPTURE_SIZE_BLOCKS.name)
    assert list(sent) == [key]
    callees, sink_modules, reaching = sent[key]
    assert callees == {"set_profiling_blocks", "reserve"}
    assert [os.path.basename(p) for p in sink_modules] == ["helpers.py"]
    assert parent.may_reach_a_sink(caller.read_bytes(), str(caller))
    assert not parent.may_reach_a_sink(warmup.read_bytes(), str(warmup))

    monkeypatch.setattr(parallel, "_SHARING", False)
    monkeypatch.setattr(parallel, "_IN_CHILD", True)
    monkeypatch.setattr(parallel, "_FACTS_IN", dict(sent))
    read: list[str] = []
    real_read = child.analysis(str(tmp_path), CAPTURE_SIZE_BLOCKS).index.read_bytes
    monkeypatch.setattr(
        child.analysis(str(tmp_path), CAPTURE_SIZE_BLOCKS).index,
        "read_bytes",
        lambda path: read.append(path) or real_read(path),
    )
    assert child.may_reach_a_sink(caller.read_bytes(), str(caller))
    assert not child.may_reach_a_sink(warmup.read_bytes(), str(warmup))
    assert read == []  # the modules naming a sink word came with the facts
    # Once the facts have come, the child screens and checks such a file itself.
    assert child.may_reach_a_sink(helpers.read_bytes(), str(helpers), screening=True)
    # Outside a shared run, nothing is worked out for a walk that asks.
    monkeypatch.setattr(parallel, "_IN_CHILD", False)
    alone = RunContext().analysis(str(tmp_path), CAPTURE_SIZE_BLOCKS)
    assert alone._derived_sink_callees() is None


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_one_process_and_two_find_the_same(tmp_path, jobs):
    _fork(tmp_path)
    done = run_cgguard("check", "--isolated", ".", cwd=tmp_path, env={"CGGUARD_JOBS": jobs})
    assert done.returncode == 1, done.stderr
    assert [line.split(":")[:2] for line in done.stdout.splitlines() if " CGG001 " in line] == [
        ["fork/caller.py", "5"]
    ]


def test_a_function_named_in_other_letters_is_found_by_its_whole_name(tmp_path):
    pkg = _fork(tmp_path)
    (pkg / "größen.py").write_text(
        "def graph_größe(compilation_config) -> int:\n"
        "    return compilation_config.max_cudagraph_capture_size\n",
        encoding="utf-8",
    )
    (pkg / "api.py").write_text("from fork.größen import graph_größe\n", encoding="utf-8")
    (pkg / "runner.py").write_text(
        "from fork.api import graph_größe\n\n\ndef store(cfg):\n"
        "    cfg.num_gpu_blocks_override = graph_größe(cfg)\n",
        encoding="utf-8",
    )
    reach = (
        RunContext()
        .analysis(str(tmp_path), CAPTURE_SIZE_BLOCKS)
        .sink_reach(CAPTURE_SIZE_BLOCKS.sink_words, CAPTURE_SIZE_BLOCKS.mentions_sink_word)
    )
    path = pkg / "größen.py"
    assert reach.called_by_a_sink_module(str(path), "fork.größen")


@pytest.mark.parametrize("command", ["check", "fix"])
def test_the_modules_naming_a_sink_word_are_read_from_the_screen(
    tmp_path, monkeypatch, project_reads, command
):
    """A run over a fork's checkout in one process decides a file that needs the sink callees
    after its screen of the others (parallel.Deferred), which tells which modules name a sink
    word: no file is read again for it. Findings and the files' order are the same."""
    from cgguard.static.driver.run import check_paths, fix_paths

    pkg = _fork(tmp_path)
    # No sink callee in this fork (as in vLLM): the helpers only read the override.
    (pkg / "helpers.py").write_text(HELPERS.split("\n\n\n")[1])
    (pkg / "middle.py").unlink()
    (pkg / "caller.py").unlink()
    (pkg / "runner.py").write_text(
        "def profile(cache_config, compilation_config) -> None:\n"
        "    n = compilation_config.max_cudagraph_capture_size or 1\n"
        "    cache_config.num_gpu_blocks_override = n\n"
    )
    for i in range(20):  # more files for the screen to tell about
        (pkg / f"plain_{i}.py").write_text(f"import os\n\nVALUE = {i}\n")
    monkeypatch.setenv("CGGUARD_JOBS", "1")
    if command == "check":
        run = check_paths([str(tmp_path)])
    else:
        run = fix_paths([str(tmp_path)], write=False)
    assert project_reads == []
    paths = [f.path for f in run.files]
    assert paths == sorted(paths)  # in the order they were found, the deferred ones too
    found = [(os.path.basename(f.path), x.line) for f in run.files for x in f.findings]
    assert found == [("runner.py", 3)]


def test_a_file_put_aside_is_done_after_the_others_in_one_process(monkeypatch):
    """parallel.Deferred puts an item after the process's others; it is done again whole
    there, where deferring() is False, and its result keeps its place."""
    from cgguard.static.driver import parallel

    monkeypatch.setenv("CGGUARD_JOBS", "1")
    order: list[int] = []

    def screen(x):
        if x % 3 == 0 and parallel.deferring():
            raise parallel.Deferred
        order.append(x)
        return x * 10

    results = parallel.map_files(screen, lambda x, p: p, list(range(10)))
    assert results == [x * 10 for x in range(10)]
    assert order == [1, 2, 4, 5, 7, 8, 0, 3, 6, 9]
    assert not parallel.deferring()
