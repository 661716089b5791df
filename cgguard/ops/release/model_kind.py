"""What vLLM's runner selection asks of a model, read from its ``config.json`` and from
the installed vLLM's model registry source (never imported).

vLLM decides on the model runner from a few properties of its ``ModelConfig``:
the architectures config.json names, whether it is a mixture of experts (a positive
expert count under one of four field names in the text config), quantized (a
``quantization_config``), hybrid or attention-free (class attributes of the model
class the registry maps the architecture to), a diffusion model (``canvas_length``)
and the runner type. Each is read here the way that vLLM reads it; where the source
cannot tell, the value is None and says why.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Any

from cgguard.ops.release.model_config import TEXT_SECTIONS, ConfigError, config_path, load_json

REGISTRY = os.path.join("model_executor", "models", "registry.py")
MODELS_DIR = os.path.join("model_executor", "models")
# ModelArchConfigConvertor.get_num_experts: the first of these the text config has.
EXPERT_FIELDS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")
# Registry tables whose models run as text generators under vLLM's default runner.
GENERATION_TABLES = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS")
POOLING_TABLES = (
    "_EMBEDDING_MODELS",
    "_LATE_INTERACTION_MODELS",
    "_REWARD_MODELS",
    "_TOKEN_CLASSIFICATION_MODELS",
    "_SEQUENCE_CLASSIFICATION_MODELS",
)
# Interfaces whose class attribute marks a model (vllm/model_executor/models/interfaces.py).
MARKERS = {"is_hybrid": "IsHybrid", "is_attention_free": "IsAttentionFree"}


@dataclass(frozen=True)
class ModelKind:
    config_path: str
    architectures: tuple[str, ...]
    is_moe: bool
    num_experts: int
    experts_field: str | None
    is_quantized: bool
    is_diffusion: bool
    is_hybrid: bool | None  # None: the registry source cannot tell
    is_attention_free: bool | None
    runner_type: str | None  # "generate" / "pooling"; None when unknown
    model_class: str | None  # "module:Class" the registry maps the architecture to
    # Why a value is None, or where a value came from, one line each.
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict:
        return {
            "config": self.config_path,
            "architectures": list(self.architectures),
            "is_moe": self.is_moe,
            "num_experts": self.num_experts,
            "is_quantized": self.is_quantized,
            "is_hybrid": self.is_hybrid,
            "is_attention_free": self.is_attention_free,
            "is_diffusion": self.is_diffusion,
            "runner_type": self.runner_type,
            "model_class": self.model_class,
            "notes": list(self.notes),
        }


def _parse(path: str) -> ast.Module | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return ast.parse(fh.read())
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def registry_tables(package_dir: str) -> dict[str, dict[str, tuple[str, str]]] | None:
    """The registry's tables, ``{table: {architecture: (module, class)}}``; None when
    this vLLM has no readable registry."""
    tree = _parse(os.path.join(package_dir, REGISTRY))
    if tree is None:
        return None
    tables: dict[str, dict[str, tuple[str, str]]] = {}
    for node in tree.body:
        target = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Dict)):
            continue
        entries: dict[str, tuple[str, str]] = {}
        for key, item in zip(value.keys, value.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            if (
                isinstance(item, ast.Tuple)
                and len(item.elts) == 2
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in item.elts)
            ):
                module, cls = (e.value for e in item.elts)  # type: ignore[attr-defined]
                entries[key.value] = (module, cls)
        tables[target.id] = entries
    return tables


def _class_def(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _imported_from(tree: ast.Module, name: str) -> str | None:
    """The sibling model module a name is imported from (``from .x import Name``)."""
    for node in tree.body:
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 1
            and node.module
            and any((a.asname or a.name) == name for a in node.names)
        ):
            return node.module
    return None


def _base_name(base: ast.expr) -> str | None:
    if isinstance(base, ast.Name):
        return base.id
    if isinstance(base, ast.Attribute):
        return base.attr
    return None


def class_marker(package_dir: str, module: str, cls: str, attr: str, depth: int = 0) -> bool | None:
    """Whether a model class carries ``attr`` (``is_hybrid``...) as vLLM reads it,
    ``getattr(cls, attr, False)``: set in its body or inherited from the interface or
    from a base class in the models package. None when a base cannot be read."""
    if depth > 8:
        return None
    tree = _parse(os.path.join(package_dir, MODELS_DIR, module.replace(".", os.sep) + ".py"))
    if tree is None:
        return None
    node = _class_def(tree, cls)
    if node is None:
        source = _imported_from(tree, cls)
        return None if source is None else class_marker(package_dir, source, cls, attr, depth + 1)
    for stmt in node.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            targets, value = [stmt.target], stmt.value
        if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
            return bool(value.value) if isinstance(value, ast.Constant) else None
    answer: bool | None = False
    for base in node.bases:
        name = _base_name(base)
        if name is None:
            continue
        if name == MARKERS[attr]:
            return True
        if name in ("Module", "Protocol", "object") or name.startswith(("Supports", "Has")):
            continue
        # A base from the same module or a sibling one; interfaces other than the
        # marker (MixtureOfExperts, ...) do not set it.
        sibling = module if _class_def(tree, name) is not None else _imported_from(tree, name)
        if sibling is None:
            continue
        inherited = class_marker(package_dir, sibling, name, attr, depth + 1)
        if inherited:
            return True
        if inherited is None:
            answer = None
    return answer


def _experts(text: dict[str, Any]) -> tuple[int, str | None]:
    """vLLM's expert count: the first field present wins, even when it is 0 or null."""
    for name in EXPERT_FIELDS:
        if name in text:
            value = text[name]
            if isinstance(value, list):
                value = value[0] if value else 0
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value, name
            break
    blocks = text.get("block_configs")
    if isinstance(blocks, list):
        counts = [
            b.get("n_routed_experts", 0)
            for b in blocks
            if isinstance(b, dict) and b.get("block_type") == "moe"
        ]
        best = max((c for c in counts if isinstance(c, int)), default=0)
        if best > 0:
            return best, "block_configs"
    return 0, None


