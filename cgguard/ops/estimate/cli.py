"""`cgguard estimate MODEL_DIR`: the profiling KV cache for a model, per-token vs per-sequence.

Arithmetic over the model's config.json and vLLM's defaults as an affected release
resolves them (no torch, no weights; vLLM is never imported). Where the installed
vLLM is the release estimated, its source says which runner the model gets.
Exit codes: 0 done, 2 bad input (missing or malformed config field, bad option).
"""

from __future__ import annotations

import json
import sys

import click

from cgguard.ops.estimate.hybrid import FIELDS, INSTALLED, OPTION, HybridAnswer, hybrid_answer
from cgguard.ops.estimate.release import ReleaseContext, release_context, runner_check
from cgguard.ops.release.hybrid_block import count_attention_layers, count_state_layers
from cgguard.ops.release.hybrid_fields import hybrid_family
from cgguard.ops.release.hybrid_groups import group_size, page_bytes
from cgguard.ops.release.memory import (
    DEFAULT_BLOCK_SIZE,
    KV_CACHE_DTYPES,
    MODEL_DTYPES,
    EstimateError,
    kv_heads_per_rank,
    profiling_estimate,
    resolve_kv_dtype,
    token_layer_bytes,
)
from cgguard.ops.release.model_config import ConfigError, ModelShape, load_model_shape
from cgguard.ops.release.model_kind import read_model_kind
from cgguard.ops.release.release_runners import (
    ASSUMED as ASSUMED_RUNNER,
)
from cgguard.ops.release.release_runners import (
    NOTHING_AT_STAKE,
    ReleaseRunner,
    runner_of,
    runners_by_release,
)
from cgguard.ops.release.runner_source import ENV
from cgguard.ops.release.runner_verdict import settings_from_env
from cgguard.ops.release.units import human_bytes
from cgguard.ops.release.v2_features import ON
from cgguard.ops.release.vllm_defaults import ENTRY_POINTS, GPUS, Request, resolve
from cgguard.shared.bound import FIRST_AFFECTED, FIRST_FIXED


def _parse_capture_sizes(text: str) -> tuple[int, ...]:
    """``"1,2,4,8"`` -> (1, 2, 4, 8); the profiling cache follows the largest kept.

    Every comma-separated entry must be a positive integer: an empty list, an empty
    entry (``"1,,2"``, a trailing comma) or anything else is an error, never skipped.
    """
    if not text.strip():
        raise EstimateError(
            "--cudagraph-capture-sizes: no sizes given (expected N,N,..., e.g. 1,2,4,8)"
        )
    sizes = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise EstimateError(
                f"--cudagraph-capture-sizes: {text!r} has an empty entry (expected N,N,...)"
            )
        if not (part.isascii() and part.isdigit()) or int(part) <= 0:
            raise EstimateError(f"--cudagraph-capture-sizes: {part!r} is not a positive integer")
        sizes.append(int(part))
    return tuple(sizes)


def _check_tensor_parallel(shape: ModelShape, tp: int) -> None:
    """Refuse a tensor-parallel size vLLM refuses (ModelConfig.verify_with_parallel_config)."""
    heads = shape.num_attention_heads
    if heads is not None and heads % tp:
        raise EstimateError(
            f"--tensor-parallel-size {tp}: total number of attention heads ({heads}) must be divisible by "
            f"tensor parallel size ({tp}), as vLLM requires ({shape.config_path})"
        )


def _shape_text(shape: ModelShape, tp: int) -> str:
    kind = shape.model_type or "model"
    if shape.mla:
        attn = f"MLA: kv_lora_rank {shape.kv_lora_rank} + qk_rope_head_dim {shape.qk_rope_head_dim}"
    else:
        per_rank = kv_heads_per_rank(shape, tp)
        rank_note = f" ({per_rank} per rank)" if tp > 1 else ""
        attn = f"{shape.num_kv_heads} KV heads{rank_note} x head_dim {shape.head_dim}"
    return f"{kind}, {shape.num_layers} layers, {attn}"


def _v(t: tuple[int, int, int]) -> str:
    return ".".join(map(str, t))


def _gpu(gpu_name: str | None, gpu_memory_gib: float | None) -> tuple[float, str]:
    """(memory in GiB, device name) vLLM's defaults are chosen by."""
    if gpu_name is not None:
        key = next(k for k in GPUS if k.lower() == gpu_name.lower())
        return GPUS[key]
    if gpu_memory_gib is not None:
        return gpu_memory_gib, "the GPU named by --gpu-memory-gib"
    return 0.0, "a GPU not named"


