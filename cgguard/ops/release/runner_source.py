"""Which model runner an installed vLLM picks, read from its own source (never imported).

Only the V1 runner (``vllm/v1/worker/gpu_model_runner.py``) builds the per-token
profiling cache; model runner V2's ``profile_cudagraph_memory()`` returns 0. From
0.22.0 ``VllmConfig.use_v2_model_runner`` (``vllm/config/vllm.py``) picks V2 by
default for some models, by a rule that changes from release to release; before,
the worker takes V2 only when ``VLLM_USE_V2_MODEL_RUNNER`` says so.

So the rule is not copied into cgguard: the property's body and
``_is_default_v2_model_runner_model()`` are evaluated statement by statement over the
model's kind and the settings given. Only the shapes these methods are written in
are understood (tests of attributes, ``getattr``, comparisons, ``any(...)`` over the
architectures, early returns); anything else stops the evaluation with the line it
could not read, and the answer is "cannot tell".
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Any

from cgguard.ops.release.workarounds import parse_source

VLLM_CONFIG = os.path.join("config", "vllm.py")
WORKER = os.path.join("v1", "worker", "gpu_worker.py")
V2_RUNNER = os.path.join("v1", "worker", "gpu", "model_runner.py")
PROPERTY = "use_v2_model_runner"
DEFAULT_RULE = "_is_default_v2_model_runner_model"
UNSUPPORTED = "_get_v2_model_runner_unsupported_features"
ENV = "VLLM_USE_V2_MODEL_RUNNER"
MODEL_ATTRS = (
    "architectures",
    "is_moe",
    "is_quantized",
    "is_hybrid",
    "is_attention_free",
    "is_diffusion",
    "runner_type",
)


class CannotTell(Exception):
    """The source or the facts do not decide; the message says which line or fact."""


@dataclass(frozen=True)
class Facts:
    """What the runner selection reads. None: unknown (the evaluation then stops)."""

    architectures: tuple[str, ...] | None = None
    is_moe: bool | None = None
    is_quantized: bool | None = None
    is_hybrid: bool | None = None
    is_attention_free: bool | None = None
    is_diffusion: bool | None = None
    runner_type: str | None = None
    env_use_v2: bool | None = None  # VLLM_USE_V2_MODEL_RUNNER as vLLM parses it
    has_triton: bool | None = True
    speculative_method: str | None = None
    unsupported: tuple[str, ...] = ()  # features in use that V2 lacks


@dataclass(frozen=True)
class Step:
    line: int
    text: str  # the source of the test or return that decided, one line


@dataclass(frozen=True)
class RunnerChoice:
    v2: bool
    steps: tuple[Step, ...]  # the tests that held, then the return that answered
    path: str
    # Optional features the code tests that the operator gave no value for: taken as
    # not configured (None), vLLM's default for them.
    assumed: tuple[str, ...] = ()
    # Whether the answer went through the list of features V2 lacks.
    asked_unsupported: bool = False


@dataclass(frozen=True)
class RunnerRule:
    """The selection code of one installed vLLM."""

    path: str  # vllm/config/vllm.py, or the worker when the config has no property
    kind: str  # "property" (0.22.0+), "env-only" (before)
    env_line: int | None = None  # where the worker or property reads the variable
    v2_profiles_nothing: bool | None = None  # V2's profile_cudagraph_memory() returns 0
    v2_evidence: str | None = None
    architectures: tuple[str, ...] = ()  # DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
    _tree: ast.Module | None = field(default=None, repr=False, compare=False)
    _source: str = field(default="", repr=False, compare=False)

    def decide(self, facts: Facts) -> RunnerChoice:
        if self.kind == "env-only":
            steps = (Step(self.env_line or 0, f"self.use_v2_model_runner = envs.{ENV}"),)
            return RunnerChoice(bool(facts.env_use_v2), steps, self.path)
        assert self._tree is not None
        return _Evaluator(self._tree, self._source, facts, self.path).property_value()


def _function(tree: ast.AST, name: str) -> ast.FunctionDef | None:
    return next(
        (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None
    )


def _returns_zero(func: ast.FunctionDef) -> bool:
    body = [
        s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Return)
        and isinstance(body[0].value, ast.Constant)
        and body[0].value.value == 0
    )


def _v2_profiling(package_dir: str) -> tuple[bool | None, str | None]:
    path = os.path.join(package_dir, V2_RUNNER)
    parsed = parse_source(path)
    func = _function(parsed[0], "profile_cudagraph_memory") if parsed else None
    if func is None:
        return None, None
    return _returns_zero(func), f"{path}:{func.lineno}"


def read_runner_rule(package_dir: str) -> RunnerRule:
    """This vLLM's runner selection; raises CannotTell when its source shows none."""
    v2_zero, v2_where = _v2_profiling(package_dir)
    config_path = os.path.join(package_dir, VLLM_CONFIG)
    parsed = parse_source(config_path)
    prop = _function(parsed[0], PROPERTY) if parsed else None
    if parsed is not None and prop is not None:
        tree, source = parsed
        archs: tuple[str, ...] = ()
        constant = _module_constants(tree).get("DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES")
        if isinstance(constant, frozenset):
            archs = tuple(sorted(constant))
        return RunnerRule(
            config_path,
            "property",
            env_line=prop.lineno,
            v2_profiles_nothing=v2_zero,
            v2_evidence=v2_where,
            architectures=archs,
            _tree=tree,
            _source=source,
        )
    worker = os.path.join(package_dir, WORKER)
    parsed_worker = parse_source(worker)
    if parsed_worker is not None:
        for node in ast.walk(parsed_worker[0]):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == ENV
                and any(isinstance(t, ast.Attribute) and t.attr == PROPERTY for t in node.targets)
            ):
                return RunnerRule(
                    worker,
                    "env-only",
                    env_line=node.lineno,
                    v2_profiles_nothing=v2_zero,
                    v2_evidence=v2_where,
                )
    raise CannotTell(
        f"neither {config_path} has a {PROPERTY} property nor {worker} reads {ENV}: "
        "which runner this vLLM uses cannot be read from its source"
    )


