"""doctor and estimate say what the release decides, not what cgguard's own Python has
(issue 38).

A tree read with ``doctor --path`` runs on another machine: it is taken to run with
Triton on a CUDA GPU, whatever this Python has installed, and the answer says so.
Where no release's source is here (estimate without vLLM, or with a vLLM that is not
the release estimated), estimate says on which runner each affected release puts the
model, by the release's rule, and that nothing is at stake on runner V2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cgguard.ops.release.runner_verdict as runner_verdict
from cgguard.ops.doctor.diagnosis import TARGET_TRITON, diagnose_path
from cgguard.ops.release.release_runners import runners_by_release
from cgguard.ops.release.runner_verdict import RunSettings
from tests.conftest import PRE_FIX_RUNNER_EXPR, UPSTREAM_FIXED_RUNNER_EXPR
from tests.ops.test_estimate_grouping import QWEN3_6_35B_A3B
from tests.ops.test_estimate_hybrid import estimate, model, no_vllm_path  # noqa: F401

# The files of a release that say which runner a model gets, and the V1 runner.
TREE_FILES = (
    "__init__.py",
    "config/vllm.py",
    "v1/worker/gpu_model_runner.py",
    "v1/worker/gpu/model_runner.py",
)
LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 8192,
}
MIXTRAL = {**LLAMA, "architectures": ["MixtralForCausalLM"], "num_local_experts": 8}


def _affected_tree(root: Path, vllm_dir: Path) -> Path:
    """The installed release's runner selection beside a V1 runner with the per-token count."""
    for rel in TREE_FILES:
        if (vllm_dir / rel).exists():
            (root / "vllm" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(vllm_dir / rel, root / "vllm" / rel)
    runner = root / "vllm" / "v1" / "worker" / "gpu_model_runner.py"
    text = runner.read_text(encoding="utf-8")
    runner.write_text(text.replace(UPSTREAM_FIXED_RUNNER_EXPR, PRE_FIX_RUNNER_EXPR))
    return root


def test_doctor_path_gives_one_verdict_with_and_without_triton_here(
    tmp_path, vllm_dir, monkeypatch
):
    tree = _affected_tree(tmp_path / "tree", vllm_dir)
    llama = model(tmp_path, LLAMA)
    answers = {}
    for here in (True, False):
        monkeypatch.setattr(runner_verdict, "triton_present", lambda here=here: here)
        d = diagnose_path(str(tree), str(llama), RunSettings())
        assert d.affected and d.verdict is not None
        answers[here] = (d.verdict.taken, d.verdict.runner, d.verdict.reasons)
        reads_triton = "HAS_TRITON" in (tree / "vllm" / "config" / "vllm.py").read_text()
        assert (TARGET_TRITON in d.verdict.assumed) is reads_triton
        assert not any("installed in this Python" in a for a in d.verdict.assumed)
    assert answers[True] == answers[False]


def test_each_releases_rule_by_the_models_kind():
    def runners(*kind) -> dict:
        return {r.releases: r.runner for r in runners_by_release(*kind)}

    assert runners("LlamaForCausalLM", False, False, False) == {
        "0.18.0-0.21.x": "V1",
        "0.22.0": "V1",
        "0.23.0": "V2",
        "0.24.0": None,
        "0.25.0": "V2",
    }
    assert runners("Qwen3ForCausalLM", False, False, False)["0.22.0"] == "V2"
    moe = runners("MixtralForCausalLM", True, False, False)
    assert moe["0.23.0"] == moe["0.25.0"] == "V1"
    assert runners("Qwen2MoeForCausalLM", True, False, False)["0.25.0"] == "V2"
    hybrid = runners("Qwen3_5MoeForConditionalGeneration", True, False, True)
    assert set(hybrid.values()) == {"V1", None} and hybrid["0.25.0"] == "V1"


@pytest.mark.parametrize(
    ("config", "on_0_25"),
    [(LLAMA, "V2"), (MIXTRAL, "V1"), (QWEN3_6_35B_A3B, "V1")],
    ids=["dense", "moe", "hybrid"],
)
def test_estimate_without_vllm_says_each_releases_runner(
    tmp_path,
    no_vllm_path,  # noqa: F811
    config,
    on_0_25,
):
    folder = model(tmp_path, config)
    out = json.loads(estimate(no_vllm_path, folder, "--format", "json").stdout)
    rows = {r["releases"]: r["runner"] for r in out["runner_by_release"]}
    assert rows["0.18.0-0.21.x"] == "V1" and rows["0.25.0"] == on_0_25
    text = estimate(no_vllm_path, folder).stdout
    assert "Runner:         vLLM's source for this is not installed here" in text
    assert f"0.25.0: {on_0_25} (" in text
    at_stake = "model runner V2 builds no profiling KV cache: nothing is at stake on it"
    assert (at_stake in text) is ("V2" in rows.values() or None in rows.values())
    # A release named: its row alone, and what its table is.
    named = estimate(no_vllm_path, folder, "--vllm-version", "0.25.0").stdout
    assert f"0.25.0: {on_0_25} (" in named and "0.18.0-0.21.x" not in named
    if on_0_25 == "V2":
        assert "The table is what vLLM 0.25.0 builds on the V1 runner" in named
