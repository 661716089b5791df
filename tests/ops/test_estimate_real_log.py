"""`cgguard estimate`'s bytes per block against what two real vLLM logs report (issue 38).

The logs (tests/ops/logs/, their lines verbatim, each with its public address) are two
start-ups of Qwen3.6-35B-A3B (an NVFP4 checkpoint: the weights are quantized, the layers
and states are the published model's) on one RTX 5090 with vLLM 0.24.0, an fp8 KV cache,
prefix caching on, max_model_len 131072 and no speculative decoding. Each prints the KV
cache memory the profiler left and the token capacity vLLM reports for it:

- ``Available KV cache memory: X GiB`` is ``round(bytes / GiB, 2)`` (vLLM's
  ``format_gib``): the bytes lie within half a hundredth of a GiB of X.
- The blocks: ``bytes // page_size // group_size`` (``get_num_blocks``, the "General
  case" of ``get_kv_cache_config_from_groups``), that is bytes // (bytes per block).
- ``GPU KV cache size: N tokens`` is ``int(num_blocks / blocks_per_request *
  max_model_len)`` (0.25.0's ``get_kv_cache_capacity`` and
  ``get_max_concurrency_for_kv_cache_config``; the logs print it from
  kv_cache_utils.py:2146, that release's line for it too), and "Maximum concurrency"
  is the ratio with two decimals. A request of max_model_len tokens takes
  ``cdiv(max_model_len, block_size)`` blocks of the attention group and, with prefix
  caching on, two of each state group: the Qwen3.5 / 3.6 classes lack Mamba prefix
  caching, so vLLM puts their state in the "align" cache mode, where
  ``MambaSpec.max_memory_usage_bytes`` is two pages. (0.18.0 reported
  ``num_blocks // len(groups) * block_size`` instead, vllm-project/vllm#40691: a log
  of that release takes that step.)

The estimate's bytes per block, taken through these steps, must give the very token
count and concurrency each log prints; a block of one page per layer (all 40), the
reading before grouping, must not, and neither must a state kept in bfloat16.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest

from cgguard.ops.estimate.cli import estimate
from tests.conftest import cli_runner
from tests.ops.test_estimate_grouping import QWEN3_6_35B_A3B

GiB = 1024**3
LOGS = Path(__file__).parent / "logs"
REAL_LOGS = sorted(LOGS.glob("qwen3.6-35b-a3b-*.log"))
# vLLM's state blocks per request in "align" mode (two pages), with no speculative tokens.
ALIGN_STATE_BLOCKS = 2


@dataclass(frozen=True)
class LogFacts:
    source: str
    args: dict
    version: str
    available_gib: str  # as printed, two decimals
    tokens: int
    max_model_len: int
    concurrency: str  # as printed, "%.2f"


def read_log(path: Path) -> LogFacts:
    text = path.read_text()

    def one(pattern: str) -> re.Match:
        found = list(re.finditer(pattern, text, re.MULTILINE))
        assert len(found) == 1, f"{path.name}: {pattern!r} found {len(found)} times"
        return found[0]

    capacity = one(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x$")
    return LogFacts(
        source=one(r"^# Source: (\S+)").group(1),
        args=ast.literal_eval(one(r"non-default args: (\{.*\})$").group(1)),
        version=one(r"Initializing a V1 LLM engine \(v([\d.]+)\)").group(1),
        available_gib=one(r"Available KV cache memory: ([\d.]+) GiB$").group(1),
        tokens=int(one(r"GPU KV cache size: ([\d,]+) tokens$").group(1).replace(",", "")),
        max_model_len=int(capacity.group(1).replace(",", "")),
        concurrency=capacity.group(2),
    )


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def capacities(facts: LogFacts, out: dict) -> dict[int, tuple[int, str]]:
    """{blocks: (reported tokens, printed concurrency)} for every byte count the log's
    rounded "Available KV cache memory" allows, at the estimate's bytes per block."""
    hybrid = out["hybrid"]
    group = hybrid["group_size"]
    state_groups = cdiv(hybrid["state_layers"], group)
    attention_groups = cdiv(hybrid["attention_layers"], group)
    assert attention_groups == 1  # one block table of attention pages per request
    per_request = cdiv(facts.max_model_len, out["settings"]["block_size"])
    per_request += state_groups * ALIGN_STATE_BLOCKS
    # Every whole byte count that round(bytes / GiB, 2) prints as the log does (ties
    # either way), and the blocks each one holds.
    shown = Fraction(facts.available_gib)
    low = math.ceil((shown - Fraction(1, 200)) * GiB)
    high = math.floor((shown + Fraction(1, 200)) * GiB)
    per_block = out["bytes_per_block"]
    found = {}
    for blocks in range(low // per_block, high // per_block + 1):
        concurrency = blocks / per_request
        found[blocks] = (int(concurrency * facts.max_model_len), f"{concurrency:.2f}")
    return found


@pytest.fixture(scope="module")
def estimated(tmp_path_factory: pytest.TempPathFactory):
    """run_estimate, once per config and options (the two logs' settings are the same)."""
    done: dict[str, dict] = {}

    def run(config: dict, facts: LogFacts, *extra: str) -> dict:
        key = json.dumps([config, facts.args, extra], sort_keys=True)
        if key not in done:
            done[key] = run_estimate(tmp_path_factory.mktemp("model"), config, facts, *extra)
        return done[key]

    return run


def run_estimate(folder: Path, config: dict, facts: LogFacts, *extra: str) -> dict:
    (folder / "config.json").write_text(json.dumps(config))
    args = facts.args
    result = cli_runner().invoke(
        estimate,
        [
            str(folder),
            "--vllm-version",
            "0.25.0",  # the release whose source the capacity arithmetic is read from
            "--kv-cache-dtype",
            args["kv_cache_dtype"],
            "--dtype",
            args["dtype"],
            "--max-model-len",
            str(args["max_model_len"]),
            "--max-num-seqs",
            str(args["max_num_seqs"]),
            "--max-num-batched-tokens",
            str(args["max_num_batched_tokens"]),
            "--tensor-parallel-size",
            str(args.get("tensor_parallel_size", 1)),
            *extra,
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_logs_are_what_the_test_assumes():
    assert [p.name for p in REAL_LOGS] == [
        "qwen3.6-35b-a3b-rtx5090-612.log",
        "qwen3.6-35b-a3b-rtx5090-652.log",
    ]
    for path in REAL_LOGS:
        facts = read_log(path)
        assert facts.source.startswith("https://github.com/noonghunna/club-3090/issues/")
        assert facts.version == "0.24.0"
        assert facts.args["enable_prefix_caching"] is True  # state blocks in "align" mode
        assert "speculative_config" not in facts.args  # no MTP layer, no speculative blocks
        assert facts.args["max_model_len"] == facts.max_model_len


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.stem)
@pytest.mark.parametrize("with_block_size", [False, True], ids=["fields", "--block-size"])
def test_bytes_per_block_give_the_logs_token_capacity(estimated, path, with_block_size):
    facts = read_log(path)
    # 2096: the block size vLLM sets for this model with an fp8 cache (one float32 state
    # over a 1,024-byte token of attention, in 16-token kernel blocks).
    extra = ("--block-size", "2096") if with_block_size else ()
    out = estimated(QWEN3_6_35B_A3B, facts, *extra)
    assert out["settings"]["block_size"] == 2096
    assert out["hybrid"]["group_size"] == 10
    assert out["bytes_per_block"] == 10 * 2096 * 1024
    found = capacities(facts, out)
    matching = [b for b, (tokens, _) in found.items() if tokens == facts.tokens]
    assert len(matching) == 1, (facts.tokens, found)
    assert found[matching[0]][1] == facts.concurrency

    # One page per layer, as before grouping: a block 4x the size, a quarter of the
    # blocks, and a capacity the log does not report.
    ungrouped = {**out, "bytes_per_block": 40 * out["hybrid"]["page_bytes"]}
    assert facts.tokens not in {t for t, _ in capacities(facts, ungrouped).values()}


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.stem)
def test_the_logs_show_the_float32_state(estimated, path):
    """The same config without ``mamba_ssm_dtype`` keeps the state in bfloat16: smaller
    pages and blocks (1072 tokens), and a capacity neither log reports."""
    facts = read_log(path)
    text = {k: v for k, v in QWEN3_6_35B_A3B["text_config"].items() if k != "mamba_ssm_dtype"}
    out = estimated({**QWEN3_6_35B_A3B, "text_config": text}, facts)
    assert out["settings"]["block_size"] == 1072
    assert facts.tokens not in {t for t, _ in capacities(facts, out).values()}


def test_the_numbers():
    """The arithmetic written out. A block is 10 pages of 2096 x 1024 bytes; a request of
    131,072 tokens takes 63 attention blocks and 2 of each of the 3 state groups, 69 in
    all. 5.98 GiB holds 298 or 299 blocks, 6.01 GiB 300; one page per layer, 74 and 75."""
    out = {
        "hybrid": {"group_size": 10, "attention_layers": 10, "state_layers": 30},
        "settings": {"block_size": 2096},
        "bytes_per_block": 10 * 2096 * 1024,
    }
    first, second = (read_log(p) for p in REAL_LOGS)
    assert (first.tokens, first.concurrency) == (567_978, "4.33")
    assert capacities(first, out) == {298: (566_079, "4.32"), 299: (567_978, "4.33")}
    assert (second.tokens, second.concurrency) == (569_878, "4.35")
    assert capacities(second, out) == {300: (569_878, "4.35")}
    ungrouped = {**out, "bytes_per_block": 40 * 2096 * 1024}
    assert capacities(first, ungrouped) == {74: (140_569, "1.07")}
    assert capacities(second, ungrouped) == {75: (142_469, "1.09")}
