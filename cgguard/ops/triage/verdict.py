"""Is the failure in a log the per-token profiling KV cache? The verdict and its reasons.

vLLM 0.18.0-0.25.x build a throwaway KV cache of ``max_cudagraph_capture_size``
blocks before profiling CUDA-graph memory; one block per sequence is enough
(:mod:`cgguard.shared.bound`). A log shows that allocation in two ways: the
count, where the release logs it ("Overriding num_gpu_blocks=0 with
num_gpu_blocks_override=N": the profiling call asks for no memory, so the old
count is 0), and a failure whose traceback runs through
``_init_minimal_kv_cache_for_profiling``. It is this bug only when that count is
above the bound; a failure elsewhere, or a count equal to the bound, is not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cgguard.ops.release.units import human_bytes
from cgguard.ops.triage.facts import (
    FORWARD_PROFILE,
    GRAPH_CAPTURE,
    MODEL_LOAD,
    PROFILING_ALLOCATION,
    PROFILING_STEP,
    Fact,
    Facts,
    Failure,
    LogFacts,
    Override,
)
from cgguard.shared.bound import (
    FIRST_AFFECTED,
    FIRST_FIXED,
    per_token_block_count,
    profiling_block_bound,
)

THIS_BUG, NOT_THIS_BUG, CANNOT_TELL = "this-bug", "not-this-bug", "cannot-tell"
EXIT_CODES = {NOT_THIS_BUG: 0, THIS_BUG: 1, CANNOT_TELL: 2}
# Stages that come after the profiling allocation succeeded.
_LATER = ("profiling_cache_built", "profiling_capture", "profiling_done", "kv_cache_sized")
_SHOWN = 160  # characters of a log line quoted as evidence
# Stages that say CUDA-graph memory profiling finished (its cache freed after them).
_FINISHED = (
    "profiling_done",
    "kv_cache_sized",
    "graph_capture",
    "graph_capture_done",
    "engine_ready",
)
# An error that names the profiling cache's block count: its size is the problem.
_SIZE_NAMED = re.compile(r"num_gpu_blocks|num_blocks")

SEQS_NEEDED = (
    "max_num_seqs: vLLM logs it in its 'non-default args: {...}' line when it was set, and as "
    "'Defaulting max_num_seqs to N' with VLLM_LOGGING_LEVEL=DEBUG when it was not; "
    "or pass --max-num-seqs N"
)
COUNT_NEEDED = (
    "the profiling block count: the 'Overriding num_gpu_blocks=0 with num_gpu_blocks_override=N' "
    "line (releases before 0.22 log it) or the 'Initializing a V1 LLM engine' line with "
    "max_cudagraph_capture_size in its compilation_config; or pass --max-cudagraph-capture-size N"
)
VERSION_NEEDED = (
    "the vLLM version: the 'Initializing a V1 LLM engine (vX.Y.Z) with config: ...' line"
)


@dataclass(frozen=True)
class Evidence:
    line: int | None  # None: a value given on the command line
    what: str
    text: str = ""  # the log's words (shortened)
    process: str = ""  # the process prefix of that line

    def to_json(self) -> dict:
        return {"line": self.line, "process": self.process, "what": self.what, "text": self.text}


@dataclass
class Verdict:
    kind: str
    summary: str
    evidence: list[Evidence] = field(default_factory=list)
    numbers: dict[str, int | str | None] = field(default_factory=dict)
    needs: str | None = None  # what line would settle it (cannot-tell)
    version: str | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.kind]


def release(version: str | None) -> tuple[int, int, int] | None:
    m = re.match(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def affected_release(version: str | None) -> bool | None:
    """Whether a version carries the per-token formula; None when unknown."""
    r = release(version)
    return None if r is None else FIRST_AFFECTED <= r < FIRST_FIXED


def _exception_name(failure: Failure) -> str:
    """``ValueError: ...`` as the log has it, shortened to a quote."""
    text = failure.fact.text
    return f"'{text if len(text) <= 100 else text[:97] + '...'}'"


def _quote(fact: Fact) -> str:
    return fact.text if len(fact.text) <= _SHOWN else fact.text[: _SHOWN - 3] + "..."


def _cite(fact: Fact, what: str) -> Evidence:
    return Evidence(fact.line, what, _quote(fact), fact.process)


def _location(failure: Failure, facts: Facts) -> str:
    frames = failure.frames
    if PROFILING_ALLOCATION in frames or failure.profiling_call_line is not None:
        return "profiling-allocation"
    if PROFILING_STEP in frames:
        return "profiling-capture"
    if any(f in GRAPH_CAPTURE for f in frames):
        return "graph-capture"
    if any(f in FORWARD_PROFILE for f in frames):
        return "forward-profile"
    if any(f in MODEL_LOAD for f in frames):
        return "model-load"
    line = failure.fact.line
    start = _profiling_override(facts, line)
    after = start.fact.line if start else 0
    later = [facts.first_stage(s, after) for s in _LATER]
    passed = [f for f in later if f is not None and f.line < line]
    if start is not None and not passed:
        return "profiling-allocation"
    done = facts.first_stage("profiling_done")
    if done is not None and done.line < line:
        return "after-profiling"
    return "unknown"


def _profiling_override(facts: Facts, before: int | None) -> Override | None:
    """The last profiling block count (old count 0) logged before line ``before``."""
    found = None
    for o in facts.overrides:
        if o.old == 0 and (before is None or o.fact.line < before):
            found = o
    return found


def _root_failure(facts: Facts) -> tuple[Failure, str] | None:
    """The failure that stopped the start: one in the profiling allocation first,
    then any out-of-memory error, then the first error."""
    located = [(f, _location(f, facts)) for f in facts.failures]
    for oom in (True, False):  # an out-of-memory error there first: what the others follow
        for wanted in ("profiling-allocation", "profiling-capture"):
            for f, where in located:
                if where == wanted and f.oom is oom:
                    return f, where
    for f, where in located:
        if f.oom:
            return f, where
    return located[0] if located else None


_WHERE = {
    "profiling-capture": "while capturing graphs to profile their memory",
    "graph-capture": "while capturing CUDA graphs, after profiling",
    "forward-profile": "in the dummy forward pass that profiles memory, before the profiling cache",
    "model-load": "while loading the model, before any profiling",
    "after-profiling": "after CUDA-graph memory profiling finished",
}


def decide(
    log: LogFacts | Facts, *, max_num_seqs: int | None = None, capture_size: int | None = None
) -> Verdict:
    """The verdict on a log's facts; ``max_num_seqs`` and ``capture_size`` are values
    the operator gives for what the log does not show (they win over the log).

    Each start of vLLM the log holds is judged on its own facts; the answer is the
    one of the start that shows this bug (the last such), else of the last start
    that failed, else of the last start, with every number from that start."""
    starts = log.starts if isinstance(log, LogFacts) else [log]
    verdicts = [
        _decide_start(s, max_num_seqs=max_num_seqs, capture_size=capture_size) for s in starts
    ]
    chosen = next((i for i in reversed(range(len(starts))) if verdicts[i].kind == THIS_BUG), None)
    if chosen is None:
        chosen = next(
            (i for i in reversed(range(len(starts))) if starts[i].failures), len(starts) - 1
        )
    v = verdicts[chosen]
    v.numbers["starts"] = len(starts)
    v.numbers["start"] = chosen + 1
    if len(starts) > 1:
        first = starts[chosen].first_line
        span = (
            f"lines {first}-{starts[chosen + 1].first_line - 1}"
            if chosen + 1 < len(starts)
            else f"from line {first}"
        )
        others = [verdicts[i].kind for i in range(len(starts)) if i != chosen]
        v.summary += (
            f" The log holds {len(starts)} starts of vLLM; this verdict and its numbers are "
            f"start {chosen + 1}'s ({span})"
            + (
                f"; {others.count(THIS_BUG)} other start(s) also show this bug."
                if THIS_BUG in others
                else "."
            )
        )
    return v


def _decide_start(
    facts: Facts, *, max_num_seqs: int | None = None, capture_size: int | None = None
) -> Verdict:
    version = facts.version_text
    v = Verdict(CANNOT_TELL, "", version=version)
    ev = v.evidence
    if facts.version is not None:
        ev.append(_cite(facts.version, f"vLLM {version}"))
    if facts.model:
        v.numbers["model"] = facts.model
    v.numbers["version"] = version
    root = _root_failure(facts)
    failure_line = root[0].fact.line if root else None
    override = _profiling_override(facts, failure_line)

    seqs = max_num_seqs if max_num_seqs is not None else facts.max_num_seqs
    if max_num_seqs is not None:
        ev.append(Evidence(None, f"max_num_seqs {max_num_seqs} (given with --max-num-seqs)"))
    elif facts.seqs_fact is not None:
        ev.append(_cite(facts.seqs_fact, f"max_num_seqs {seqs}"))
    capture = capture_size if capture_size is not None else facts.capture_size
    if capture_size is not None:
        ev.append(
            Evidence(None, f"capture size {capture_size} (given with --max-cudagraph-capture-size)")
        )
    elif facts.capture_fact is not None:
        ev.append(
            Evidence(
                facts.capture_fact.line,
                f"max_cudagraph_capture_size {facts.capture_size}",
                f"'max_cudagraph_capture_size': {facts.capture_size}",
                facts.capture_fact.process,
            )
        )
    if facts.block_fact is not None:
        ev.append(_cite(facts.block_fact, f"attention block size {facts.block_size} tokens"))
    for o in facts.overrides:
        if o.old != 0:
            ev.append(
                _cite(
                    o.fact,
                    f"num_gpu_blocks_override={o.new} applied to the real KV cache "
                    f"({o.old} blocks fit): a configured override, not the profiling cache",
                )
            )
    blocks = override.new if override is not None else None
    if override is not None:
        ev.append(_cite(override.fact, f"the profiling KV cache: {override.new:,} blocks"))
    elif capture is not None and capture > 0 and affected_release(version):
        blocks = per_token_block_count(capture)
    v.numbers.update(
        max_num_seqs=seqs,
        capture_size=capture,
        block_size=facts.block_size,
        profiling_blocks=blocks,
    )
    # On an affected release the count is the capture size at the time of the call,
    # which the count's own line shows best.
    bound = (
        profiling_block_bound(seqs, blocks or capture)
        if seqs is not None and (blocks or capture)
        else None
    )
    v.numbers["bound_blocks"] = bound

    if root is not None:
        failure, where = root
        what = "out of memory" if failure.oom else "error"
        if where == "profiling-allocation" and failure.frames:
            place = f" inside {PROFILING_ALLOCATION}"
        elif where == "profiling-allocation":
            place = " right after the profiling block count, before profiling went on"
        else:
            place = f" {_WHERE.get(where, '')}" if where in _WHERE else ""
        ev.append(_cite(failure.fact, f"{what}{place}"))
        if failure.tried_bytes is not None:
            v.numbers["failed_allocation_bytes"] = failure.tried_bytes
            if blocks and bound and failure.oom and where == "profiling-allocation":
                v.numbers["bound_allocation_bytes"] = failure.tried_bytes * bound // blocks
        v = _failed(v, facts, failure, where, blocks, bound, seqs)
    else:
        v = _no_failure(v, facts, override, blocks, bound)
    # In the log's order; values given on the command line last.
    v.evidence.sort(key=lambda e: (e.line is None, e.line or 0))
    return v


def _failed(
    v: Verdict,
    facts: Facts,
    failure: Failure,
    where: str,
    blocks: int | None,
    bound: int | None,
    seqs: int | None,
) -> Verdict:
    version = v.version
    if where in ("graph-capture", "forward-profile", "model-load", "after-profiling"):
        v.kind = NOT_THIS_BUG
        v.summary = f"Not this bug: the failure on line {failure.fact.line} came {_WHERE[where]}"
        done = facts.first_stage("profiling_done")
        if where in ("graph-capture", "after-profiling") and done is not None:
            v.evidence.append(_cite(done, "CUDA-graph memory profiling finished"))
            v.summary += (
                f" (line {done.line}); the profiling cache was freed before that"
                if done.line < failure.fact.line
                else ""
            )
            if not failure.oom:
                v.summary += (
                    "; vLLM's estimate of CUDA-graph memory only lowered the KV cache it sized"
                )
        v.summary += "."
        return v
    if where == "unknown":
        v.summary = (
            f"Cannot tell: the failure on line {failure.fact.line} has no traceback frames that "
            "place it, and no profiling block count comes before it."
        )
        v.needs = (
            "the traceback of the failing process (its 'File \"...\", line N, in ...' lines), "
            "or the lines from 'Initializing a V1 LLM engine' up to the failure"
        )
        return v
    # In the profiling allocation (or capturing while it is held). Only the
    # allocation's size is this bug: an out-of-memory error, or an error that names
    # the block count; any other exception there is something else.
    if not failure.oom and not _SIZE_NAMED.search(failure.fact.text):
        placed = bool(failure.frames) or failure.profiling_call_line is not None
        inside = (
            f"inside {PROFILING_ALLOCATION}"
            if where == "profiling-allocation"
            else "while capturing graphs to profile their memory"
        )
        if placed:
            v.kind = NOT_THIS_BUG
            v.summary = (
                f"Not this bug: the failure on line {failure.fact.line} {inside} is "
                f"{_exception_name(failure)}, not an out-of-memory error: the size of the "
                "profiling KV cache did not cause it."
            )
            return v
        v.summary = (
            f"Cannot tell: the failure on line {failure.fact.line} ({_exception_name(failure)}) "
            "follows the profiling block count but is not an out-of-memory error, and no "
            "traceback places it."
        )
        v.needs = (
            "the traceback of the failing process (its 'File \"...\", line N, in ...' lines), "
            "with the exception it ends in"
        )
        return v
    fixed = affected_release(version) is False
    per_token_shown = blocks is not None and seqs is not None and blocks > seqs
    held = "" if where == "profiling-allocation" else " while capturing graphs with that cache held"
    if fixed:
        v.kind = NOT_THIS_BUG
        v.summary = (
            f"Not this bug: vLLM {version} already sizes the profiling KV cache one block per "
            f"sequence (min(max_num_seqs, capture size)), and that failed{held}: "
            "the memory is short even at the bound"
        )
        if facts.block_size is not None:
            v.summary += f" ({facts.block_size}-token blocks)"
        v.summary += "."
        return v
    if affected_release(version) is None and not per_token_shown:
        v.summary = f"Cannot tell: the failure{held} is in the profiling KV cache, but the log does not say which vLLM built it."
        v.needs = VERSION_NEEDED
        return v
    if blocks is None:
        v.summary = (
            f"Cannot tell: the failure{held} is in the profiling KV cache of vLLM {version}, "
            "which takes max_cudagraph_capture_size blocks, but the log does not show that size."
        )
        v.needs = COUNT_NEEDED
        return v
    if bound is None:
        v.summary = (
            f"Cannot tell: the profiling KV cache of {blocks} blocks failed{held}, but without "
            "max_num_seqs the bound (one block per sequence) is unknown."
        )
        v.needs = SEQS_NEEDED
        return v
    if blocks <= bound:
        v.kind = NOT_THIS_BUG
        v.summary = (
            f"Not this bug: the profiling KV cache failed{held}, but its {blocks} blocks equal "
            f"the bound min(max_num_seqs={seqs}, capture size) = {bound}: a fixed vLLM "
            "asks for the same."
        )
        return v
    v.kind = THIS_BUG
    v.summary = (
        f"This bug: the per-token profiling KV cache (vLLM {version or 'unknown'}) asked for "
        f"{blocks:,} blocks where {bound:,} suffice (one per sequence), and ran out of memory{held}."
        if failure.oom
        else f"This bug: the per-token profiling KV cache (vLLM {version or 'unknown'}) asked "
        f"for {blocks:,} blocks where {bound:,} suffice, and failed{held}."
    )
    tried = v.numbers.get("failed_allocation_bytes")
    at_bound = v.numbers.get("bound_allocation_bytes")
    if isinstance(tried, int) and isinstance(at_bound, int):
        v.summary += (
            f" The failing allocation asked for {human_bytes(tried)}; at the bound it would be "
            f"{human_bytes(at_bound)}."
        )
    return v


def _no_failure(
    v: Verdict, facts: Facts, override: Override | None, blocks: int | None, bound: int | None
) -> Verdict:
    built = facts.first_stage("profiling_cache_built") or facts.first_stage("profiling_capture")
    since = built or (override.fact if override else None)
    # Lines that say profiling finished: after them the profiling cache is freed.
    finished = [
        f
        for f in (facts.first_stage(s) for s in _FINISHED)
        if f is not None and (since is None or f.line > since.line)
    ]
    if since is not None:
        size = f" ({blocks:,} blocks" if blocks else ""
        if size:
            size += f" where {bound:,} suffice)" if bound and blocks and blocks > bound else ")"
        fixed = affected_release(v.version) is False
        at_bound = blocks is not None and bound is not None and blocks <= bound
        if built is not None:
            v.evidence.append(_cite(built, "the profiling cache was built"))
        elif finished:
            v.evidence.append(_cite(finished[0], "profiling went on past the profiling cache"))
        if finished or fixed or at_bound:
            v.kind = NOT_THIS_BUG
            why = (
                f"vLLM {v.version} sizes it one block per sequence"
                if fixed
                else "its count is within the bound"
                if at_bound and not finished
                else f"profiling went on (line {finished[0].line})"
            )
            v.summary = (
                f"Not this bug's failure: the profiling KV cache{size} was built and fit; "
                f"{why}, and no failure line was recognised in this start."
            )
            return v
        if built is not None:
            v.summary = (
                f"Cannot tell: the profiling KV cache{size} was built and fit (line "
                f"{built.line}), but no line after it was recognised: an out-of-memory error "
                "in the profiling capture that it starved would be this bug."
            )
        else:
            v.summary = (
                f"Cannot tell: no line after the profiling block count (line {since.line}) "
                "was recognised as a failure or as profiling going on."
            )
        v.needs = (
            "a line after it that says how profiling went: a traceback ending in the "
            "exception, or 'Estimated CUDA graph memory' / 'Available KV cache memory' "
            "(profiling finished)"
        )
        return v
    skipped = facts.first_stage("profiling_skipped")
    ready = facts.first_stage("engine_ready")
    reason = None
    if skipped is not None:
        reason = f"kv_cache_memory_bytes skips memory profiling (line {skipped.line})"
        v.evidence.append(_cite(skipped, "memory profiling skipped"))
    elif facts.enforce_eager and facts.version is not None:
        reason = f"enforce_eager=True (line {facts.version.line})"
    elif facts.graph_mode == "NONE" and facts.version is not None:
        reason = f"cudagraph_mode NONE (line {facts.version.line})"
    elif ready is not None:
        reason = f"the engine started (line {ready.line}) with no profiling line before it"
        v.evidence.append(_cite(ready, "engine started"))
    if reason is not None:
        v.kind = NOT_THIS_BUG
        v.summary = f"Not this bug: no CUDA-graph memory profiling in this log: {reason}."
        return v
    v.summary = "Cannot tell: this log shows neither a failure nor the profiling step."
    v.needs = (
        "the lines of the failing process from 'Initializing a V1 LLM engine' to its traceback "
        "(with 'EngineCore failed to start')"
    )
    return v