def _hybrid_group(
    model_dir: str, answer: HybridAnswer, all_layers: int
) -> tuple[int, int | None, int | None, list[str]]:
    """(layers per KV cache group, attention layers, state layers, assumptions) of a
    hybrid model: the layer counts from vLLM's own count or cgguard's reading of the
    family's fields, else the config's layer list; grouped as vLLM groups them."""
    assumed = []
    attention = answer.attention_layers
    if not attention:
        attention = count_attention_layers(model_dir)
        if not attention:
            return (
                all_layers,
                None,
                None,
                [f"every one of the {all_layers} layers counted as attention (an upper bound)"],
            )
        assumed.append(f"{attention} attention layers, counted in config.json's layer list")
    state = answer.state_layers
    if state is None:
        state = count_state_layers(model_dir)
        if state:
            assumed.append(f"{state} state layers, counted in config.json's layer list")
        else:
            state = all_layers - attention
            assumed.append(f"the other {state} layers keep a state (counted as not attention)")
    return group_size(attention, state), attention, state, assumed


def _per_block_text(
    layers: int, attention: int | None, all_layers: int, block_size: int, per_token: int, page: int
) -> str:
    s = "s" if layers != 1 else ""
    if attention is not None:
        what = f"{layers} layer{s} per group x "
    else:
        what = f"{layers} {'attention ' if layers != all_layers else ''}layer{s} x "
    if page != block_size * per_token:
        return what + f"one state page of {page:,} bytes"
    return what + f"{block_size} tokens x {per_token:,} bytes"


def _scheduler_assumptions(
    ctx: ReleaseContext, gpu_name: str | None, gpu_memory_gib: float | None, entry: str | None
) -> list[str]:
    out = []
    if ctx.assumed is not None:
        out.append(ctx.assumed)
    if gpu_name is None and gpu_memory_gib is None:
        out.append(
            "a GPU under 70 GiB (or an A100): vLLM's defaults for it (--gpu or --gpu-memory-gib names yours)"
        )
    if entry is None:
        out.append("entry point `serve` (the API server; --entry-point LLM for the Python class)")
    return out


