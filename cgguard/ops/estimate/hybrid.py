"""Which way `cgguard estimate` gets a hybrid model's attention block size, and its answer.

Three ways, said in the output: the block size the operator read from vLLM's log
(``--block-size``); the installed release's own code, run in a child process
(:mod:`hybrid_block`), where the release estimated is installed; cgguard's reading of
config.json's fields (:mod:`hybrid_fields`), where it is not and the release is the
one that reading follows. Otherwise the note says to pass ``--block-size``.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgguard.ops.estimate.release import ReleaseContext
from cgguard.ops.release.hybrid_block import ProbeError, hybrid_block_size
from cgguard.ops.release.hybrid_fields import RELEASE, FieldsBlock, NotCovered, block_from_fields
from cgguard.ops.release.model_config import ConfigError

LOG_LINE = "the N of vLLM's log line 'Setting attention block size to N tokens'"
STAND_INS = (
    "with FlashAttention's kernel block sizes and prefix caching off (vLLM's default for "
    "hybrid models)"
)
# How the block size was found, as JSON says it.
OPTION, INSTALLED, FIELDS = "--block-size", "installed-release", "config-fields"


@dataclass(frozen=True)
class HybridAnswer:
    note: str
    source: str | None  # OPTION, INSTALLED, FIELDS; None when not found
    block_size: int | None = None
    mamba_page_bytes: int | None = None
    attention_layers: int | None = None  # None or 0: the caller counts them itself
    attention_bytes_per_token: int | None = None  # None: the caller's own arithmetic
    how: str | None = None
    assumed: str | None = None
    state_layers: int | None = None  # layers keeping a state; None: not read


def _found(block: int, source: str) -> str:
    return (
        f"hybrid model: vLLM uses {block}-token blocks so one attention page holds a Mamba "
        f"state (block size from {source}); the figures count one page per layer of a group"
    )


def _ask(why: str) -> HybridAnswer:
    return HybridAnswer(f"hybrid model: {why}; pass --block-size N, {LOG_LINE}", None)


def hybrid_answer(
    ctx: ReleaseContext,
    model_dir: str,
    model_dtype: str,
    kv_cache_dtype: str,
    kv_element_bytes: int,
    given: int | None,
    tensor_parallel_size: int,
    num_speculative_tokens: int,
) -> HybridAnswer:
    read: FieldsBlock | None
    unread: NotCovered | ConfigError | None = None  # why the fields could not be read
    try:  # the layers of each kind, where cgguard reads the family's fields
        read = block_from_fields(
            model_dir, model_dtype, kv_element_bytes, tensor_parallel_size, num_speculative_tokens
        )
    except (NotCovered, ConfigError) as exc:
        read, unread = None, exc
    # cgguard reads the block size from the fields only as this one release computes it.
    fields_release = ".".join(map(str, ctx.release)) == RELEASE
    if given is not None:
        return HybridAnswer(
            f"hybrid model: block size {given} from --block-size ({LOG_LINE}, say)",
            OPTION,
            given,
            mamba_page_bytes=read.mamba_page_bytes if read else None,
            attention_layers=read.attention_layers if read else None,
            attention_bytes_per_token=read.attention_bytes_per_token if read else None,
            state_layers=read.state_layers if read else None,
        )
    if ctx.package_dir is not None:
        try:
            probed = hybrid_block_size(model_dir, model_dtype, kv_cache_dtype)
        except ProbeError as exc:
            # The installed release cannot build this model here (the Qwen3.5 classes'
            # module needs torchvision, which a CPU install may lack): where the fields
            # give the block size as this release computes it, use them and say why.
            if read is not None and fields_release:
                return _from_fields(
                    read, f"the installed vLLM {ctx.version} could not compute it: {exc}"
                )
            return _ask_with(read, f"block size not computed ({exc})")
        if probed is None:
            return _ask("no vLLM to compute the block size")
        return HybridAnswer(
            _found(probed.block_size, f"the installed vLLM {ctx.version}'s own code"),
            INSTALLED,
            probed.block_size,
            probed.mamba_page_bytes,
            probed.attention_layers,
            None,
            probed.how,
            f"block size {probed.block_size}: computed by the installed vLLM {ctx.version}'s "
            f"own code ({probed.how}; one Mamba state is {probed.mamba_page_bytes:,} bytes), "
            f"{STAND_INS}",
            state_layers=read.state_layers if read else None,
        )
    enlarges = "vLLM enlarges the attention block size so one attention page holds a Mamba state"
    if not fields_release:
        return _ask(
            f"{enlarges}; vLLM {ctx.version} is not installed here to compute it, and cgguard "
            f"reads it from config.json's fields only as vLLM {RELEASE} computes it"
        )
    if read is None:
        return _ask(f"{enlarges}, vLLM {RELEASE} is not installed here to compute it, and {unread}")
    return _from_fields(read, f"vLLM {RELEASE} is not installed here")


def _ask_with(read: FieldsBlock | None, why: str) -> HybridAnswer:
    """No block size, but the layers of each kind where the fields give them."""
    asked = _ask(why)
    if read is None:
        return asked
    return HybridAnswer(
        asked.note,
        None,
        attention_layers=read.attention_layers,
        state_layers=read.state_layers,
    )


def _from_fields(fields: FieldsBlock, why: str) -> HybridAnswer:
    how = f"cgguard's reading of config.json's fields, as vLLM {RELEASE} computes it"
    return HybridAnswer(
        _found(fields.block_size, how),
        FIELDS,
        fields.block_size,
        fields.mamba_page_bytes,
        fields.attention_layers,
        fields.attention_bytes_per_token,
        f"{fields.state}; Platform._align_hybrid_block_size's rounding",
        f"block size {fields.block_size}: {how} ({why}; {fields.state}, "
        f"one Mamba state is {fields.mamba_page_bytes:,} bytes), {STAND_INS}",
        state_layers=fields.state_layers,
    )
