"""The adapters' tests run in .venv-fixit (scripts/test-fixit), which holds Fixit but no
vLLM: the runner tests read vLLM's source from .venv's installed vLLM, which
scripts/test-fixit names in CGGUARD_TEST_VLLM_DIR. Without it, the vLLM installed here
(and without either, the tests fail: see tests.conftest.installed_vllm_dir)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import installed_vllm_dir


@pytest.fixture(scope="session")
def vllm_dir() -> Path:
    named = os.environ.get("CGGUARD_TEST_VLLM_DIR")
    if named:
        folder = Path(named)
        if not (folder / "v1" / "worker" / "gpu_model_runner.py").is_file():
            raise RuntimeError(f"CGGUARD_TEST_VLLM_DIR={named}: no vLLM package there")
        return folder
    return installed_vllm_dir()
