"""Which model runner the installed release picks, as cgguard reads it from the
release's source, against the release's own ``VllmConfig.use_v2_model_runner``.

Tiny configs of a dense, a MoE (not listed and listed), a hybrid and an
attention-free architecture; ``VLLM_USE_V2_MODEL_RUNNER`` unset, 0 and 1. vLLM's
``HAS_TRITON`` is set to True in the reference process: a stand-in for a GPU
machine, where Triton finds its driver (on these CPU machines it finds none).
0.18.0 has no ``use_v2_model_runner`` on its config: its worker reads the variable,
and no model runs V2 by default.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cgguard.ops.release.model_kind import read_model_kind
from cgguard.ops.release.runner_source import read_runner_rule
from cgguard.ops.release.runner_verdict import RunSettings, facts_for
from tests.conftest import REPO, installed_vllm_dir
from tests.runtime.conftest import RELEASE, TINY_LLAMA, VLLM_RELEASE, clean_env

SMALL = {k: TINY_LLAMA[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                     "num_key_value_heads", "vocab_size", "max_position_embeddings",
                                     "torch_dtype")}
CONFIGS = {
    "dense": {**TINY_LLAMA},
    "moe": {**SMALL, "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "head_dim": 32,
            "intermediate_size": 256, "num_local_experts": 4, "num_experts_per_tok": 2},
    "listed-moe": {**SMALL, "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe",
                   "intermediate_size": 256, "moe_intermediate_size": 64,
                   "shared_expert_intermediate_size": 64, "num_experts": 4, "num_experts_per_tok": 2},
    "hybrid": {**SMALL, "architectures": ["JambaForCausalLM"], "model_type": "jamba", "intermediate_size": 256,
               "num_experts": 1, "num_experts_per_tok": 1, "attn_layer_period": 2, "attn_layer_offset": 1,
               "expert_layer_period": 2, "expert_layer_offset": 1, "mamba_d_state": 16, "mamba_d_conv": 4,
               "mamba_expand": 2, "mamba_dt_rank": 8},
    "attention-free": {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 128,
                       "intermediate_size": 256, "num_hidden_layers": 2, "state_size": 16, "conv_kernel": 4,
                       "vocab_size": 512, "torch_dtype": "float32"},
}
ENV_VALUES = [None, "0", "1"]

REFERENCE = """
import json, os, sys
import vllm.config.vllm as config_module
from vllm.config import ModelConfig, VllmConfig
config_module.HAS_TRITON = True  # stand-in for a GPU machine (see the module docstring)
import vllm.envs as envs
out = {}
for name, folder in json.loads(sys.argv[1]).items():
    model_config = ModelConfig(model=folder, skip_tokenizer_init=True, max_model_len=128)
    vllm_config = VllmConfig(model_config=model_config)
    for value in json.loads(sys.argv[2]):
        if value is None:
            os.environ.pop("VLLM_USE_V2_MODEL_RUNNER", None)
        else:
            os.environ["VLLM_USE_V2_MODEL_RUNNER"] = value
        if hasattr(VllmConfig, "use_v2_model_runner"):
            v2 = vllm_config.use_v2_model_runner
        else:  # the worker's own reading (vllm/v1/worker/gpu_worker.py)
            v2 = bool(envs.VLLM_USE_V2_MODEL_RUNNER)
        out[f"{name}/{value}"] = v2
out["has_property"] = hasattr(VllmConfig, "use_v2_model_runner")
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runner-models")
    out = {}
    for name, config in CONFIGS.items():
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))
        out[name] = root / name
    return out


