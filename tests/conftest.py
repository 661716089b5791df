"""Shared test helpers: where things are, and how to run the real CLI."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# The expression vLLM 0.26.0+ uses (multi-line, as in gpu_model_runner.py) and the
# pre-fix line of 0.18.0-0.25.x: tests plant the latter to make a buggy copy.
UPSTREAM_FIXED_RUNNER_EXPR = (
    "(\n"
    "            min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)\n"
    "            or 1\n"
    "        )"
)
PRE_FIX_RUNNER_EXPR = "self.compilation_config.max_cudagraph_capture_size or 1"
# The smallest runner carrying the pre-fix line: one CGG001 finding with a safe fix.
BUGGY_RUNNER = f"""class GPUModelRunner:
    def __init__(self, vllm_config):
        self.compilation_config = vllm_config.compilation_config
        self.cache_config = vllm_config.cache_config

    def _init_minimal_kv_cache_for_profiling(self) -> None:
        min_blocks = {PRE_FIX_RUNNER_EXPR}
        self.cache_config.num_gpu_blocks_override = min_blocks
"""


def installed_vllm_dir() -> Path:
    """The installed vLLM package folder, found without importing vLLM."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("vLLM is not installed in the test environment; run scripts/test")
    return Path(list(spec.submodule_search_locations)[0])


def run_cgguard(*args: str, cwd: Path | str | None = None, input: str | None = None,
                env: dict | None = None, timeout: float = 600,
                preexec_fn=None) -> subprocess.CompletedProcess:
    """Run the real CLI in a fresh interpreter, as a user would."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "cgguard", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def parsed_by_check(monkeypatch, folder: Path) -> tuple[set[str], list]:
    """The files (absolute paths) Python's parser read for the core during a check of
    ``folder`` in one process, as the CLI runs it (``check_paths``), and the findings. No
    module is parsed twice in one run."""
    from cgguard.static.core import pyast
    from cgguard.static.driver.run import check_paths

    parsed: list[str] = []
    real = pyast.parse

    def recording(text, path="<string>", **kwargs):
        parsed.append(os.path.abspath(path))
        return real(text, path, **kwargs)

    monkeypatch.setattr(pyast, "parse", recording)
    monkeypatch.setenv("CGGUARD_JOBS", "1")
    run = check_paths([str(folder)])
    assert not run.errors, run.errors
    assert len(parsed) == len(set(parsed)), "a module parsed twice in one run"
    return set(parsed), run.findings


@pytest.fixture(scope="session")
def vllm_dir() -> Path:
    return installed_vllm_dir()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # scripts/test-pythons runs the static suites where no vLLM is installed and deselects
    # these by the marker, so a new test that reads vLLM's files is never run there by mistake.
    for item in items:
        if "vllm_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.needs_vllm)


def cli_runner():
    """A click CliRunner that keeps standard error apart on click 8.1 (opt-in) and 8.2+
    (always). fixit pins click<8.2, so the test environment may hold either."""
    from click.testing import CliRunner

    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()
