"""The features model runner V2 lacks, read from the installed release's own
``VllmConfig._get_v2_model_runner_unsupported_features`` (``vllm/config/vllm.py``), and
which of them the operator's settings turn on.

The method appends one label per feature under its conditions. Each condition is
evaluated over what the operator gave (the speculative method and token count, the
tensor-parallel size, the model's runner type) and, for installed logits-processor
plugins, over this Python's own entry points, as the release reads them. A condition
nothing given decides is unknown: the feature is then taken as not configured (not in
use), and the caller lists it under "Assumed".
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
from dataclasses import dataclass
from typing import Any

from cgguard.ops.release.runner_source import UNSUPPORTED, VLLM_CONFIG
from cgguard.ops.release.workarounds import parse_source

ON, OFF, DEFAULT = "on", "off", "default"


class _Unknown:
    def __repr__(self) -> str:
        return "unknown"


UNKNOWN: Any = _Unknown()


@dataclass(frozen=True)
class FeatureSettings:
    """What the operator gave that the features' conditions read."""

    speculative_method: str | None = None
    num_speculative_tokens: int = 0
    tensor_parallel_size: int | None = None
    runner_type: str | None = None  # the model's, from the registry


@dataclass(frozen=True)
class Feature:
    label: str  # as the release names it
    line: int
    state: str  # ON: the settings turn it on; OFF: they rule it out; DEFAULT: taken as off


@dataclass(frozen=True)
class V2Features:
    path: str
    line: int  # where the method starts
    features: tuple[Feature, ...]

    def labels(self, state: str) -> list[str]:
        return [f.label for f in self.features if f.state == state]

    def assumed(self) -> str | None:
        defaults = self.labels(DEFAULT)
        if not defaults:
            return None
        return (
            f"none of these features model runner V2 lacks is in use ({self.path}:{self.line}, "
            f"{UNSUPPORTED}): {'; '.join(defaults)} (each taken as not configured)"
        )

    def to_json(self) -> dict:
        return {
            "evidence": f"{self.path}:{self.line}",
            "in_use": self.labels(ON),
            "ruled_out": self.labels(OFF),
            "assumed_not_in_use": self.labels(DEFAULT),
        }


class _Object:
    """A config object during the evaluation; ``attrs`` are the known attributes."""

    def __init__(self, **attrs: Any):
        self.attrs = attrs

    def get(self, name: str) -> Any:
        return self.attrs.get(name, UNKNOWN)


def _known(*values: Any) -> bool:
    return all(v is not UNKNOWN for v in values)


