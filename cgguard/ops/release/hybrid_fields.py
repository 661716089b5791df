"""A hybrid model's attention block size from its config.json alone, as vLLM 0.25.0 computes it.

Where the release estimated is not installed, its own code cannot be run
(:mod:`hybrid_block`), so the computation is redone here for the families whose
state shapes 0.25.0 reads from plain config fields: each model class's
``get_mamba_state_shape_from_config`` / ``get_mamba_state_dtype_from_config`` over
``MambaStateShapeCalculator`` / ``MambaStateDtypeCalculator``
(``vllm/model_executor/layers/mamba/mamba_utils.py``), then
``Platform._align_hybrid_block_size`` (``vllm/platforms/interface.py``): the smallest
multiple of the kernel's block alignment whose attention page holds one Mamba state.
The same stand-ins as :mod:`hybrid_block`: FlashAttention's kernel block sizes
(multiples of 16) and prefix caching off (``mamba_cache_mode`` none, vLLM's default).

Fields are read from the text model's section (``text_config``, as vLLM's
``hf_text_config``) first, then the top level. Only fields config.json states are read. Where the model's config class would fill
a missing field with its own default, the field is asked for instead of guessed, and
:class:`NotCovered` says which.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from typing import Any

from cgguard.ops.release.hybrid_groups import group_size
from cgguard.ops.release.model_config import TEXT_SECTIONS, ConfigError, config_path, load_json

RELEASE = "0.25.0"
KERNEL_ALIGNMENT = 16  # FlashAttention's supported kernel block sizes: MultipleOf(16)
BLOCK_SIZE = 16  # vLLM's CacheConfig.DEFAULT_BLOCK_SIZE, FlashAttention's preferred size
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


class NotCovered(Exception):
    """The config fields cannot give the block size; the message says why, in one line."""


@dataclass(frozen=True)
class FieldsBlock:
    block_size: int
    mamba_page_bytes: int  # one Mamba state, per layer
    attention_bytes_per_token: int  # one token of one attention layer
    attention_layers: int
    state: str  # the state's shapes and dtypes, for the output
    state_layers: int = 0  # layers that keep a Mamba / linear-attention state

    @property
    def group_size(self) -> int:
        """Layers per KV cache group: bytes per block = group_size x page size."""
        return group_size(self.attention_layers, self.state_layers)


@dataclass(frozen=True)
class _State:
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]

    @property
    def page_bytes(self) -> int:  # MambaSpec.page_size_bytes (no padding)
        return sum(prod(s) * DTYPE_BYTES[d] for s, d in zip(self.shapes, self.dtypes))


class _Reader:
    """config.json's fields for one architecture; a missing or malformed one is NotCovered."""

    def __init__(self, path: str, fields: dict[str, Any], arch: str, tp: int, spec: int):
        self.path = path
        self.fields = fields
        self.arch = arch
        self.tp = tp
        self.spec = spec

    def num(self, name: str) -> int:
        value = self.fields.get(name)
        if value is None:
            raise NotCovered(
                f"{self.path} has no {name!r}, which vLLM {RELEASE} reads for {self.arch}'s "
                "state (its config class would supply a default cgguard does not assume)"
            )
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise NotCovered(
                f"{self.path}: field {name!r} must be a positive integer for cgguard to read "
                f"{self.arch}'s state, got {value!r}"
            )
        return value

    def index(self, name: str) -> int:
        value = self.fields.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise NotCovered(
                f"{self.path}: field {name!r} must be an integer 0 or more for cgguard to read "
                f"{self.arch}'s layers, got {value!r}"
            )
        return value

    def optional_int(self, name: str) -> int | None:
        return None if self.fields.get(name) is None else self.num(name)

    def kinds(self, name: str) -> list:
        value = self.fields.get(name)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise NotCovered(
                f"{self.path} has no list of layer kinds {name!r}, which cgguard reads to count "
                f"{self.arch}'s attention layers"
            )
        return value

    def divide(self, value: int, what: str) -> int:
        """vllm.distributed.divide: vLLM refuses a size the ranks do not split evenly."""
        if value % self.tp:
            raise NotCovered(
                f"{what} ({value}) is not divisible by tensor parallel size {self.tp}, "
                "as vLLM requires"
            )
        return value // self.tp

    def kv_heads(self, default_is_heads: bool) -> int:
        """ModelConfig.get_total_num_kv_heads's fields, then its default; per rank."""
        for name in ("n_head_kv", "num_kv_heads", "num_key_value_heads"):
            if self.fields.get(name) is not None:
                total = self.num(name)
                break
        else:
            if not default_is_heads:
                self.num("num_key_value_heads")  # raises: the config class has its own default
            total = self.num("num_attention_heads")
        return max(1, total // self.tp)

    def head_size(self, class_default: bool) -> int:
        """ModelArchConfigConvertorBase.get_head_size: head_dim, hidden_size_per_head, or
        hidden_size // num_attention_heads (only where the config class sets no default)."""
        if self.fields.get("head_dim") is not None:
            return self.num("head_dim")
        if self.fields.get("hidden_size_per_head") is not None:
            return self.num("hidden_size_per_head")
        if class_default:
            self.num("head_dim")  # raises
        return self.num("hidden_size") // self.num("num_attention_heads")


def _conv(r: _Reader, dim: int, state_len: int) -> tuple[int, int]:
    # The SD layout (state_len, dim); the page size does not depend on the order.
    return (state_len, r.divide(dim, "the convolution state's width"))


def _mamba1(r: _Reader, intermediate: int, state: int, conv: int, dtype: str) -> _State:
    temporal = (r.divide(intermediate, "the Mamba intermediate size"), state)
    return _State((_conv(r, intermediate, conv - 1), temporal), (dtype, dtype))


def _mamba2(
    r: _Reader,
    dtype: str,
    ssm_dtype: str,
    *,
    intermediate: int,
    groups: int,
    heads: int,
    head_dim: int,
    state: int,
    conv: int,
    spec: int = 0,
) -> _State:
    if groups % r.tp:  # extra_groups_for_head_shards: groups replicated to follow the heads
        groups += r.tp - groups
    conv_dim = intermediate + 2 * groups * state
    temporal = (r.divide(heads, "the Mamba head count"), head_dim, state)
    return _State((_conv(r, conv_dim, conv - 1 + spec), temporal), (dtype, ssm_dtype))


def _jamba(r: _Reader, dtype: str) -> tuple[_State, int]:
    state = _mamba1(
        r,
        r.num("mamba_expand") * r.num("hidden_size"),
        r.num("mamba_d_state"),
        r.num("mamba_d_conv"),
        dtype,
    )
    period, offset = r.num("attn_layer_period"), r.index("attn_layer_offset")
    layers = sum(1 for i in range(r.num("num_hidden_layers")) if i % period == offset)
    return state, layers


def _falcon_h1(r: _Reader, dtype: str) -> tuple[_State, int]:
    d_ssm = r.optional_int("mamba_d_ssm")
    state = _mamba2(
        r,
        dtype,
        dtype,
        intermediate=d_ssm if d_ssm is not None else r.num("mamba_expand") * r.num("hidden_size"),
        groups=r.num("mamba_n_groups"),
        heads=r.num("mamba_n_heads"),
        head_dim=r.num("mamba_d_head"),
        state=r.num("mamba_d_state"),
        conv=r.num("mamba_d_conv"),
    )
    # Every Falcon-H1 decoder layer runs attention and a Mamba mixer side by side.
    return state, r.num("num_hidden_layers")


def _granite_hybrid(r: _Reader, dtype: str) -> tuple[_State, int]:
    state = _mamba2(
        r,
        dtype,
        dtype,
        intermediate=r.num("mamba_expand") * r.num("hidden_size"),
        groups=r.num("mamba_n_groups"),
        heads=r.num("mamba_n_heads"),
        head_dim=r.num("mamba_d_head"),
        state=r.num("mamba_d_state"),
        conv=r.num("mamba_d_conv"),
    )
    return state, r.kinds("layer_types").count("attention")


def _nemotron_h(r: _Reader, dtype: str) -> tuple[_State, int]:
    # NemotronHForCausalLMConfig: the SSM state is kept in the config's
    # mamba_ssm_cache_dtype, float32 when it names none.
    ssm_dtype = r.fields.get("mamba_ssm_cache_dtype", "float32")
    if ssm_dtype not in DTYPE_BYTES:
        raise NotCovered(f"{r.path}: mamba_ssm_cache_dtype {ssm_dtype!r} is not one cgguard sizes")
    heads, head_dim = r.num("mamba_num_heads"), r.num("mamba_head_dim")
    state = _mamba2(
        r,
        dtype,
        ssm_dtype,
        intermediate=heads * head_dim,
        groups=r.num("n_groups"),
        heads=heads,
        head_dim=head_dim,
        state=r.num("ssm_state_size"),
        conv=r.num("conv_kernel"),
        spec=r.spec,
    )
    pattern = r.fields.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return state, pattern.count("*")
    kinds = r.kinds("layers_block_type")
    return state, sum(1 for k in kinds if k in ("attention", "full_attention"))


def _zamba2(r: _Reader, dtype: str) -> tuple[_State, int]:
    intermediate = r.num("mamba_expand") * r.num("hidden_size")
    heads = r.num("n_mamba_heads")
    state = _mamba2(
        r,
        dtype,
        dtype,
        intermediate=intermediate,
        groups=r.num("mamba_ngroups"),
        heads=heads,
        # Zamba2Config derives the head size from the others, whatever the file says.
        head_dim=intermediate // heads,
        state=r.num("mamba_d_state"),
        conv=r.num("mamba_d_conv"),
    )
    # "hybrid" layers hold the shared attention block beside their Mamba mixer.
    return state, r.kinds("layers_block_type").count("hybrid")


def _gdn_state(r: _Reader, dtype: str) -> _State:
    k_heads, v_heads = r.num("linear_num_key_heads"), r.num("linear_num_value_heads")
    k_dim, v_dim = r.num("linear_key_head_dim"), r.num("linear_value_head_dim")
    conv_dim = k_dim * k_heads * 2 + v_dim * v_heads
    conv = _conv(r, conv_dim, r.num("linear_conv_kernel_dim") - 1 + r.spec)
    temporal = (r.divide(v_heads, "linear_num_value_heads"), v_dim, k_dim)
    return _State((conv, temporal), (dtype, dtype))


def _qwen3_next(r: _Reader, dtype: str) -> tuple[_State, int]:
    if r.fields.get("layer_types") is None:
        # vLLM's Qwen3NextConfig: without layer_types, every fourth layer is full attention.
        return _gdn_state(r, dtype), r.num("num_hidden_layers") // 4
    return _gdn_state(r, dtype), r.kinds("layer_types").count("full_attention")


def _olmo_hybrid(r: _Reader, dtype: str) -> tuple[_State, int]:
    if r.fields.get("layer_types") is None:
        # vLLM's OlmoHybridConfig: every fourth layer is full attention, at least the last.
        return _gdn_state(r, dtype), max(1, r.num("num_hidden_layers") // 4)
    return _gdn_state(r, dtype), r.kinds("layer_types").count("full_attention")


def _qwen3_5(r: _Reader, dtype: str) -> tuple[_State, int]:
    # vLLM's Qwen3_5ForConditionalGenerationConfig (vllm/model_executor/models/config.py)
    # keeps the recurrent state in the text config's mamba_ssm_dtype where it names one
    # (float32 in the published Qwen3.5 / 3.6 configs); the conv state follows the model.
    ssm_dtype = r.fields.get("mamba_ssm_dtype", dtype)
    if ssm_dtype not in DTYPE_BYTES:
        raise NotCovered(f"{r.path}: mamba_ssm_dtype {ssm_dtype!r} is not one cgguard sizes")
    state = _gdn_state(r, dtype)
    state = _State(state.shapes, (dtype, ssm_dtype))
    if r.fields.get("layer_types") is None:
        # Hugging Face's Qwen3_5 text configs: every full_attention_interval-th layer.
        interval = r.fields.get("full_attention_interval", 4)
        if isinstance(interval, bool) or not isinstance(interval, int) or interval <= 0:
            raise NotCovered(
                f"{r.path}: field 'full_attention_interval' must be a positive integer"
            )
        return state, r.num("num_hidden_layers") // interval
    return state, r.kinds("layer_types").count("full_attention")


def _lfm2(r: _Reader, dtype: str) -> tuple[_State, int]:
    conv = _conv(r, r.num("conv_dim"), r.num("conv_L_cache") - 1)
    return _State((conv,), (dtype,)), r.kinds("layer_types").count("full_attention")


def _lfm2_moe(r: _Reader, dtype: str) -> tuple[_State, int]:
    # Lfm2MoeForCausalLM convolves over the hidden size (Lfm2 over its conv_dim).
    conv = _conv(r, r.num("hidden_size"), r.num("conv_L_cache") - 1)
    return _State((conv,), (dtype,)), r.kinds("layer_types").count("full_attention")


@dataclass(frozen=True)
class _Family:
    name: str
    state: Callable[[_Reader, str], tuple[_State, int]]
    kv_heads_default_is_heads: bool  # the config class defaults KV heads to the query heads
    head_dim_default: bool  # the config class sets its own head_dim default
    head_size: Callable[[_Reader], int] | None = None  # the class derives it its own way
    # Layers that keep a state, from the attention layers' count: by default every
    # layer that is not attention (Falcon-H1 and Zamba2 run a Mamba mixer in every layer).
    state_layers: Callable[[_Reader, int], int] = lambda r, attention: (
        r.num("num_hidden_layers") - attention
    )


def _nemotron_h_state_layers(r: _Reader, attention: int) -> int:
    pattern = r.fields.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return pattern.count("M")
    return r.kinds("layers_block_type").count("mamba")


FAMILIES = {
    "JambaForCausalLM": _Family("Jamba (Mamba-1 layers)", _jamba, False, False),
    "FalconH1ForCausalLM": _Family(
        "Falcon-H1 (Mamba-2 mixers)",
        _falcon_h1,
        False,
        False,
        state_layers=lambda r, attention: r.num("num_hidden_layers"),
    ),
    "GraniteMoeHybridForCausalLM": _Family(
        "Granite 4.0 hybrid (Mamba-2 layers)",
        _granite_hybrid,
        True,
        False,
        state_layers=lambda r, attention: r.kinds("layer_types").count("mamba"),
    ),
    "NemotronHForCausalLM": _Family(
        "Nemotron-H (Mamba-2 layers)",
        _nemotron_h,
        False,
        True,
        state_layers=_nemotron_h_state_layers,
    ),
    "Zamba2ForCausalLM": _Family(
        "Zamba2 (Mamba-2 layers)",
        _zamba2,
        True,
        False,
        # Zamba2Config: attention_head_dim = 2 * hidden_size // num_attention_heads.
        head_size=lambda r: 2 * r.num("hidden_size") // r.num("num_attention_heads"),
        state_layers=lambda r, attention: r.num("num_hidden_layers"),
    ),
    "Qwen3NextForCausalLM": _Family(
        "Qwen3-Next (Gated DeltaNet linear attention)", _qwen3_next, False, True
    ),
    "OlmoHybridForCausalLM": _Family(
        "OLMo hybrid (Gated DeltaNet linear attention)", _olmo_hybrid, True, False
    ),
    **{
        arch: _Family(
            "Qwen3.5 / 3.6 (Gated DeltaNet linear attention, fields under text_config)",
            _qwen3_5,
            False,
            True,
        )
        for arch in (
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration",
            "Qwen3_5ForCausalLM",
            "Qwen3_5MoeForCausalLM",
        )
    },
    "Lfm2ForCausalLM": _Family("LFM2 (short convolutions)", _lfm2, False, False),
    "Lfm2MoeForCausalLM": _Family("LFM2-MoE (short convolutions)", _lfm2_moe, False, False),
}


def covered() -> str:
    return ", ".join(FAMILIES)


def _aligned_block(mamba_page: int, attention_token: int) -> int:
    """Platform._align_hybrid_block_size without prefix caching: the smallest
    multiple of the kernel alignment whose attention page holds one Mamba state."""
    if mamba_page == 0:
        return BLOCK_SIZE
    alignment = max(KERNEL_ALIGNMENT, BLOCK_SIZE)
    needed = alignment * -(-mamba_page // (alignment * attention_token))
    return max(BLOCK_SIZE, needed)


def block_from_fields(
    model_dir: str,
    model_dtype: str,
    kv_element_bytes: int,
    tensor_parallel_size: int = 1,
    num_speculative_tokens: int = 0,
) -> FieldsBlock:
    """The block size vLLM 0.25.0 gives this hybrid model, from config.json's fields.

    ``model_dtype`` is the dtype vLLM runs the model in (the Mamba state follows it at
    default settings); ``kv_element_bytes`` the attention KV cache's bytes per value.
    Raises NotCovered (one line) where the fields cannot give it, ConfigError for a
    config.json that cannot be read."""
    path = config_path(model_dir)
    top = load_json(path)
    archs = top.get("architectures")
    if not (isinstance(archs, list) and archs and all(isinstance(a, str) for a in archs)):
        raise NotCovered(
            f"{path} names no architecture (field 'architectures'), so which model class's "
            "state to read is unknown"
        )
    arch = archs[0]  # ModelConfig.architecture
    family = FAMILIES.get(arch)
    if family is None:
        raise NotCovered(
            f"cgguard reads the Mamba state from config.json only for {covered()} "
            f"(as vLLM {RELEASE} computes it), not for {arch}"
        )
    if model_dtype not in DTYPE_BYTES:
        raise NotCovered(f"model dtype {model_dtype!r} is not one cgguard sizes a state in")
    section = next((k for k in TEXT_SECTIONS if isinstance(top.get(k), dict)), None)
    fields = {**top, **top[section]} if section else top  # vLLM's hf_text_config first
    r = _Reader(path, fields, arch, tensor_parallel_size, num_speculative_tokens)
    state, layers = family.state(r, model_dtype)
    heads = r.kv_heads(family.kv_heads_default_is_heads)
    head = family.head_size(r) if family.head_size else r.head_size(family.head_dim_default)
    attention_token = 2 * heads * head * kv_element_bytes  # FullAttentionSpec, block_size=1
    mamba_page = state.page_bytes
    shapes = " + ".join(
        f"({', '.join(map(str, s))}) {d}" for s, d in zip(state.shapes, state.dtypes)
    )
    return FieldsBlock(
        block_size=_aligned_block(mamba_page, attention_token),
        mamba_page_bytes=mamba_page,
        attention_bytes_per_token=attention_token,
        attention_layers=layers,
        state=f"{family.name}: state {shapes}",
        state_layers=family.state_layers(r, layers),
    )


def hybrid_family(model_dir: str) -> bool:
    """Whether config.json names an architecture whose state cgguard reads (a hybrid
    one); False for a config.json it cannot read."""
    try:
        archs = load_json(config_path(model_dir)).get("architectures")
    except ConfigError:
        return False
    return isinstance(archs, list) and bool(archs) and archs[0] in FAMILIES
