"""Read the attention shape of a model from its Hugging Face ``config.json``.

Only what the KV cache size depends on: layers, KV heads and head size (or the
MLA latent sizes) and the checkpoint's dtype. Multimodal configs keep the text
model under ``text_config`` (or ``llm_config`` / ``language_config``); its fields
win over the top level. A missing or malformed field raises :class:`ConfigError`
naming the file and the field.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

# Keys under which multimodal configs nest their language model.
TEXT_SECTIONS = ("text_config", "llm_config", "language_config")

# Spellings of a checkpoint dtype in config.json -> canonical name.
DTYPE_NAMES = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
}


class ConfigError(Exception):
    """A config.json that cannot give the shape: one line naming the file and field."""


@dataclass(frozen=True)
class ModelShape:
    config_path: str
    model_type: str | None
    num_layers: int
    mla: bool  # DeepSeek-style multi-head latent attention
    num_kv_heads: int | None  # standard / grouped-query attention only
    # Query heads (num_attention_heads): vLLM refuses a tensor-parallel size that
    # does not divide them. None when an MLA config does not state them.
    num_attention_heads: int | None
    head_dim: int | None
    kv_lora_rank: int | None  # MLA only
    qk_rope_head_dim: int | None
    dtype: str | None  # canonical checkpoint dtype; None when config.json has none
    dtype_field: str | None  # where dtype came from, e.g. "torch_dtype"
    has_sliding_window: bool  # some layers use a window; counted as full layers here
    hybrid: bool  # Mamba / linear-attention layers beside attention ones
    text_section: str | None  # e.g. "text_config" when the text model is nested
    # Values config.json does not state, worked out from what it does (head_dim from
    # hidden_size and heads, ...): each one line for the output's "Assumed".
    derived: tuple[str, ...] = ()
    max_position_embeddings: int | None = None  # vLLM's max_model_len comes from it


class _Fields:
    """Field lookup over the text section first, then the top level."""

    def __init__(self, path: str, top: dict, section_name: str | None):
        self.path = path
        self.section_name = section_name
        self.scopes = [top[section_name], top] if section_name else [top]

    def _where(self) -> str:
        return f" (looked in {self.section_name} and the top level)" if self.section_name else ""

    def raw(self, *names: str) -> tuple[str, Any] | None:
        for scope in self.scopes:
            for name in names:
                if scope.get(name) is not None:
                    return name, scope[name]
        return None

    def need(self, *names: str) -> int:
        """A required positive integer field (ConfigError when missing or malformed)."""
        value = self.positive_int(*names)
        assert value is not None  # positive_int raises for a missing required field
        return value

    def positive_int(self, *names: str, required: bool = True) -> int | None:
        found = self.raw(*names)
        if found is None:
            if required:
                raise ConfigError(f"{self.path}: missing field {names[0]!r}{self._where()}")
            return None
        name, value = found
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(
                f"{self.path}: field {name!r} must be a positive integer, got {value!r}"
            )
        return value


def fetch_hint(model_dir: str) -> str:
    """How to get just the config.json of a Hugging Face model into a local folder."""
    parts = model_dir.split("/")
    looks_like_repo = (
        len(parts) == 2
        and all(parts)
        and not model_dir.startswith((".", "~"))
        and not os.path.isabs(model_dir)
    )
    repo, folder = (model_dir, parts[1]) if looks_like_repo else ("ORG/MODEL", "MODEL_DIR")
    return (
        "MODEL_DIR is a local folder holding the model's config.json (nothing is downloaded); "
        f"fetch just that file with: hf download {repo} config.json --local-dir {folder}"
    )


def config_path(model_dir: str) -> str:
    if os.path.isfile(model_dir):  # a config.json given directly
        return model_dir
    if not os.path.isdir(model_dir):
        raise ConfigError(f"{model_dir}: no such directory. {fetch_hint(model_dir)}")
    path = os.path.join(model_dir, "config.json")
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: no such file. {fetch_hint('ORG/MODEL')}")
    return path


def load_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _dtype(fields: _Fields) -> tuple[str | None, str | None]:
    found = fields.raw("torch_dtype", "dtype")
    if found is None:
        return None, None
    name, value = found
    key = value.lower().removeprefix("torch.") if isinstance(value, str) else None
    if key not in DTYPE_NAMES:
        raise ConfigError(
            f"{fields.path}: field {name!r} must be one of bfloat16, float16, float32, got {value!r}"
        )
    return DTYPE_NAMES[key], name


def _has_sliding_window(fields: _Fields) -> bool:
    layer_types = fields.raw("layer_types")
    if layer_types is not None and isinstance(layer_types[1], list):
        return any(isinstance(t, str) and "sliding" in t for t in layer_types[1])
    # Qwen2-style configs carry a window size with use_sliding_window: false.
    switched_off = fields.raw("use_sliding_window") == ("use_sliding_window", False)
    return fields.raw("sliding_window") is not None and not switched_off


# Fields only hybrid (Mamba / linear-attention) configs carry. vLLM enlarges such a
# model's attention block size to match the recurrent-state pages (docs/vllm.md,
# "Memory arithmetic").
HYBRID_FIELDS = (
    "mamba_d_state",
    "ssm_state_size",
    "mamba_expand",
    "hybrid_override_pattern",
    "layers_block_type",
    "linear_num_key_heads",
    "attn_layer_indices",
)


def _is_hybrid(fields: _Fields) -> bool:
    if fields.raw(*HYBRID_FIELDS) is not None:
        return True
    layer_types = fields.raw("layer_types")
    return (
        layer_types is not None
        and isinstance(layer_types[1], list)
        and any(
            isinstance(t, str) and any(k in t for k in ("mamba", "linear", "conv", "ssm"))
            for t in layer_types[1]
        )
    )


def load_model_shape(model_dir: str) -> ModelShape:
    path = config_path(model_dir)
    top = load_json(path)
    section = next((k for k in TEXT_SECTIONS if isinstance(top.get(k), dict)), None)
    fields = _Fields(path, top, section)

    num_layers = fields.need("num_hidden_layers", "n_layer", "num_layers")
    dtype, dtype_field = _dtype(fields)
    model_type = fields.raw("model_type")
    common: dict[str, Any] = dict(
        config_path=path,
        model_type=model_type[1] if model_type and isinstance(model_type[1], str) else None,
        num_layers=num_layers,
        dtype=dtype,
        dtype_field=dtype_field,
        has_sliding_window=_has_sliding_window(fields),
        hybrid=_is_hybrid(fields),
        text_section=section,
        max_position_embeddings=fields.positive_int("max_position_embeddings", required=False),
    )
    if fields.raw("kv_lora_rank") is not None:
        return ModelShape(
            derived=(f"the text model's fields from {section} (the top level where it has none)",)
            if section is not None
            else (),
            mla=True,
            num_kv_heads=None,
            num_attention_heads=fields.positive_int(
                "num_attention_heads", "n_head", required=False
            ),
            head_dim=None,
            kv_lora_rank=fields.need("kv_lora_rank"),
            qk_rope_head_dim=fields.need("qk_rope_head_dim"),
            **common,
        )
    heads_field, _ = fields.raw("num_attention_heads", "n_head") or ("num_attention_heads", None)
    num_heads = fields.need("num_attention_heads", "n_head")
    derived: list[str] = []
    if section is not None:
        derived.append(f"the text model's fields from {section} (the top level where it has none)")
    # Hugging Face's convention: no num_key_value_heads means plain multi-head attention.
    num_kv_heads = fields.positive_int("num_key_value_heads", "num_kv_heads", required=False)
    if num_kv_heads is None:
        num_kv_heads = num_heads
        derived.append(
            f"{num_kv_heads} KV heads = {heads_field} (no num_key_value_heads: plain multi-head attention)"
        )
    head_dim = fields.positive_int("head_dim", required=False)
    if head_dim is None:
        found = fields.raw("hidden_size", "n_embd", "d_model")
        hidden = fields.need("hidden_size", "n_embd", "d_model")
        hidden_field = found[0] if found else "hidden_size"
        if hidden % num_heads:
            raise ConfigError(
                f"{path}: field 'hidden_size' ({hidden}) is not a multiple of 'num_attention_heads' "
                f"({num_heads}) and there is no 'head_dim'"
            )
        head_dim = hidden // num_heads
        derived.append(
            f"head_dim {head_dim} = {hidden_field} {hidden} / {heads_field} {num_heads} (no head_dim)"
        )
    return ModelShape(
        mla=False,
        num_kv_heads=num_kv_heads,
        num_attention_heads=num_heads,
        head_dim=head_dim,
        kv_lora_rank=None,
        qk_rope_head_dim=None,
        derived=tuple(derived),
        **common,
    )
