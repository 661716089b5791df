"""What to do about the per-token profiling cache on the release a log came from.

The fix (an upgrade), cgguard's runtime guard, then the start-up settings that
skip or shrink the allocation. Those settings are the ones `cgguard doctor`
reads from a vLLM's own start-up code (:mod:`cgguard.ops.release.workarounds`), so they
are offered only when the vLLM installed here is the log's release; they are
ranked by what they cost at run time: none (a KV cache sized by hand), graphs
only up to a batch size, no graphs, no graphs and no torch.compile.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from cgguard.ops.release.workarounds import Workaround, Workarounds
from cgguard.ops.triage.verdict import Verdict, release
from cgguard.shared.bound import BOUND_TEMPLATE, FIRST_FIXED
from cgguard.shared.modes import MODE_ENV

# Substrings of a workaround's setting, cheapest first (both spellings each:
# the command-line flag and the engine argument).
COST_ORDER = (
    ("--kv-cache-memory-bytes", "kv_cache_memory_bytes"),
    ("--max-cudagraph-capture-size", "max_cudagraph_capture_size"),
    ("cudagraph_mode",),
    ("--enforce-eager", "enforce_eager"),
)
CAPTURE_SIZE_RANK = 1


@dataclass(frozen=True)
class Step:
    action: str
    effect: str
    cost: str
    evidence: str | None = None  # PATH:LINE in vLLM's source, for a setting

    def to_json(self) -> dict:
        return asdict(self)


def cost_rank(w: Workaround) -> int:
    """Position of a setting in :data:`COST_ORDER` (unknown ones last)."""
    for rank, spellings in enumerate(COST_ORDER):
        if any(s in w.setting for s in spellings):
            return rank
    return len(COST_ORDER)


def _fixed_text() -> str:
    return ".".join(map(str, FIRST_FIXED))


def plan(
    verdict: Verdict, workarounds: Workarounds | None, installed: str | None
) -> tuple[list[Step], str | None]:
    """(steps, note) for a this-bug verdict: the steps in order, and a line on
    where the settings come from (or why none are listed)."""
    bound = verdict.numbers.get("bound_blocks")
    seqs = verdict.numbers.get("max_num_seqs")
    at_bound = f" ({bound:,} blocks here)" if isinstance(bound, int) else ""
    formula = BOUND_TEMPLATE.format(
        requests="max_num_seqs", capture="max_cudagraph_capture_size", fallback="1"
    )
    steps = [
        Step(
            f"upgrade vLLM to {_fixed_text()} or later",
            f"it sizes the profiling cache {formula}{at_bound}",
            "an upgrade",
        ),
        Step(
            f"install cgguard into vLLM's environment and start vLLM with {MODE_ENV}=fix",
            f"cgguard's plugin has vLLM build the profiling cache at the bound{at_bound}",
            "none at run time (cgguard installed beside vLLM)",
        ),
    ]
    version = verdict.version
    if workarounds is None:
        where = f"vLLM {version}" if version else "the log's vLLM"
        note = (
            f"Settings that skip or shrink the allocation on {where}: run `cgguard doctor` "
            f"where {where} is installed; it reads them from that release's start-up code"
            + (f" (the vLLM here is {installed})." if installed else ".")
        )
        return steps, note
    if not workarounds.found:
        return steps, workarounds.note
    for w in sorted(workarounds.found, key=cost_rank):
        effect = w.effect
        if cost_rank(w) == CAPTURE_SIZE_RANK and isinstance(seqs, int):
            effect += f"; with N = max_num_seqs ({seqs}) it takes at most {seqs} blocks"
        steps.append(Step(w.setting, effect, w.cost, w.evidence))
    return steps, f"Settings read from the installed vLLM {installed}'s start-up code."


def same_release(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and release(a) is not None and release(a) == release(b)