def _literal(node: ast.expr) -> Any:
    """A module constant: literals, and frozenset()/set() of a literal."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "set")
        and len(node.args) == 1
        and not node.keywords
    ):
        return frozenset(ast.literal_eval(node.args[0]))
    return ast.literal_eval(node)


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    constants: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            try:
                constants[target.id] = _literal(value)
            except (ValueError, TypeError, SyntaxError):
                continue
    return constants


class _Model:
    """``self.model_config`` during the evaluation."""


class _Self:
    """``self`` (the VllmConfig) during the evaluation."""


@dataclass(frozen=True)
class _Config:
    """One of the VllmConfig's sub-configs (``self.attention_config``...)."""

    name: str


class _Speculative:
    """``self.speculative_config`` when a speculative method is set."""


class _Return(Exception):
    def __init__(self, value: Any, step: Step):
        self.value = value
        self.step = step


class _Evaluator:
    def __init__(self, tree: ast.Module, source: str, facts: Facts, path: str):
        self.tree = tree
        self.source = source
        self.facts = facts
        self.path = path
        self.constants = _module_constants(tree)
        self.steps: list[Step] = []
        self.assumed: list[str] = []
        self.asked_unsupported = False

    def property_value(self) -> RunnerChoice:
        value = self.call(PROPERTY)
        if not isinstance(value, bool):
            raise CannotTell(f"{self.path}: {PROPERTY} gave {value!r}, not True or False")
        return RunnerChoice(
            value, tuple(self.steps), self.path, tuple(self.assumed), self.asked_unsupported
        )

    def text(self, node: ast.AST) -> str:
        return " ".join((ast.get_source_segment(self.source, node) or "").split())

    def stop(self, node: ast.AST, why: str) -> CannotTell:
        return CannotTell(f"{self.path}:{getattr(node, 'lineno', '?')}: {why}: `{self.text(node)}`")

    def call(self, name: str) -> Any:
        func = _function(self.tree, name)
        if func is None:
            raise CannotTell(f"{self.path}: no {name}()")
        local: dict[str, Any] = {}
        try:
            self.run(func.body, local)
        except _Return as done:
            self.steps.append(done.step)
            return done.value
        return None

    def run(self, body: list[ast.stmt], local: dict[str, Any]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Expr):  # a docstring or a log call: nothing decided
                continue
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
                continue
            if isinstance(stmt, ast.Return):
                value = self.eval(stmt.value, local) if stmt.value is not None else None
                raise _Return(value, Step(stmt.lineno, self.text(stmt)))
            if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
                value = self.eval(stmt.value, local)
                for target in stmt.targets:
                    local[target.id] = value  # type: ignore[attr-defined]
                continue
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if stmt.value is not None:
                    local[stmt.target.id] = self.eval(stmt.value, local)
                continue
            if isinstance(stmt, ast.If):
                if self.eval(stmt.test, local):
                    self.steps.append(Step(stmt.lineno, f"if {self.text(stmt.test)}:"))
                    self.run(stmt.body, local)
                else:
                    self.run(stmt.orelse, local)
                continue
            raise self.stop(stmt, "a statement cgguard does not evaluate")

    def attribute(self, obj: Any, attr: str, node: ast.AST) -> Any:
        if isinstance(obj, _Model):
            if attr not in MODEL_ATTRS:
                raise self.stop(node, f"the model's {attr} is not known to cgguard")
            value = getattr(self.facts, attr)
            if value is None:
                raise CannotTell(
                    f"{self.path}:{getattr(node, 'lineno', '?')}: the model's {attr} is unknown "
                    f"(`{self.text(node)}`)"
                )
            return value
        if isinstance(obj, _Speculative) and attr == "method":
            return self.facts.speculative_method
        if isinstance(obj, _Self):
            return self.self_attribute(attr, node)
        if isinstance(obj, _Config) and attr.endswith("_config"):
            return self.not_configured(f"{obj.name}.{attr}")
        raise self.stop(node, "an attribute cgguard does not evaluate")

    def not_configured(self, name: str) -> None:
        note = f"{name} not set (an optional feature; vLLM's default is None)"
        if note not in self.assumed:
            self.assumed.append(note)
        return None

    def self_attribute(self, attr: str, node: ast.AST) -> Any:
        if attr == "model_config":
            return _Model()
        if attr == "speculative_config":
            return _Speculative() if self.facts.speculative_method else None
        if attr.endswith("_config"):
            return _Config(attr)
        raise self.stop(node, "a setting cgguard does not evaluate")

    def eval(self, node: ast.expr, local: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in local:
                return local[node.id]
            if node.id == "HAS_TRITON":
                return self.facts.has_triton
            if node.id == "self":
                return _Self()
            if node.id in self.constants:
                return self.constants[node.id]
            raise self.stop(node, "a name cgguard does not evaluate")
        if isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name) and base.id == "envs" and node.attr == ENV:
                return self.facts.env_use_v2
            if isinstance(base, ast.Name) and base.id == "self":
                return self.self_attribute(node.attr, node)
            return self.attribute(self.eval(base, local), node.attr, node)
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                result: Any = True
                for value in node.values:
                    result = self.eval(value, local)
                    if not result:
                        return result
                return result
            result = False
            for value in node.values:
                result = self.eval(value, local)
                if result:
                    return result
            return result
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.eval(node.operand, local)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self.eval(node.left, local)
            right = self.eval(node.comparators[0], local)
            op = node.ops[0]
            if isinstance(op, ast.Eq):
                return left == right
            if isinstance(op, ast.NotEq):
                return left != right
            if isinstance(op, ast.In):
                return left in right
            if isinstance(op, ast.NotIn):
                return left not in right
            if isinstance(op, ast.Is):
                return left is right
            if isinstance(op, ast.IsNot):
                return left is not right
        if isinstance(node, ast.Call):
            return self.eval_call(node, local)
        if isinstance(node, ast.GeneratorExp) and len(node.generators) == 1:
            return self.generator(node, local)
        raise self.stop(node, "an expression cgguard does not evaluate")

    def eval_call(self, node: ast.Call, local: dict[str, Any]) -> Any:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) in (2, 3):
            obj = self.eval(node.args[0], local)
            name = node.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                raise self.stop(node, "getattr() with a computed name")
            if obj is None:
                return self.eval(node.args[2], local) if len(node.args) == 3 else None
            default = node.args[2] if len(node.args) == 3 else None
            if (
                isinstance(obj, _Self)
                and isinstance(default, ast.Constant)
                and default.value is None
            ):
                return self.not_configured(name.value)
            return self.attribute(obj, name.value, node)
        if isinstance(func, ast.Name) and func.id == "any" and len(node.args) == 1:
            arg = node.args[0]
            return any(self.eval(arg, local))
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and not node.args
        ):
            if func.attr == UNSUPPORTED:
                self.asked_unsupported = True
                return list(self.facts.unsupported)
            if func.attr == DEFAULT_RULE:
                return self.call(DEFAULT_RULE)
        raise self.stop(node, "a call cgguard does not evaluate")

    def generator(self, node: ast.GeneratorExp, local: dict[str, Any]) -> list[Any]:
        comp = node.generators[0]
        if comp.ifs or comp.is_async or not isinstance(comp.target, ast.Name):
            raise self.stop(node, "a generator cgguard does not evaluate")
        name = comp.target.id
        items = list(self.eval(comp.iter, local))
        return [self.eval(node.elt, {**local, name: item}) for item in items]