@pytest.fixture(scope="module")
def release_choice(folders: dict[str, Path]) -> dict:
    """For each config and variable value, the runner the release itself picks."""
    proc = subprocess.run(
        [sys.executable, "-c", REFERENCE, json.dumps({k: str(v) for k, v in folders.items()}),
         json.dumps(ENV_VALUES)],
        capture_output=True, text=True, env=clean_env(), timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("value", ENV_VALUES, ids=repr)
@pytest.mark.parametrize("name", CONFIGS)
def test_runner_read_from_source_is_the_release_choice(folders, release_choice, name, value):
    package = str(installed_vllm_dir())
    rule = read_runner_rule(package)
    kind = read_model_kind(str(folders[name]), package)
    choice = rule.decide(facts_for(kind, RunSettings(env_use_v2=value), has_triton=True))
    assert choice.v2 is release_choice[f"{name}/{value}"]
    # V2 builds no profiling cache in an affected release (a stub returning 0).
    assert rule.v2_profiles_nothing is RELEASE.affected


# What each release picks by default (VLLM_USE_V2_MODEL_RUNNER unset), per config.
DEFAULT_V2 = {
    "0.18.0": {"dense": False, "moe": False, "listed-moe": False, "hybrid": False, "attention-free": False},
    "0.25.0": {"dense": True, "moe": False, "listed-moe": True, "hybrid": False, "attention-free": False},
    "0.32.0": {"dense": True, "moe": True, "listed-moe": True, "hybrid": True, "attention-free": True},
}


def test_which_releases_pick_runner_v2_by_default(release_choice):
    defaults = {name: release_choice[f"{name}/None"] for name in CONFIGS}
    assert defaults == DEFAULT_V2[VLLM_RELEASE]
    rule = read_runner_rule(str(installed_vllm_dir()))
    assert release_choice["has_property"] is (VLLM_RELEASE != "0.18.0")
    assert rule.kind == ("env-only" if VLLM_RELEASE == "0.18.0" else "property")


def test_doctor_model_verdict_and_exit_code(folders, release_choice):
    if not RELEASE.affected:  # a fixed release: no model takes the path, doctor says so
        proc = subprocess.run([sys.executable, "-m", "cgguard", "doctor", "--model", str(folders["hybrid"]),
                               "--format", "json"], capture_output=True, text=True, env=clean_env(), timeout=600)
        assert proc.returncode == 0
        assert json.loads(proc.stdout)["affected"] is False
        return
    for name in CONFIGS:
        proc = subprocess.run([sys.executable, "-m", "cgguard", "doctor", "--model", str(folders[name]),
                               "--format", "json"], capture_output=True, text=True, env=clean_env(), timeout=600)
        verdict = json.loads(proc.stdout)["model_verdict"]
        v2 = release_choice[f"{name}/None"]
        # doctor reads Triton's presence from this Python; the torch wheels here bring it.
        assert verdict["runner"] == ("V2" if v2 else "V1"), verdict
        assert verdict["takes_per_token_path"] is (not v2)
        assert proc.returncode == (0 if v2 else 1)
    # A setting the worker's code skips the profiling step for: no path, whatever the runner.
    def hybrid(*flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cgguard", "doctor", "--model", str(folders["hybrid"]), *flags],
                              capture_output=True, text=True, env=clean_env(), timeout=600)

    proc = hybrid("--enforce-eager")
    assert proc.returncode == 0
    assert "Model: does not take the per-token profiling path:" in proc.stdout
    assert "enforce_eager is set" in proc.stdout
    assert hybrid("--kv-cache-memory-bytes", "1000000000").returncode == 0
    # 0.25.0's worker skips the step for cudagraph_mode NONE; 0.18.0's does not test it.
    no_graphs = hybrid("--cudagraph-mode", "NONE")
    assert no_graphs.returncode == (0 if VLLM_RELEASE == "0.25.0" else 1)
    # An architecture the release's registry does not list: the path cannot be ruled out.
    unlisted = folders["dense"].parent / "unlisted"
    unlisted.mkdir(exist_ok=True)
    (unlisted / "config.json").write_text(json.dumps({**CONFIGS["dense"], "architectures": ["NoSuchForCausalLM"]}))
    proc = subprocess.run([sys.executable, "-m", "cgguard", "doctor", "--model", str(unlisted), "--format", "json"],
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    verdict = json.loads(proc.stdout)["model_verdict"]
    assert any("registry does not list NoSuchForCausalLM" in a for a in verdict["assumed"])
    if VLLM_RELEASE == "0.25.0":  # its rule asks whether the model is hybrid
        assert verdict["takes_per_token_path"] is None and proc.returncode == 1


def test_operators_page_doctor_model_example(folders):
    """docs/operators.md shows doctor --model on a MoE config under 0.25.0; each release's
    own summary line is what the page says of it."""
    from tests.workflow.conftest import readme_snippet

    proc = subprocess.run([sys.executable, "-m", "cgguard", "doctor", "--model", str(folders["moe"])],
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    if VLLM_RELEASE == "0.25.0":
        assert readme_snippet("doctor-model", "docs/operators.md") in proc.stdout
        if "<!-- snippet: doctor-model -->" in (REPO / "README.md").read_text(encoding="utf-8"):
            assert readme_snippet("doctor-model") in proc.stdout  # the README shows the same lines
        assert proc.returncode == 1
    elif VLLM_RELEASE == "0.18.0":
        assert ("Runner: every model runs the affected V1 runner unless VLLM_USE_V2_MODEL_RUNNER=1 "
                "(vllm/v1/worker/gpu_worker.py:") in proc.stdout
        assert proc.returncode == 1
    else:
        assert "Not affected" in proc.stdout and "Runner:" not in proc.stdout
        assert proc.returncode == 0


def test_estimate_says_runner_v2_builds_no_profiling_cache(folders, release_choice):
    def estimate(**env: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "cgguard", "estimate", str(folders["dense"]), "--format", "json"],
                              capture_output=True, text=True, env=clean_env(**env), timeout=600)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    out = estimate()
    if not RELEASE.affected:  # estimate takes 0.25.0's defaults, which are not installed here
        assert out["runner"] is None and out["per_token"] is not None
        return
    v2 = release_choice["dense/None"]
    assert out["runner"]["runner"] == ("V2" if v2 else "V1")
    assert (out["per_token"] is None) is v2 and (out["ratio"] is None) is v2
    v1 = estimate(VLLM_USE_V2_MODEL_RUNNER="0")
    assert v1["runner"]["runner"] == "V1" and v1["per_token"]["blocks"] == v1["settings"]["capture_size"]