def read_model_kind(model_dir: str, package_dir: str | None) -> ModelKind:
    """The model's kind for runner selection; ``package_dir`` is the vLLM whose
    registry maps architectures to model classes (None: no vLLM to read)."""
    path = config_path(model_dir)
    top = load_json(path)
    section = next((k for k in TEXT_SECTIONS if isinstance(top.get(k), dict)), None)
    text = top[section] if section else top
    archs = top.get("architectures")
    if not (isinstance(archs, list) and archs and all(isinstance(a, str) for a in archs)):
        raise ConfigError(f"{path}: field 'architectures' must be a list of class names")
    num_experts, experts_field = _experts(text)
    notes: list[str] = []
    hybrid: bool | None = None
    attention_free: bool | None = None
    runner: str | None = None
    model_class: str | None = None
    tables = registry_tables(package_dir) if package_dir is not None else None
    if tables is None:
        notes.append(
            "no vLLM model registry to read (vllm/model_executor/models/registry.py): "
            "whether the model is hybrid or attention-free is unknown"
        )
    else:
        for arch in archs:
            for table in (*GENERATION_TABLES, *POOLING_TABLES):
                if arch in tables.get(table, {}):
                    module, cls = tables[table][arch]
                    model_class = f"{module}:{cls}"
                    runner = "generate" if table in GENERATION_TABLES else "pooling"
                    hybrid = class_marker(package_dir, module, cls, "is_hybrid")  # type: ignore[arg-type]
                    attention_free = class_marker(package_dir, module, cls, "is_attention_free")  # type: ignore[arg-type]
                    break
            if model_class is not None:
                break
        if model_class is None:
            notes.append(
                f"this vLLM's registry does not list {', '.join(archs)}: whether it is hybrid or "
                "attention-free is unknown"
            )
        elif hybrid is None or attention_free is None:
            notes.append(f"{model_class}: a base class could not be read")
    if hybrid:
        # ModelConfig.is_hybrid: a hybrid class whose layer_types are all attention is not.
        layer_types = top.get("layer_types")
        if isinstance(layer_types, list) and all(t == "attention" for t in layer_types):
            hybrid = False
            notes.append("hybrid model class, but every entry of layer_types is attention")
    return ModelKind(
        config_path=path,
        architectures=tuple(archs),
        is_moe=num_experts > 0,
        num_experts=num_experts,
        experts_field=experts_field,
        is_quantized=top.get("quantization_config") is not None,
        is_diffusion=top.get("canvas_length") is not None,
        is_hybrid=hybrid,
        is_attention_free=attention_free,
        runner_type=runner,
        model_class=model_class,
        notes=tuple(notes),
    )
