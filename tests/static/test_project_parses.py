"""Following a helper into another module of the project parses with libcst only what a
fix changes.

The core reads the project's modules through Python's parser; libcst parses only the
statement each fix changes, each at most once per run -- never a whole module. Checked with
the real CLI in a fresh interpreter whose libcst records every text it is asked to parse.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import parsed_by_check

# Records the line count of every text libcst parses, then runs the real CLI.
RECORDING_CLI = """
import json, runpy, sys
import libcst
parsed = []
real = libcst.parse_module
out = sys.argv.pop(1)
open(out, "w").write("[]")
def recording(source, *args, **kwargs):
    parsed.append(source if isinstance(source, str) else source.decode())
    open(out, "w").write(json.dumps(parsed))  # as it goes: the CLI ends with os._exit
    return real(source, *args, **kwargs)
libcst.parse_module = recording
sys.argv[0] = "cgguard"
runpy.run_module("cgguard", run_name="__main__", alter_sys=True)
"""

# A runner as large as a fork's: many methods name the capture sizes (for warm-up, no
# block count), one takes its profiling block count from the project's helper.
FILLER = "".join(
    f"    def warmup_{i}(self) -> None:\n"
    f"        for size in self.compilation_config.cudagraph_capture_sizes:\n"
    f"            self._dummy_run(size + {i})\n\n"
    for i in range(40)
)
RUNNER = (
    "from vllm.v1.worker.gpu_model_runner import GPUModelRunner\n\n"
    "from plugin.limits import profiling_num_blocks\n\n\n"
    "class NPUModelRunner(GPUModelRunner):\n"
    + FILLER
    + "    def _init_minimal_kv_cache_for_profiling(self) -> None:\n"
    "        min_blocks = profiling_num_blocks(self.compilation_config)\n"
    "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
)
USE_LINE = RUNNER.splitlines().index("        min_blocks = profiling_num_blocks(self.compilation_config)") + 1
HELPER = (
    "def profiling_num_blocks(compilation_config) -> int:\n"
    "    return compilation_config.max_cudagraph_capture_size or 1\n"
)
# Other functions of the helper's module, so that a whole-module parse shows.
OTHERS = "".join(
    f"\n\ndef graph_rows_{i}(compilation_config) -> int:\n"
    f"    return compilation_config.max_cudagraph_capture_size + {i}\n"
    for i in range(20)
)
# A per-token use of the helper in its own module: not every use is a block count.
TOKEN_USE = "\n\ndef buffer_rows(compilation_config) -> int:\n    return profiling_num_blocks(compilation_config) + 1\n"


def _project(root: Path, limits: str) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'plugin'\n")
    (root / "plugin").mkdir()
    (root / "plugin" / "__init__.py").write_text("")
    (root / "plugin" / "limits.py").write_text(limits)
    (root / "plugin" / "runner.py").write_text(RUNNER)
    return root / "plugin"


def _check(path: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    record = tmp_path / "parsed.json"
    env = dict(os.environ, CGGUARD_JOBS="1")
    result = subprocess.run(
        [sys.executable, "-c", RECORDING_CLI, str(record), "check", "--isolated", str(path)],
        check=False, capture_output=True, text=True, env=env, timeout=600,
    )
    return result, json.loads(record.read_text())


def _assert_no_whole_module(parsed: list[str], *modules: Path) -> None:
    for module in modules:
        lines = len(module.read_text().splitlines())
        assert all(len(text.splitlines()) < lines // 2 for text in parsed), f"{module.name} parsed whole"
    assert len(parsed) == len(set(parsed)), "a text parsed twice in one run"


def test_checking_the_runner_parses_only_the_statement_it_fixes(tmp_path):
    plugin = _project(tmp_path, HELPER + TOKEN_USE + OTHERS)
    result, parsed = _check(plugin / "runner.py", tmp_path)
    # The helper also sizes a buffer: the finding stays at the runner's use.
    assert result.returncode == 1, result.stderr
    assert f"runner.py:{USE_LINE}:" in result.stdout and "CGG001" in result.stdout
    assert parsed, "the finding needs libcst"
    _assert_no_whole_module(parsed, plugin / "runner.py", plugin / "limits.py")
    # The fix's statement, the count the runner takes from the helper.
    assert any("min_blocks = profiling_num_blocks(" in text for text in parsed)


def test_checking_the_helper_parses_nothing_when_its_finding_has_no_fix(tmp_path):
    plugin = _project(tmp_path, HELPER + OTHERS)
    result, parsed = _check(plugin / "limits.py", tmp_path)
    # Its only use is a block count: the finding sits at its return.
    assert result.returncode == 1, result.stderr
    assert "limits.py:2:" in result.stdout and "CGG001" in result.stdout
    # No request count is in the helper's scope, so there is no fix: libcst parses nothing
    # (positions and the message come from Python's tree).
    assert "no request count in scope" in result.stdout
    assert parsed == []


# ---- which files of a fork's checkout Python's parser reads -----------------------------
#
# A file of a project that names no source is parsed only where a flow from a source needs
# it: a module a source-naming module's flow calls into, or one that uses what such a module
# exports (a helper returning a count, a class whose members carry one, a base class). A
# file that merely imports such a module and names a sink is not (issue 36: 586 of a
# fork's 3,406 files were parsed for that alone). Counted in-process, on the parser the core
# reads modules with, over the run the CLI makes (`check_paths`, one process).

CONFIG = (
    "from fork.util import round_up\n\n\n"
    "def graph_blocks(compilation_config) -> int:\n"
    "    return round_up(compilation_config.max_cudagraph_capture_size or 1)\n\n\n"
    "class GraphSizes:\n"
    "    def _init_graph_sizes(self, vllm_config) -> None:\n"
    "        self.max_graph = vllm_config.compilation_config.max_cudagraph_capture_size\n\n\n"
    "LIMIT = 8\n"
)
UTIL = "def round_up(n: int) -> int:\n    return (n + 15) // 16 * 16\n"
# Uses the helper as a block count (its only use: the finding lands at its return).
USES_HELPER = (
    "from fork.config import graph_blocks\n\n\n"
    "def profile(cache_config, compilation_config):\n"
    "    cache_config.num_gpu_blocks_override = graph_blocks(compilation_config)\n"
)
# A subclass stores the member its base sets from the capture size as the block count.
USES_BASE = (
    "from fork.config import GraphSizes\n\n\n"
    "class Runner(GraphSizes):\n"
    "    def profile(self):\n"
    "        self.cache_config.num_gpu_blocks_override = self.max_graph\n"
)
# Import the source-naming module and name a sink, but hand it nothing that carries a count.
BYSTANDERS = [
    "from fork.config import GraphSizes, LIMIT\n\n\n"
    f"def blocks_{i}(sizes: GraphSizes, cache_config, num_blocks: int) -> None:\n"
    "    cache_config.num_gpu_blocks_override = min(num_blocks, LIMIT)\n"
    for i in range(12)
] + [
    "from fork import config\n\n\n"
    f"class Pool{i}:\n"
    "    def __init__(self, cache_config, num_blocks: int):\n"
    "        cache_config.num_gpu_blocks_override = num_blocks + config.LIMIT\n"
    for i in range(12)
]


def _fork_checkout(root: Path, *, findings: bool) -> Path:
    """A fork's checkout: ``.git`` and ``pyproject.toml`` at its top, package ``fork``."""
    (root / ".git").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    pkg = root / "fork"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text(CONFIG)
    (pkg / "util.py").write_text(UTIL)
    for i, text in enumerate(BYSTANDERS):
        (pkg / f"bystander_{i:02d}.py").write_text(text)
    if findings:
        (pkg / "uses_helper.py").write_text(USES_HELPER)
        (pkg / "uses_base.py").write_text(USES_BASE)
    return root