class _Reader:
    def __init__(self, source: str, settings: FeatureSettings):
        self.source = source
        self.settings = settings
        self.features: list[Feature] = []
        spec: Any = UNKNOWN  # not given: vLLM's default is none, but cgguard does not know
        if settings.speculative_method is not None or settings.num_speculative_tokens > 0:
            spec = _Object(
                method=settings.speculative_method or UNKNOWN,
                num_speculative_tokens=settings.num_speculative_tokens,
            )
        parallel = _Object()
        if settings.tensor_parallel_size is not None:
            parallel = _Object(tensor_parallel_size=settings.tensor_parallel_size)
        model = _Object(runner_type=settings.runner_type or UNKNOWN)
        self.self = _Object(speculative_config=spec, parallel_config=parallel, model_config=model)

    def text(self, node: ast.AST) -> str:
        return " ".join((ast.get_source_segment(self.source, node) or "").split())

    def run(self, body: list[ast.stmt], local: dict[str, Any], conds: tuple[Any, ...]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                test = self.eval(stmt.test, local)
                self.run(stmt.body, local, (*conds, test))
                negated = UNKNOWN if test is UNKNOWN else not test
                self.run(stmt.orelse, local, (*conds, negated))
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name):
                    held = _all(conds)
                    value = self.eval(stmt.value, local)
                    if held is True:
                        local[target.id] = value
                    elif held is UNKNOWN:
                        local[target.id] = UNKNOWN
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                local[stmt.target.id] = (
                    self.eval(stmt.value, local) if stmt.value is not None else UNKNOWN
                )
            elif isinstance(stmt, ast.ImportFrom) and stmt.module == "importlib.metadata":
                for alias in stmt.names:
                    if alias.name == "entry_points":
                        local[alias.asname or alias.name] = importlib.metadata.entry_points
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self.append(stmt.value, local, conds)

    def append(self, call: ast.Call, local: dict[str, Any], conds: tuple[Any, ...]) -> None:
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr == "append"
            and isinstance(func.value, ast.Name)
            and func.value.id == "unsupported"
            and len(call.args) == 1
        ):
            return
        held = _all(conds)
        state = ON if held is True else OFF if held is False else DEFAULT
        # A feature in use is named with the values given; the others keep the
        # release's placeholders (`<speculative_config.method>`).
        label = self.label(call.args[0], local if state == ON else {}, fill=state == ON)
        self.features.append(Feature(label, call.lineno, state))

    def label(self, node: ast.expr, local: dict[str, Any], fill: bool) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            parts = []
            for piece in node.values:
                if isinstance(piece, ast.Constant):
                    parts.append(str(piece.value))
                elif isinstance(piece, ast.FormattedValue):
                    value = self.eval(piece.value, local) if fill else UNKNOWN
                    shown = value if isinstance(value, str) else f"<{self.text(piece.value)}>"
                    parts.append(shown)
            return "".join(parts)
        return self.text(node)

    def eval(self, node: ast.expr, local: dict[str, Any]) -> Any:
        try:
            return self._eval(node, local)
        except (TypeError, ValueError):
            return UNKNOWN

    def _eval(self, node: ast.expr, local: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = [self.eval(e, local) for e in node.elts]
            return tuple(items) if _known(*items) else UNKNOWN
        if isinstance(node, ast.Name):
            if node.id == "self":
                return self.self
            return local.get(node.id, UNKNOWN)
        if isinstance(node, ast.Attribute):
            base = self.eval(node.value, local)
            return base.get(node.attr) if isinstance(base, _Object) else UNKNOWN
        if isinstance(node, ast.BoolOp):
            values = [self.eval(v, local) for v in node.values]
            if isinstance(node.op, ast.And):
                return _all(values)
            if any(v is not UNKNOWN and v for v in values):
                return True
            return False if _known(*values) else UNKNOWN
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            value = self.eval(node.operand, local)
            return UNKNOWN if value is UNKNOWN else not value
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self.compare(node, local)
        if isinstance(node, ast.Call):
            return self.call(node, local)
        return UNKNOWN

    def compare(self, node: ast.Compare, local: dict[str, Any]) -> Any:
        left = self.eval(node.left, local)
        right = self.eval(node.comparators[0], local)
        op = node.ops[0]
        if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(node.comparators[0], ast.Constant):
            if left is UNKNOWN:
                return UNKNOWN
            same = left is None if right is None else left is right
            return same if isinstance(op, ast.Is) else not same
        if not _known(left, right):
            return UNKNOWN
        ops = {
            ast.Eq: lambda a, b: a == b,
            ast.NotEq: lambda a, b: a != b,
            ast.In: lambda a, b: a in b,
            ast.NotIn: lambda a, b: a not in b,
            ast.Gt: lambda a, b: a > b,
            ast.GtE: lambda a, b: a >= b,
            ast.Lt: lambda a, b: a < b,
            ast.LtE: lambda a, b: a <= b,
        }
        fn = ops.get(type(op))
        return UNKNOWN if fn is None else fn(left, right)

    def call(self, node: ast.Call, local: dict[str, Any]) -> Any:
        func = self.eval(node.func, local) if isinstance(node.func, ast.Name) else UNKNOWN
        if isinstance(node.func, ast.Name) and node.func.id == "bool" and len(node.args) == 1:
            value = self.eval(node.args[0], local)
            return UNKNOWN if value is UNKNOWN else bool(value)
        if func is importlib.metadata.entry_points and not node.args:
            kwargs = {k.arg: self.eval(k.value, local) for k in node.keywords if k.arg}
            if set(kwargs) == {"group"} and isinstance(kwargs["group"], str):
                return tuple(importlib.metadata.entry_points(group=kwargs["group"]))
        return UNKNOWN


def _all(values: Any) -> Any:
    """And over three values: False wins, then unknown."""
    values = list(values)
    if any(v is not UNKNOWN and not v for v in values):
        return False
    return True if _known(*values) else UNKNOWN


def read_v2_features(package_dir: str, settings: FeatureSettings) -> V2Features | None:
    """The release's list, each feature with its state; None where the release has no
    such method (before 0.22.0 nothing picks V2 by default)."""
    path = os.path.join(package_dir, VLLM_CONFIG)
    parsed = parse_source(path)
    if parsed is None:
        return None
    tree, source = parsed
    func = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == UNSUPPORTED),
        None,
    )
    if func is None:
        return None
    reader = _Reader(source, settings)
    reader.run(func.body, {}, ())
    return V2Features(path, func.lineno, tuple(reader.features))
