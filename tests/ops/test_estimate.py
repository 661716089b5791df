"""`cgguard estimate` against hand-computed figures (docs/vllm.md, "Memory arithmetic")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cgguard.ops.estimate.cli import estimate
from tests.conftest import cli_runner, run_cgguard

KiB, MiB, GiB = 1024, 1024**2, 1024**3


def _runner():
    return cli_runner()

# Llama-3-8B's config.json (the fields that matter, as published): no head_dim, so
# head_dim = 4096 // 32 = 128.
LLAMA3_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "vocab_size": 128256,
    "torch_dtype": "bfloat16",
}

# DeepSeek-V3's config.json: MLA with a 512-wide latent and 64 rope dims.
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "num_hidden_layers": 61,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "torch_dtype": "bfloat16",
}


def model(tmp_path: Path, config: dict | str, name: str = "model") -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    return d


# The release, GPU and entry point named: none of vLLM's defaults for them is assumed.
NAMED = ("--vllm-version", "0.25.0", "--gpu", "H100", "--entry-point", "serve")
# A capture size of 8192 stays 8192 only where max_num_batched_tokens allows it.
WIDE = ("--max-num-batched-tokens", "8192")


def run_json(*args: str) -> dict:
    result = _runner().invoke(estimate, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_llama3_8b_field_notes_example(tmp_path):
    d = model(tmp_path, LLAMA3_8B)
    out = run_json(str(d), "--max-cudagraph-capture-size", "8192", "--max-num-seqs", "256", *WIDE, *NAMED)
    # 32 layers x 16 tokens x (2 x 8 heads x 128 x 2 bytes) = 2 MiB
    assert out["bytes_per_token_per_layer"] == 2 * 8 * 128 * 2 == 4 * KiB
    assert out["bytes_per_block"] == 32 * 16 * 4096 == 2 * MiB
    assert out["per_token"] == {"blocks": 8192, "bytes": 16 * GiB}
    assert out["per_sequence"] == {"blocks": 256, "bytes": 512 * MiB}
    assert out["ratio"] == 32
    assert out["assumed"] == [
        "head_dim 128 = hidden_size 4096 / num_attention_heads 32 (no head_dim)",
        "block size 16 (vLLM's usual default; some attention backends use more)",
    ]

    text = _runner().invoke(estimate, [str(d), "--max-cudagraph-capture-size", "8192", *WIDE])
    assert text.exit_code == 0
    assert "2 MiB (2,097,152 bytes" in text.stdout
    lines = text.stdout.splitlines()
    per_token = next(line for line in lines if line.startswith("per-token "))
    per_seq = next(line for line in lines if line.startswith("per-sequence"))
    assert per_token.split()[-3:] == ["8,192", "16", "GiB"]
    assert per_seq.split()[-3:] == ["256", "512", "MiB"]
    assert "per-token / per-sequence: 32x" in text.stdout
    # said it was assumed, with where it comes from
    assert "max_num_seqs 256 (vLLM's default on a GPU under 70 GiB or an A100" in text.stdout


def test_llama3_8b_tensor_parallel_2(tmp_path):
    d = model(tmp_path, LLAMA3_8B)
    out = run_json(str(d), "--max-cudagraph-capture-size", "8192", "--tensor-parallel-size", "2", *WIDE)
    # 4 KV heads per rank: half the block.
    assert out["model"]["kv_heads_per_rank"] == 4
    assert out["bytes_per_block"] == 32 * 16 * (2 * 4 * 128 * 2) == 1 * MiB
    assert out["per_token"] == {"blocks": 8192, "bytes": 8 * GiB}
    assert out["per_sequence"] == {"blocks": 256, "bytes": 256 * MiB}


def test_more_ranks_than_kv_heads_keep_one_head_each(tmp_path):
    d = model(tmp_path, LLAMA3_8B)
    out = run_json(str(d), "--max-cudagraph-capture-size", "8192", "-tp", "16")
    assert out["model"]["kv_heads_per_rank"] == 1
    assert out["bytes_per_block"] == 32 * 16 * (2 * 1 * 128 * 2) == 256 * KiB
    assert out["notes"] == ["8 KV heads over 16 ranks: each rank keeps 1"]


def test_deepseek_v3_mla(tmp_path):
    d = model(tmp_path, DEEPSEEK_V3)
    out = run_json(str(d), "--max-cudagraph-capture-size", "8192", "--max-num-seqs", "256", *WIDE)
    # (512 + 64) x 2 bytes per token per layer, no K/V doubling: 1,152 bytes.
    assert out["model"]["attention"] == "mla"
    assert out["bytes_per_token_per_layer"] == (512 + 64) * 2 == 1152
    assert out["bytes_per_block"] == 61 * 16 * 1152 == 1_124_352
    assert out["per_token"] == {"blocks": 8192, "bytes": 8192 * 1_124_352}  # 8.58 GiB
    assert out["per_sequence"] == {"blocks": 256, "bytes": 256 * 1_124_352}  # 274.5 MiB
    # MLA is replicated, not split, across tensor-parallel ranks.
    tp8 = run_json(str(d), "--max-cudagraph-capture-size", "8192", "-tp", "8")
    assert tp8["bytes_per_block"] == 1_124_352
    assert "replicated on every rank" in tp8["notes"][0]


def test_kv_cache_dtypes(tmp_path):
    llama = model(tmp_path, LLAMA3_8B, "llama")
    ds = model(tmp_path, DEEPSEEK_V3, "ds")
    assert run_json(str(llama), "--kv-cache-dtype", "fp8")["bytes_per_block"] == 1 * MiB
    assert run_json(str(llama), "--kv-cache-dtype", "fp8_e5m2")["bytes_per_block"] == 1 * MiB
    assert run_json(str(ds), "--kv-cache-dtype", "fp8")["bytes_per_block"] == 61 * 16 * 576
    # DeepSeek's packed fp8 layout: 656 bytes per token per layer.
    assert run_json(str(ds), "--kv-cache-dtype", "fp8_ds_mla")["bytes_per_block"] == 61 * 16 * 656
    bad = _runner().invoke(estimate, [str(llama), "--kv-cache-dtype", "fp8_ds_mla"])
    assert bad.exit_code == 2
    assert bad.stderr == "cgguard estimate: error: --kv-cache-dtype fp8_ds_mla needs an MLA model (config has no kv_lora_rank)\n"


def test_float32_checkpoint_follows_vllm_dtype_resolution(tmp_path):
    d = model(tmp_path, {**LLAMA3_8B, "torch_dtype": "float32"})
    auto = run_json(str(d))
    assert auto["bytes_per_block"] == 2 * MiB  # vLLM's --dtype auto runs float32 checkpoints in 16 bits
    assert "16 bits" in auto["kv_cache_dtype_source"]
    assert run_json(str(d), "--dtype", "float32")["bytes_per_block"] == 4 * MiB


def test_capture_sizes_list_uses_its_largest(tmp_path):
    d = model(tmp_path, LLAMA3_8B)
    out = run_json(str(d), "--cudagraph-capture-sizes", "1,2,4,8,16,8192,512", *WIDE)
    assert out["settings"]["capture_size"] == 8192
    assert out["per_token"]["bytes"] == 16 * GiB
    # vLLM keeps only the sizes within max_num_batched_tokens (2048 for `serve` on a smaller GPU).
    capped = run_json(str(d), "--cudagraph-capture-sizes", "1,2,4,8,16,8192,512")
    assert capped["settings"]["capture_size"] == 512
    assert any(a.startswith("capture size 512: the largest listed size within max_num_batched_tokens 2048")
               for a in capped["assumed"])


def test_defaults_are_vllms_and_said_to_be_assumed(tmp_path):
    d = model(tmp_path, LLAMA3_8B)
    out = run_json(str(d))
    assert out["settings"] == {"max_num_seqs": 256, "max_num_batched_tokens": 2048, "capture_size": 512,
                               "block_size": 16, "tensor_parallel_size": 1}
    assert out["per_token"] == {"blocks": 512, "bytes": 1 * GiB}
    assert out["per_sequence"] == {"blocks": 256, "bytes": 512 * MiB}
    assert [a.split(" (")[0] for a in out["assumed"]] == [
        "head_dim 128 = hidden_size 4096 / num_attention_heads 32",
        "vLLM 0.25.0's defaults, the last affected release",
        "a GPU under 70 GiB",
        "entry point `serve`",
        "chunked prefill on",
        "max_num_batched_tokens 2048",
        "max_num_seqs 256",
        "capture size 512 tokens",
        "block size 16",
    ]
    # vLLM's default capture size follows max_num_seqs: min(2 x 8, 512) = 16.
    small = run_json(str(d), "--max-num-seqs", "8")
    assert small["settings"]["capture_size"] == 16
    assert (small["per_token"]["blocks"], small["per_sequence"]["blocks"]) == (16, 8)


def test_gpu_and_entry_point_pick_vllms_defaults(tmp_path):
    d = model(tmp_path, {**LLAMA3_8B, "max_position_embeddings": 8192})
    h100 = run_json(str(d), "--gpu", "H100")
    assert (h100["settings"]["max_num_seqs"], h100["settings"]["max_num_batched_tokens"]) == (1024, 8192)
    # On an H100 at defaults both formulas take 512 blocks: nothing at stake.
    assert h100["per_token"] == h100["per_sequence"] == {"blocks": 512, "bytes": 1 * GiB}
    assert h100["ratio"] == 1
    llm = run_json(str(d), "--gpu-memory-gib", "80", "--entry-point", "LLM")
    assert (llm["settings"]["max_num_seqs"], llm["settings"]["max_num_batched_tokens"]) == (1024, 16384)
    a100 = run_json(str(d), "--gpu", "A100", "--entry-point", "LLM")
    assert (a100["settings"]["max_num_seqs"], a100["settings"]["max_num_batched_tokens"]) == (256, 8192)
    # Speculative decoding widens the default capture size: min(64 x (1 + 1) x 2, 512) = 256.
    spec = run_json(str(d), "--max-num-seqs", "64", "--num-speculative-tokens", "1")
    assert spec["settings"]["capture_size"] == 256
    # A capture size beyond max_num_batched_tokens is cut to it (2048 for `serve` below 70 GiB).
    cut = run_json(str(d), "--max-cudagraph-capture-size", "8192")
    assert cut["settings"]["capture_size"] == 2048
    assert any(a.startswith("capture size 2048 tokens (--max-cudagraph-capture-size 8192, at most "
                            "max_num_batched_tokens 2048") for a in cut["assumed"])


def test_more_sequences_than_capture_tokens_costs_the_same(tmp_path):
    d = model(tmp_path, LLAMA3_8B)
    out = run_json(str(d), "--max-num-seqs", "1024", "--max-cudagraph-capture-size", "512", "--block-size", "32")
    assert out["bytes_per_block"] == 4 * MiB
    assert out["per_token"] == out["per_sequence"] == {"blocks": 512, "bytes": 2 * GiB}
    assert out["ratio"] == 1


def test_multimodal_text_config_and_explicit_head_dim(tmp_path):
    text = {k: v for k, v in LLAMA3_8B.items() if k != "torch_dtype"}
    llava = {
        "model_type": "llava",
        "torch_dtype": "bfloat16",
        "text_config": text,
        "vision_config": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16},
    }
    out = run_json(str(model(tmp_path, llava, "llava")))
    assert out["model"]["text_section"] == "text_config" and out["model"]["num_layers"] == 32
    assert out["bytes_per_block"] == 2 * MiB

    # Gemma-style: head_dim given (not hidden_size // heads), sliding-window layers.
    gemma = {
        "model_type": "gemma3_text", "hidden_size": 2560, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "num_hidden_layers": 34, "sliding_window": 1024, "torch_dtype": "bfloat16",
        "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    }
    g = run_json(str(model(tmp_path, gemma, "gemma")))
    assert g["bytes_per_block"] == 34 * 16 * (2 * 4 * 256 * 2)
    assert g["notes"] == ["sliding-window layers are counted like full-attention layers"]


def test_hybrid_model_is_flagged(tmp_path):
    # A Mamba/attention hybrid: the block size vLLM uses is not 16, and the output says so.
    hybrid = {
        "model_type": "nemotron_h", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 52, "hybrid_override_pattern": "M-M-M-M*-" * 5 + "M-M-M-M",
        "mamba_d_state": 128, "torch_dtype": "bfloat16",
    }
    out = run_json(str(model(tmp_path, hybrid)), "--block-size", "1024")
    # Only the 5 attention layers ("*" in the pattern) hold K and V.
    assert out["bytes_per_block"] == 5 * 1024 * (2 * 8 * 128 * 2)
    assert "5 attention layers, counted in config.json's layer list" in out["assumed"]
    assert "24 state layers, counted in config.json's layer list" in out["assumed"]
    assert out["notes"] == ["hybrid model: block size 1024 from --block-size (the N of vLLM's log line "
                            "'Setting attention block size to N tokens', say)",
                            "vLLM puts the 5 attention and 24 state layers in groups of 5 and allocates "
                            "one pool per layer of a group, each shared by every group "
                            "(vllm/v1/core/kv_cache_utils.py): a block costs 5 pages"]
    # Without it, no affected vLLM installed to compute it, and no architecture to read
    # the state's fields for: said so.
    bare = run_json(str(model(tmp_path, hybrid, "bare")))
    assert bare["settings"]["block_size"] == 16
    assert bare["hybrid"]["block_size_source"] is None
    assert "vLLM 0.25.0 is not installed here to compute it" in bare["notes"][0]
    assert "names no architecture (field 'architectures')" in bare["notes"][0]
    assert bare["notes"][0].endswith("; pass --block-size N, the N of vLLM's log line "
                                     "'Setting attention block size to N tokens'")
    assert run_json(str(model(tmp_path, LLAMA3_8B, "plain")))["notes"] == []


@pytest.mark.parametrize(
    "config, message",
    [
        ({k: v for k, v in LLAMA3_8B.items() if k != "num_hidden_layers"}, "missing field 'num_hidden_layers'"),
        ({**LLAMA3_8B, "num_key_value_heads": "8"}, "field 'num_key_value_heads' must be a positive integer, got '8'"),
        ({**LLAMA3_8B, "num_attention_heads": 0}, "field 'num_attention_heads' must be a positive integer, got 0"),
        ({k: v for k, v in LLAMA3_8B.items() if k != "hidden_size"}, "missing field 'hidden_size'"),
        ({**LLAMA3_8B, "torch_dtype": "int8"}, "field 'torch_dtype' must be one of bfloat16, float16, float32, got 'int8'"),
        ({k: v for k, v in DEEPSEEK_V3.items() if k != "qk_rope_head_dim"}, "missing field 'qk_rope_head_dim'"),
        ({"model_type": "llava", "text_config": {"num_attention_heads": 32}}, "missing field 'num_hidden_layers' (looked in text_config and the top level)"),
        ('{"num_hidden_layers": 32,', "not valid JSON (line 1, column 26"),
        ("[1, 2]", "expected a JSON object, got list"),
    ],
)
def test_bad_config_names_the_field_and_exits_2(tmp_path, config, message):
    d = model(tmp_path, config)
    result = _runner().invoke(estimate, [str(d)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"cgguard estimate: error: {d / 'config.json'}: {message}")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-cudagraph-capture-size", "512", "--cudagraph-capture-sizes", "1,2"], "not both"),
        (["--cudagraph-capture-sizes", "1,x"], "--cudagraph-capture-sizes: 'x' is not a positive integer"),
        (["--cudagraph-capture-sizes", ","], "--cudagraph-capture-sizes: ',' has an empty entry"),
        (["--vllm-version", "0.32.0"], "--vllm-version 0.32.0: not one of the affected releases (0.18.0 to 0.25.x)"),
        (["--gpu", "H100", "--gpu-memory-gib", "80"], "give --gpu or --gpu-memory-gib, not both"),
    ],
)
def test_bad_options_exit_2(tmp_path, args, message):
    d = model(tmp_path, LLAMA3_8B)
    result = _runner().invoke(estimate, [str(d), *args])
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "sizes, message",
    [
        ("", "no sizes given"),
        ("  ", "no sizes given"),
        (",", "',' has an empty entry"),
        ("1,,2", "'1,,2' has an empty entry"),
        ("1,2,", "'1,2,' has an empty entry"),
        ("a,b", "'a' is not a positive integer"),
        ("0", "'0' is not a positive integer"),
        ("-8", "'-8' is not a positive integer"),
        ("8,-1", "'-1' is not a positive integer"),
        ("1.5", "'1.5' is not a positive integer"),
    ],
)
def test_malformed_capture_size_list_is_one_error_line(tmp_path, sizes, message):
    d = model(tmp_path, LLAMA3_8B)
    proc = run_cgguard("estimate", str(d), "--cudagraph-capture-sizes", sizes)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == f"cgguard estimate: error: --cudagraph-capture-sizes: {message}" + (
        " (expected N,N,..., e.g. 1,2,4,8)\n" if message == "no sizes given" else
        " (expected N,N,...)\n" if "empty entry" in message else "\n"
    )


@pytest.mark.parametrize("config, tp, heads", [(LLAMA3_8B, 3, 32), (LLAMA3_8B, 64, 32), (DEEPSEEK_V3, 3, 128)])
def test_tensor_parallel_size_vllm_refuses_is_refused(tmp_path, config, tp, heads):
    # vLLM's ModelConfig.verify_with_parallel_config: "Total number of attention heads
    # (X) must be divisible by tensor parallel size (Y)."
    d = model(tmp_path, config)
    proc = run_cgguard("estimate", str(d), "--tensor-parallel-size", str(tp))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        f"cgguard estimate: error: --tensor-parallel-size {tp}: total number of attention heads ({heads}) "
        f"must be divisible by tensor parallel size ({tp}), as vLLM requires ({d / 'config.json'})\n"
    )


def test_missing_model_dir_and_missing_config(tmp_path):
    result = _runner().invoke(estimate, [str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"cgguard estimate: error: {tmp_path / 'nope'}: no such directory. ")
    assert result.stderr.count("\n") == 1
    (tmp_path / "empty").mkdir()
    result = _runner().invoke(estimate, [str(tmp_path / "empty")])
    assert result.exit_code == 2
    assert f"{tmp_path / 'empty' / 'config.json'}: no such file" in result.stderr
    assert "hf download ORG/MODEL config.json" in result.stderr


def test_a_hub_model_id_is_told_what_model_dir_is_and_how_to_fetch_config_json(tmp_path):
    # What a new user types first: the model's Hugging Face name, not a folder.
    proc = run_cgguard("estimate", "meta-llama/Meta-Llama-3-8B", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        "cgguard estimate: error: meta-llama/Meta-Llama-3-8B: no such directory. MODEL_DIR is a local folder "
        "holding the model's config.json (nothing is downloaded); fetch just that file with: "
        "hf download meta-llama/Meta-Llama-3-8B config.json --local-dir Meta-Llama-3-8B\n"
    )
    help_text = run_cgguard("estimate", "--help").stdout
    assert "MODEL_DIR is a local folder holding the model's Hugging Face config.json" in help_text
    assert "hf download ORG/MODEL config.json --local-dir MODEL_DIR" in help_text


def test_every_derived_value_is_listed_under_assumed(tmp_path):
    # No head_dim, no num_key_value_heads, no dtype: each value worked out is said so.
    config = {k: v for k, v in LLAMA3_8B.items() if k not in ("num_key_value_heads", "torch_dtype")}
    d = model(tmp_path, config)
    proc = run_cgguard("estimate", str(d), "--max-num-seqs", "256", "--max-cudagraph-capture-size", "8192",
                       "--block-size", "16", *WIDE, *NAMED)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assumed = lines[lines.index("Assumed:") + 1:]
    assert assumed == [
        "  - 32 KV heads = num_attention_heads (no num_key_value_heads: plain multi-head attention)",
        "  - head_dim 128 = hidden_size 4096 / num_attention_heads 32 (no head_dim)",
        "  - KV cache dtype bfloat16 (config.json names no dtype; vLLM runs it in 16 bits)",
    ]
    # A multimodal config: which section the text model came from.
    nested = model(tmp_path, {"model_type": "llava", "text_config": LLAMA3_8B}, name="mm")
    out = run_json(str(nested), "--max-num-seqs", "256", "--block-size", "16", "--max-cudagraph-capture-size", "512",
                   *WIDE, *NAMED)
    assert out["assumed"][0] == "the text model's fields from text_config (the top level where it has none)"
    # Everything stated: nothing assumed, no "Assumed:" block.
    stated = model(tmp_path, {**LLAMA3_8B, "head_dim": 128}, name="stated")
    full = run_cgguard("estimate", str(stated), "--max-num-seqs", "256", "--max-cudagraph-capture-size", "512",
                       "--block-size", "16", *WIDE, *NAMED)
    assert full.returncode == 0 and "Assumed" not in full.stdout


def test_real_cli_registers_estimate(tmp_path):
    # Through `python -m cgguard` (the lazily registered command), a config.json path works too.
    d = model(tmp_path, LLAMA3_8B)
    proc = run_cgguard("estimate", str(d / "config.json"), "--max-cudagraph-capture-size", "8192", *WIDE,
                       "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["per_token"]["bytes"] == 16 * GiB


def test_operators_page_h100_example(tmp_path):
    from tests.workflow.conftest import readme_snippet

    d = model(tmp_path, {**LLAMA3_8B, "max_position_embeddings": 8192})
    proc = run_cgguard("estimate", str(d), "--gpu", "H100", "--vllm-version", "0.25.0")
    assert proc.returncode == 0, proc.stderr
    assert readme_snippet("estimate-h100", "docs/operators.md") in proc.stdout


def test_readme_h100_sentence(tmp_path):
    """The README's `--gpu H100` sentence: 1x at vLLM 0.18.0's defaults (a release that runs
    every model on the V1 runner, so a table is printed wherever it runs)."""
    import re

    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    d = model(tmp_path, {**LLAMA3_8B, "max_position_embeddings": 8192})
    proc = run_cgguard("estimate", str(d), "--gpu", "H100", "--vllm-version", "0.18.0")
    assert proc.returncode == 0, proc.stderr
    assert "per-token / per-sequence: 1x" in proc.stdout
    said = re.search(r"`cgguard estimate ~/models/Meta-Llama-3-8B --gpu H100 --vllm-version 0.18.0` prints\s+`([^`]+)`",
                     readme)
    if said:
        assert said.group(1) in proc.stdout
