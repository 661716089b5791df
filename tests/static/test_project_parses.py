"""Following a helper into another module of the project parses with libcst only what a
fix changes.

The core reads the project's modules through Python's parser; libcst parses only the
statement each fix changes, each at most once per run -- never a whole module. Checked with
the real CLI in a fresh interpreter whose libcst records every text it is asked to parse.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
