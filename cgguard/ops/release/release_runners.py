"""Which runner each affected release puts a model on, where no release's source is here.

Where the release's source is installed, doctor and estimate read its rule
(:mod:`runner_source`). Otherwise this is the rule of each affected release's
``VllmConfig.use_v2_model_runner`` (``vllm/config/vllm.py``), as docs/vllm.md
records it, by what config.json says of the model: 0.18.0-0.21.x run every model
on V1; 0.22.0 runs a dense, unquantized ``Qwen3ForCausalLM`` on V2; 0.23.0 runs
dense, unquantized models of the architectures it lists (Llama, Mistral, Qwen3
among them) on V2; 0.24.0 any architecture it lists; 0.25.0 its listed MoE
architectures and every model that is not MoE, never a hybrid one. V2 needs
Triton and no feature V2 lacks: a CUDA GPU with Triton is assumed. Model runner
V2 builds no profiling KV cache in these releases (its ``profile_cudagraph_memory``
returns 0), so nothing is at stake there. Where a release's list is not known
here, the answer is left open and says how to settle it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Architectures the releases' lists are known to hold (the rest of a list is not).
V0_22_LISTED = frozenset({"Qwen3ForCausalLM"})
V0_23_LISTED_DENSE = frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"})
V0_25_LISTED = frozenset({"DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "Qwen2MoeForCausalLM"})
ASSUMED = "V2 where Triton runs on a CUDA GPU and no feature V2 lacks is in use"
NOTHING_AT_STAKE = "model runner V2 builds no profiling KV cache: nothing is at stake on it"


@dataclass(frozen=True)
class ReleaseRunner:
    releases: str  # "0.18.0-0.21.x", "0.25.0"
    release: tuple[int, int]  # the first (major, minor) it covers
    runner: str | None  # "V1" (affected), "V2", None: not known here
    why: str

    def to_json(self) -> dict:
        return {"releases": self.releases, "runner": self.runner, "why": self.why}


def runners_by_release(
    arch: str, is_moe: bool, is_quantized: bool, is_hybrid: bool
) -> list[ReleaseRunner]:
    """The runner each affected release gives a model of this kind by default."""
    dense = not is_moe and not is_quantized and not is_hybrid
    out = [ReleaseRunner("0.18.0-0.21.x", (0, 18), "V1", "no model runs V2 by default")]
    if dense and arch in V0_22_LISTED:
        out.append(ReleaseRunner("0.22.0", (0, 22), "V2", f"{arch}, dense and not quantized"))
    else:
        out.append(
            ReleaseRunner(
                "0.22.0", (0, 22), "V1", "only a dense, unquantized Qwen3ForCausalLM runs V2"
            )
        )
    if is_moe or is_quantized:
        out.append(ReleaseRunner("0.23.0", (0, 23), "V1", "MoE and quantized models run V1"))
    elif dense and arch in V0_23_LISTED_DENSE:
        out.append(ReleaseRunner("0.23.0", (0, 23), "V2", f"{arch} is on its list, dense"))
    else:
        out.append(
            ReleaseRunner(
                "0.23.0",
                (0, 23),
                None,
                f"V2 only if its list names {arch}; cgguard doctor reads the list",
            )
        )
    out.append(
        ReleaseRunner(
            "0.24.0",
            (0, 24),
            None,
            f"V2 only if its list names {arch}; cgguard doctor reads the list",
        )
    )
    if is_hybrid:
        out.append(ReleaseRunner("0.25.0", (0, 25), "V1", "hybrid models run V1"))
    elif arch in V0_25_LISTED:
        out.append(ReleaseRunner("0.25.0", (0, 25), "V2", f"{arch} is on its list"))
    elif not is_moe:
        out.append(ReleaseRunner("0.25.0", (0, 25), "V2", "models that are not MoE run V2"))
    else:
        out.append(ReleaseRunner("0.25.0", (0, 25), "V1", "MoE models not on its list run V1"))
    return out


def runner_of(rows: list[ReleaseRunner], release: tuple[int, int, int]) -> ReleaseRunner:
    """The row that covers ``release``."""
    return [r for r in rows if r.release <= release[:2]][-1]