def test_a_fork_checkout_parses_only_what_flows_from_its_sources_need(monkeypatch, tmp_path):
    root = _fork_checkout(tmp_path, findings=True)
    parsed, findings = parsed_by_check(monkeypatch, root)
    pkg = root / "fork"
    # The module naming the source, the helper its flow calls, and the two modules that
    # use what it exports: 4 files of 29. The bystanders import it and name block counts.
    assert parsed == {str(pkg / n) for n in ("config.py", "util.py", "uses_helper.py", "uses_base.py")}
    assert sorted((Path(f.path).name, f.line) for f in findings) == [
        ("config.py", 5),  # the helper's return, which every caller takes as a block count
        ("uses_base.py", 6),
    ]


def test_a_fork_checkout_with_nothing_to_report_parses_its_source_alone(monkeypatch, tmp_path):
    root = _fork_checkout(tmp_path, findings=False)
    parsed, findings = parsed_by_check(monkeypatch, root)
    assert findings == []
    assert parsed == {str(root / "fork" / "config.py"), str(root / "fork" / "util.py")}


def test_a_fork_checkout_of_the_release_parses_only_files_its_sources_reach(
    monkeypatch, tmp_path, vllm_dir
):
    """The installed vLLM as a fork's checkout: every file parsed that names no source is
    a module a parsed file imports (a helper, a base class a flow resolves) or imports a
    module naming a source (it uses what that exports). Before, every file that imported
    a module leading to a source and named a block count was parsed, most of them neither."""
    from cgguard.static.core.modulefiles import ModuleFiles, import_names, import_statements
    from cgguard.static.driver.prefilter import names_a_source

    shutil.copytree(vllm_dir, tmp_path / "vllm", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'vllm'\n")
    parsed, findings = parsed_by_check(monkeypatch, tmp_path)
    assert findings == []  # the release carries upstream's bound
    files = ModuleFiles(str(tmp_path))

    def imported(path: str) -> set[str]:
        text = Path(path).read_text(encoding="utf-8")
        package = files.dotted_of(path) or ""
        found = set()
        for module, rest in import_statements(text, package, path.endswith("__init__.py")):
            for name in [module] if module is not None else import_names(rest):
                for candidate in [name] + [f"{name}.{n}" for n in import_names(rest) if module]:
                    file = files.module_file(candidate)
                    if file is not None:
                        found.add(file)
        return found

    sources = {p for p in parsed if names_a_source(Path(p).read_bytes())}
    assert sources, "no file naming a source was parsed"
    reached = set().union(*(imported(p) for p in parsed))
    others = parsed - sources
    unexplained = [p for p in others if p not in reached and not imported(p) & sources]
    assert not unexplained, unexplained[:10]
    # Far fewer than the files naming a block count that import a module of the project.
    assert len(others) <= len(sources), (len(others), len(sources))
    # docs/linter.md: 24 files in all, 9 of the 36 that mention a capture size (a file
    # naming one but no sink word only where another module can complete its flow).
    from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS

    capture = {p for p in parsed if CAPTURE_SIZE_BLOCKS.names_a_source(Path(p).read_bytes())}
    assert len(parsed) <= 24 and len(capture) <= 9, (len(parsed), len(capture))


# A module with a finding a fix settles (a request count in scope) and a base class whose
# member carries the capture size; a module checked after it derives from that class.
FIXED_BASE = (
    "class GraphSizes:\n"
    "    def _init_graph_sizes(self, vllm_config) -> None:\n"
    "        self.max_graph = vllm_config.compilation_config.max_cudagraph_capture_size\n\n\n"
    "def profile(cache_config, compilation_config, max_num_reqs: int) -> None:\n"
    "    cache_config.num_gpu_blocks_override = compilation_config.max_cudagraph_capture_size\n"
)


def test_a_fork_fix_parses_no_text_twice(monkeypatch, tmp_path):
    """A fix written leaves the run holding the fixed text's lowered form, which is the
    file's now: a module checked after it that reads it (a subclass of its class) takes
    that form, not a parse of the same text again (a fork's fixed module is its 322 KB
    runner)."""
    from cgguard.static.core import pyast
    from cgguard.static.driver.run import fix_paths

    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    pkg = tmp_path / "fork"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a_config.py").write_text(FIXED_BASE)
    (pkg / "b_user.py").write_text(USES_BASE.replace("fork.config", "fork.a_config"))
    parsed: list[tuple[str, str]] = []
    real = pyast.parse

    def recording(text, path="<string>", **kwargs):
        parsed.append((os.path.abspath(path), text))
        return real(text, path, **kwargs)

    monkeypatch.setattr(pyast, "parse", recording)
    monkeypatch.setenv("CGGUARD_JOBS", "1")
    run = fix_paths([str(tmp_path)], write=True)
    assert not run.errors, run.errors
    assert run.fixed == 1
    assert [(Path(f.path).name, f.line) for f in run.findings] == [("b_user.py", 6)]
    fixed = (str(pkg / "a_config.py"), (pkg / "a_config.py").read_text())
    assert fixed[1] != FIXED_BASE and fixed in parsed
    assert parsed.count(fixed) == 1, "the fixed text parsed again for the module after it"
