"""Helpers for the workflow tests: sample sources, real git repositories, README snippets."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.conftest import REPO

# One CGG001 (safe fix) and one CGG002 (suggestion only), and a clean file.
CGG001_SOURCE = (
    "class ForkModelRunner:\n"
    "    def _init_minimal_kv_cache_for_profiling(self):\n"
    "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
    "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
)
CGG001_FIXED_LINE = "min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)"
CGG002_SOURCE = (
    "def at_least_sixteen(vllm_config):\n"
    "    min_blocks = max(16, vllm_config.compilation_config.max_cudagraph_capture_size)\n"
    "    vllm_config.cache_config.num_gpu_blocks_override = min_blocks\n"
)
CLEAN_SOURCE = "def f(x):\n    return x + 1\n"

# git with no user or system configuration, so the machine's settings cannot
# change what a test sees (a global excludesFile, say).
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "cgguard tests",
    "GIT_AUTHOR_EMAIL": "tests@cgguard.invalid",
    "GIT_COMMITTER_NAME": "cgguard tests",
    "GIT_COMMITTER_EMAIL": "tests@cgguard.invalid",
}


def git_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV)
    return env


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=git_env(), check=False
    )
    assert result.returncode == 0, f"git {' '.join(args)} failed: {result.stderr}"
    return result.stdout


def git_init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    return repo


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def finding_paths(stdout: str) -> list[str]:
    """The paths of `text` format finding lines, in order."""
    return [line.split(":", 1)[0] for line in stdout.splitlines() if re.match(r"^.+:\d+:\d+: CGG\d{3} ", line)]


def readme_snippet(name: str, page: str = "README.md") -> str:
    """The fenced block after ``<!-- snippet: NAME -->`` in the README, or in another page of
    the docs (``page``, relative to the repository: what users copy)."""
    text = (REPO / page).read_text(encoding="utf-8")
    m = re.search(rf"<!-- snippet: {re.escape(name)} -->\n```[a-z]*\n(.*?)\n```", text, re.S)
    assert m, f"{page} has no snippet {name!r}"
    return m.group(1) + "\n"
