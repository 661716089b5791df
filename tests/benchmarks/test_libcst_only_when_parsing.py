"""libcst is imported only when something is parsed.

``cgguard check`` decides on bytes and Python's own parser what libcst sees: a run
over files with no capture size, or whose functions hold a capture size but no
sink in the same scope, never imports libcst (its import alone costs 0.1-0.3 s),
however many files it checks and whether or not it shares them with a forked
helper; a file with a finding does. Checked with the real CLI in a fresh
interpreter, as users run it; Python's import-time report
(``PYTHONPROFILEIMPORTTIME``) lists every module imported, by the main process or
the forked helper, so an import in either shows.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cgguard

FILES = {
    "nothing": "def f(x):\n    return x + 1\n",
    "needle_no_sink": (
        "class Runner:\n"
        "    def sizes(self):\n"
        "        # the largest capture size bounds the token buffer\n"
        "        n = self.compilation_config.max_cudagraph_capture_size or 0\n"
        "        self.blocks_seen_total = 0\n"  # mentions blocks, but is no block count
        "        return [0] * (n + 1)\n"
    ),
    # A capture size handed through a method of the file, and no block count, byte
    # budget or profiling config anywhere in it: the screen used to send it whole.
    "needle_through_own_helper_no_sink": (
        "class Runner:\n"
        "    def _scale(self, n):\n"
        "        return n * 2\n"
        "    def sizes(self):\n"
        "        return self._scale(self.compilation_config.max_cudagraph_capture_size)\n"
    ),
    "needle_and_sink_in_different_functions": (
        "class Runner:\n"
        "    def a(self):\n"
        "        return self.compilation_config.max_cudagraph_capture_size > 8\n"
        "    def b(self):\n"
        "        self.cache_config.num_gpu_blocks_override = 4\n"
    ),
}
BUG = (
    "class Runner:\n"
    "    def f(self):\n"
    "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
    "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
)
_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$", re.M)


def _libcst_imports(folder: Path, *, jobs: str | None = None, command: str = "check") -> int:
    """How many times a run over ``folder`` imported libcst, counting every process."""
    env = {"PYTHONPROFILEIMPORTTIME": "1"}
    if jobs is not None:
        env["CGGUARD_JOBS"] = jobs
    proc = run_cgguard(command, "--isolated", ".", cwd=folder, env=env, timeout=120)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    modules = _IMPORTED.findall(proc.stderr)
    assert "cgguard.cli" in modules, proc.stderr[-2000:]  # the report is there to read
    return modules.count("libcst")


def _imports_libcst(folder: Path, *, jobs: str | None = None) -> bool:
    return _libcst_imports(folder, jobs=jobs) > 0


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text)
    return folder


def _big_tree(folder: Path) -> Path:
    """A plugin-sized tree: 300 files, 40 of them holding a capture size (about 1 MB of
    such text, enough for a run to consider sharing it), none a finding."""
    helpers = [f"def helper_{i}(x):\n    return x * {i} + 1\n\n" for i in range(700)]
    filler = "".join(helpers)
    files = {f"plain_{i:03d}": f'"""Module {i}."""\n\n' + "".join(helpers[: 20 + i]) for i in range(260)}
    for i in range(20):
        files[f"sizes_{i:02d}"] = FILES["needle_no_sink"] + filler
        files[f"apart_{i:02d}"] = FILES["needle_and_sink_in_different_functions"] + filler
    return _write(folder, files)


@pytest.mark.parametrize("name", sorted(FILES))
def test_nothing_to_parse_never_imports_libcst(tmp_path: Path, name: str) -> None:
    assert not _imports_libcst(_write(tmp_path, {name: FILES[name]}))


def test_a_file_with_a_finding_is_parsed_by_libcst(tmp_path: Path) -> None:
    assert _imports_libcst(_write(tmp_path, {"bug": BUG, **FILES}))


@pytest.mark.parametrize("jobs", [None, "1", "2"], ids=["default", "one-job", "shared"])
def test_a_big_tree_with_nothing_to_parse_never_imports_libcst(tmp_path: Path, jobs: str | None) -> None:
    """a tree of 256+ files used to import libcst up front, parsing nothing.
    Neither the default, one process, nor a run forced to share with a helper does."""
    tree = _big_tree(tmp_path / "tree")
    assert len(list(tree.glob("*.py"))) == 300
    assert not _imports_libcst(tree, jobs=jobs)


@pytest.mark.parametrize("jobs", [None, "2"], ids=["default", "shared"])
def test_a_tree_shared_from_the_start_with_nothing_to_parse_never_imports_libcst(tmp_path: Path, jobs: str | None) -> None:
    """A run whose files hold MIN_SHARED_SCREEN bytes or more shares its screen from the
    first file (parallel.py): still no libcst where nothing is parsed, in either process."""
    from cgguard.static.driver.parallel import MIN_SHARED_SCREEN

    tree = _big_tree(tmp_path / "tree")
    body = "".join(f"def helper_{i}(x):\n    return x * {i} + 1\n\n" for i in range(2000))
    count = -(-MIN_SHARED_SCREEN // len(body))
    _write(tree, {f"big_{i:03d}": body for i in range(count)})
    assert sum(f.stat().st_size for f in tree.glob("*.py")) >= MIN_SHARED_SCREEN
    assert not _imports_libcst(tree, jobs=jobs)


@pytest.mark.parametrize("jobs", [None, "2"], ids=["default", "shared"])
def test_a_big_tree_with_findings_imports_libcst_once(tmp_path: Path, jobs: str | None) -> None:
    """Files to parse on both sides of a shared run: the helper hands them to the main
    process, so libcst is imported once per run, not once per process."""
    tree = _big_tree(tmp_path / "tree")
    for i in range(0, 300, 10):
        (tree / f"bug_{i:03d}.py").write_text(BUG)
    assert _libcst_imports(tree, jobs=jobs) == 1


HELPER = (
    "def capture_blocks(config):\n"
    "    # hands the capture size on; the callers decide what it sizes\n"
    "    return config.compilation_config.max_cudagraph_capture_size\n"
)


@pytest.mark.parametrize("jobs", [None, "2"], ids=["default", "shared"])
def test_a_project_tree_with_findings_imports_libcst_once(tmp_path: Path, jobs: str | None) -> None:
    """The same inside a project (a ``pyproject.toml`` at its root), where each file is
    also asked about flows across its modules: a file that imports something and a file
    defining a helper that returns a capture size. The helper used to import the rules
    (and libcst) for those questions before any parse, so both processes paid for it."""
    tree = _big_tree(tmp_path / "tree")
    (tree / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    for i in range(0, 300, 10):
        (tree / f"bug_{i:03d}.py").write_text("import os\n\n" + BUG)
        (tree / f"helper_{i:03d}.py").write_text(HELPER)
    assert _libcst_imports(tree, jobs=jobs) == 1


@pytest.mark.parametrize("jobs", [None, "1"], ids=["default", "one-job"])
def test_the_installed_fixed_release_never_imports_libcst(vllm_dir: Path, jobs: str | None) -> None:
    """vLLM 0.26.0+ carries upstream's bound: a check of the whole installed package (2,600+
    files, some naming the capture size beside block counts) parses what it must with
    Python's parser, finds nothing, and never imports libcst, in either process."""
    assert not _imports_libcst(vllm_dir, jobs=jobs)