def _release_number(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--vllm-version: a release number (X.Y.Z), or a usage error before anything is read."""
    from cgguard.ops.doctor.diagnosis import release_tuple

    if value is not None and release_tuple(value) is None:
        raise click.BadParameter(f"{value!r} is not a release number (X.Y.Z)")
    return value


@click.command()
@click.argument("model_dir", metavar="MODEL_DIR")
@click.option(
    "--max-num-seqs",
    type=click.IntRange(min=1),
    help="vLLM's max_num_seqs [default: vLLM's for the GPU: 1024 at 70 GiB or more, not A100; else 256]",
)
@click.option(
    "--max-num-batched-tokens",
    type=click.IntRange(min=1),
    help="vLLM's max_num_batched_tokens [default: vLLM's for the GPU and entry point]",
)
@click.option(
    "--max-cudagraph-capture-size",
    type=click.IntRange(min=1),
    help="Largest CUDA-graph capture size in tokens [default: vLLM's, "
    "min(max_num_seqs x (1 + speculative tokens) x 2, 512), at most max_num_batched_tokens]",
)
@click.option("--num-speculative-tokens", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--speculative-method",
    metavar="METHOD",
    help="vLLM's speculative_config method (ngram, eagle, eagle3, mtp...): model runner V2 "
    "lacks some, which puts the model on the affected V1 runner.",
)
@click.option(
    "--gpu",
    "gpu_name",
    type=click.Choice(sorted(GPUS), case_sensitive=False),
    help="The GPU vLLM runs on (its memory and name pick vLLM's defaults).",
)
@click.option(
    "--gpu-memory-gib",
    type=click.FloatRange(min=0, min_open=True),
    help="The GPU's total memory in GiB, as torch reports it (instead of --gpu).",
)
@click.option(
    "--entry-point",
    type=click.Choice(ENTRY_POINTS),
    help="How vLLM is started: `serve` (the API server) or the `LLM` class [default: serve]",
)
@click.option(
    "--max-model-len",
    type=click.IntRange(min=1),
    help="vLLM's max_model_len [default: the config's max_position_embeddings]",
)
@click.option(
    "--vllm-version",
    metavar="X.Y.Z",
    callback=_release_number,
    help="The affected release whose defaults apply [default: the installed one, else 0.25.0]",
)
@click.option(
    "--cudagraph-capture-sizes", metavar="N,N,...", help="Capture sizes list; the largest counts."
)
@click.option(
    "--block-size",
    type=click.IntRange(min=1),
    help=f"Tokens per KV block [default: {DEFAULT_BLOCK_SIZE}]",
)
@click.option(
    "--kv-cache-dtype",
    type=click.Choice(KV_CACHE_DTYPES),
    default="auto",
    show_default=True,
    help="auto follows the model dtype; fp8 variants take 1 byte.",
)
@click.option(
    "--dtype",
    "model_dtype",
    type=click.Choice(MODEL_DTYPES),
    default="auto",
    show_default=True,
    help="vLLM's --dtype (what kv-cache-dtype auto follows).",
)
@click.option(
    "--tensor-parallel-size", "-tp", type=click.IntRange(min=1), default=1, show_default=True
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def estimate(
    model_dir: str,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
    max_cudagraph_capture_size: int | None,
    num_speculative_tokens: int,
    speculative_method: str | None,
    gpu_name: str | None,
    gpu_memory_gib: float | None,
    entry_point: str | None,
    max_model_len: int | None,
    vllm_version: str | None,
    cudagraph_capture_sizes: str | None,
    block_size: int | None,
    kv_cache_dtype: str,
    model_dtype: str,
    tensor_parallel_size: int,
    fmt: str,
) -> None:
    """Memory the CUDA-graph profiling KV cache takes for the model in MODEL_DIR.

    MODEL_DIR is a local folder holding the model's Hugging Face config.json
    (nothing is downloaded; weights are not needed). To fetch just that file:
    `hf download ORG/MODEL config.json --local-dir MODEL_DIR`.

    Compares vLLM 0.18.0-0.25.x (one block per token of the largest captured
    graph) with the fix (one block per sequence), per GPU. Values config.json
    does not state (head_dim from hidden_size and heads, say) and defaults
    taken for options not given are listed under "Assumed".
    """
    try:
        if max_cudagraph_capture_size is not None and cudagraph_capture_sizes is not None:
            raise EstimateError(
                "give --max-cudagraph-capture-size or --cudagraph-capture-sizes, not both"
            )
        if gpu_name is not None and gpu_memory_gib is not None:
            raise EstimateError("give --gpu or --gpu-memory-gib, not both")
        listed_capture = (
            _parse_capture_sizes(cudagraph_capture_sizes)
            if cudagraph_capture_sizes is not None
            else None
        )
        shape = load_model_shape(model_dir)
        _check_tensor_parallel(shape, tensor_parallel_size)
        kv = resolve_kv_dtype(kv_cache_dtype, model_dtype, shape)
        ctx = release_context(vllm_version)
        verdict = runner_check(
            ctx,
            model_dir,
            settings_from_env(
                speculative_method=speculative_method,
                num_speculative_tokens=num_speculative_tokens,
                tensor_parallel_size=tensor_parallel_size,
            ),
        )
    except (ConfigError, EstimateError) as exc:
        click.echo(f"cgguard estimate: error: {exc}", err=True)
        sys.exit(2)

    # Every value the output rests on that neither config.json nor an option states.
    assumed: list[str] = list(shape.derived)
    if kv_cache_dtype == "auto" and model_dtype == "auto" and shape.dtype in (None, "float32"):
        assumed.append(f"KV cache dtype {kv.name} ({kv.source})")
    assumed.extend(_scheduler_assumptions(ctx, gpu_name, gpu_memory_gib, entry_point))
    if max_num_batched_tokens is None:
        assumed.append("chunked prefill on (vLLM's default for generation models)")
    if max_model_len is None and shape.max_position_embeddings is not None:
        max_model_len = shape.max_position_embeddings
        assumed.append(
            f"max_model_len {max_model_len} (the config's max_position_embeddings; it caps a "
            "defaulted max_num_batched_tokens at max_num_seqs x max_model_len)"
        )
    memory, name = _gpu(gpu_name, gpu_memory_gib)
    resolved = resolve(
        Request(
            release=ctx.release,
            gpu_memory_gib=memory,
            gpu_name=name,
            entry_point=entry_point or "serve",
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=max_num_batched_tokens,
            max_cudagraph_capture_size=max_cudagraph_capture_size,
            cudagraph_capture_sizes=listed_capture,
            num_speculative_tokens=num_speculative_tokens,
            max_model_len=max_model_len,
        )
    )
    assumed.extend(resolved.assumed)
    max_num_seqs = resolved.max_num_seqs
    capture = resolved.capture_size
    hybrid = (
        shape.hybrid
        or bool(verdict is not None and verdict.model and verdict.model.is_hybrid)
        or hybrid_family(model_dir)
    )
    notes: list[str] = []
    layers = shape.num_layers
    answer: HybridAnswer | None = None
    attention_layers = state_layers = None
    per_layer = token_layer_bytes(shape, kv, tensor_parallel_size)
    if hybrid:
        # The Mamba state follows the model's dtype, which is what auto gives the KV cache.
        model_dt = resolve_kv_dtype("auto", model_dtype, shape).name
        answer = hybrid_answer(
            ctx,
            model_dir,
            model_dt,
            kv_cache_dtype,
            kv.element_bytes,
            block_size,
            tensor_parallel_size,
            num_speculative_tokens,
        )
        notes.append(answer.note)
        layers, attention_layers, state_layers, layers_why = _hybrid_group(
            model_dir, answer, shape.num_layers
        )
        assumed.extend(layers_why)
        if attention_layers is not None:
            notes.append(
                f"vLLM puts the {attention_layers} attention and {state_layers} state layers in "
                f"groups of {layers} and allocates one pool per layer of a group, each shared "
                f"by every group (vllm/v1/core/kv_cache_utils.py): a block costs {layers} pages"
            )
        if answer.source is not None and answer.source != OPTION:
            block_size = answer.block_size
        if answer.attention_bytes_per_token is not None:
            per_layer = answer.attention_bytes_per_token
        if answer.assumed is not None:
            assumed.append(answer.assumed)
    if block_size is None:
        block_size = DEFAULT_BLOCK_SIZE
        assumed.append(
            f"block size {block_size} (vLLM's usual default; some attention backends use more)"
        )

    if shape.has_sliding_window:
        notes.append("sliding-window layers are counted like full-attention layers")
    if shape.mla and tensor_parallel_size > 1:
        notes.append("the MLA latent cache is replicated on every rank, not split")
    if (
        not shape.mla
        and shape.num_kv_heads is not None
        and shape.num_kv_heads < tensor_parallel_size
    ):
        notes.append(
            f"{shape.num_kv_heads} KV heads over {tensor_parallel_size} ranks: each rank keeps 1"
        )

    page = block_size * per_layer
    if answer is not None:  # one page size for attention and state (the smaller is padded)
        page = page_bytes(block_size, per_layer, answer.mamba_page_bytes or 0)
    block_bytes = layers * page
    est = profiling_estimate(block_bytes, max_num_seqs, capture)
    # On runner V2 the affected release builds no profiling cache: no cost to print.
    on_v2 = verdict is not None and verdict.runner == "V2" and verdict.taken is False
    # No release's source to read: each affected release's rule, by the model's kind.
    by_release: list[ReleaseRunner] = []
    if verdict is None:
        try:
            kind = read_model_kind(model_dir, None)
        except ConfigError:  # no architecture named: no runner to look up
            pass
        else:
            every = runners_by_release(
                kind.architectures[0], kind.is_moe, kind.is_quantized, hybrid
            )
            by_release = every if vllm_version is None else [runner_of(every, ctx.release)]
    if verdict is not None:
        assumed.extend(a for a in verdict.assumed if a not in assumed)
        if verdict.runner is None:
            notes.extend(verdict.reasons)

    if fmt == "json":
        out = {
            "model": {
                "config": shape.config_path,
                "model_type": shape.model_type,
                "text_section": shape.text_section,
                "attention": "mla" if shape.mla else "standard",
                "num_layers": shape.num_layers,
                "num_kv_heads": shape.num_kv_heads,
                "kv_heads_per_rank": kv_heads_per_rank(shape, tensor_parallel_size),
                "head_dim": shape.head_dim,
                "kv_lora_rank": shape.kv_lora_rank,
                "qk_rope_head_dim": shape.qk_rope_head_dim,
            },
            "kv_cache_dtype": kv.name,
            "kv_cache_dtype_source": kv.source,
            "vllm_version": ctx.version,
            "runner": verdict.to_json() if verdict is not None else None,
            "runner_by_release": [r.to_json() for r in by_release] or None,
            "settings": {
                "max_num_seqs": max_num_seqs,
                "max_num_batched_tokens": resolved.max_num_batched_tokens,
                "capture_size": capture,
                "block_size": block_size,
                "tensor_parallel_size": tensor_parallel_size,
            },
            "bytes_per_token_per_layer": per_layer,
            "bytes_per_block": block_bytes,
            "hybrid": None
            if answer is None
            else {
                "block_size_computed": answer.source in (INSTALLED, FIELDS),
                "block_size_source": answer.source,
                "attention_layers": attention_layers if attention_layers is not None else layers,
                "state_layers": state_layers,
                "group_size": layers,
                "page_bytes": page,
                "mamba_page_bytes": answer.mamba_page_bytes,
                "how": answer.how,
            },
            "per_token": None
            if on_v2
            else {"blocks": est.per_token.blocks, "bytes": est.per_token.bytes},
            "per_sequence": None
            if on_v2
            else {"blocks": est.per_sequence.blocks, "bytes": est.per_sequence.bytes},
            "ratio": None if on_v2 else round(est.ratio, 3),
            "assumed": assumed,
            "notes": notes,
        }
        click.echo(json.dumps(out, indent=2))
        return

    rows = [
        (
            f"per-token    (vLLM {_v(FIRST_AFFECTED)}-{FIRST_FIXED[0]}.{FIRST_FIXED[1] - 1}.x)",
            est.per_token,
        ),
        (f"per-sequence (vLLM {_v(FIRST_FIXED)}+)", est.per_sequence),
    ]
    header = "Profiling KV cache, per GPU"
    label_w = max(len(header), *(len(r[0]) for r in rows))
    blocks_w = max(len("blocks"), *(len(f"{r[1].blocks:,}") for r in rows))
    lines = [
        f"Model:          {shape.config_path} ({_shape_text(shape, tensor_parallel_size)})",
        f"KV cache dtype: {kv.name} ({kv.source})",
        f"Per block:      {human_bytes(block_bytes)} ({block_bytes:,} bytes = "
        + _per_block_text(layers, attention_layers, shape.num_layers, block_size, per_layer, page)
        + ")",
        f"Settings:       vLLM {ctx.version}, max_num_seqs {max_num_seqs}, max_num_batched_tokens "
        f"{resolved.max_num_batched_tokens}, capture size {capture} tokens, block size {block_size}, "
        f"tensor parallel {tensor_parallel_size}",
        "",
    ]
    if verdict is not None and verdict.runner is not None:
        lines.append(f"Runner:         {verdict.runner} ({verdict.reasons[0]})")
        in_use = verdict.v2_features.labels(ON) if verdict.v2_features is not None else []
        if in_use:
            lines.append(
                f"                model runner V2 lacks {'; '.join(in_use)}, which the "
                "settings given turn on"
            )
    if by_release:
        lines.append(
            "Runner:         vLLM's source for this is not installed here; by each release's "
            f"rule ({ASSUMED_RUNNER}):"
        )
        lines.extend(
            f"                  {r.releases}: {r.runner or 'V1 or V2'} ({r.why})"
            for r in by_release
        )
        if any(r.runner != "V1" for r in by_release):
            lines.append(f"                {NOTHING_AT_STAKE}")
    if any(r.runner == "V2" for r in by_release) and not on_v2:
        lines.append(
            f"The table is what vLLM {ctx.version} builds on the V1 runner ({ENV}=0)."
            if vllm_version is not None
            else "The table is what the releases that run it on the V1 runner build (and any "
            f"release with {ENV}=0)."
        )
    if on_v2:
        lines.append(
            f"vLLM {ctx.version} runs this model on model runner V2, which builds no profiling KV "
            "cache: nothing is at stake (VLLM_USE_V2_MODEL_RUNNER=0 would put it on the affected V1 runner)."
        )
    else:
        lines.append(f"{header.ljust(label_w)}  {'blocks'.rjust(blocks_w)}  memory")
        for label, size in rows:
            lines.append(
                f"{label.ljust(label_w)}  {f'{size.blocks:,}'.rjust(blocks_w)}  {human_bytes(size.bytes)}"
            )
        lines.append(f"per-token / per-sequence: {est.ratio:.3g}x")
    if assumed:
        lines.append("Assumed:")
        lines.extend(f"  - {a}" for a in assumed)
    if notes:
        lines.append("Note:")
        lines.extend(f"  - {n}" for n in notes)
    click.echo("\n".join(lines))