def test_a_fork_checkout_of_the_fixed_release_never_imports_libcst(vllm_dir: Path, tmp_path: Path) -> None:
    """The same package as a fork's checkout (``vllm/`` a package of a project), where every
    module that names a source is parsed and its imports are followed: still no libcst."""
    shutil.copytree(vllm_dir, tmp_path / "vllm", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'vllm'\n")
    assert not _imports_libcst(tmp_path)


# A fork's checkout (.git and pyproject.toml at its top): a module naming the capture size,
# and many files that import it and name a sink but hand it nothing that carries a count.
FORK_CONFIG = (
    "def graph_blocks(compilation_config) -> int:\n"
    "    return compilation_config.max_cudagraph_capture_size or 1\n\n\n"
    "class GraphSizes:\n"
    "    def _init_graph_sizes(self, vllm_config) -> None:\n"
    "        self.max_graph = vllm_config.compilation_config.max_cudagraph_capture_size\n\n\n"
    "LIMIT = 8\n"
)
FORK_BYSTANDER = (
    "from fork.config import GraphSizes, LIMIT\n\n\n"
    "class Pool(GraphSizes):\n"
    "    def reserve(self, cache_config, num_blocks: int) -> None:\n"
    "        cache_config.num_gpu_blocks_override = min(num_blocks, LIMIT)\n"
)
FORK_USER = (
    "from fork.config import graph_blocks\n\n\n"
    "def profile(cache_config, compilation_config, max_num_reqs):\n"
    "    n = min(max_num_reqs, graph_blocks(compilation_config))\n"
    "    cache_config.num_gpu_blocks_override = n\n"
)


def _fork(folder: Path, *, finding: bool) -> Path:
    (folder / ".git").mkdir(parents=True)
    (folder / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    pkg = _write(folder / "fork", {"__init__": "", "config": FORK_CONFIG, "user": FORK_USER})
    _write(pkg, {f"bystander_{i:02d}": FORK_BYSTANDER for i in range(40)})
    if finding:
        (pkg / "runner.py").write_text(
            "from fork.config import GraphSizes\n\n\n"
            "class Runner(GraphSizes):\n"
            "    def profile(self):\n"
            "        min_blocks = self.max_graph or 1\n"
            "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
        )
    return folder


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_fork_checkout_imports_libcst_only_for_a_file_with_a_finding(tmp_path: Path, command: str) -> None:
    """In a fork's checkout every file that imports the module naming the capture size and
    names a sink (the profiling block count) is a candidate; none of them has a finding (the helper's use is
    bounded, the members are not used), so neither check nor fix imports libcst. One runner
    with a finding makes both import it, once."""
    assert _libcst_imports(_fork(tmp_path / "clean", finding=False), command=command) == 0
    assert _libcst_imports(_fork(tmp_path / "one", finding=True), command=command) == 1
