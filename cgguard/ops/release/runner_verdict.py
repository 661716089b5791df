"""Does a model take the per-token profiling path on an affected vLLM, and why?

The path needs three things: vLLM picks the V1 runner (:mod:`runner_source`), the
worker runs the CUDA-graph profiling step (the settings :mod:`workarounds` found in
its start-up code skip it), and the runner's count is per token (doctor's finding).
Each answer comes with the reasons, quoted from the source, and the values assumed.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from cgguard.ops.release.model_kind import ModelKind, read_model_kind
from cgguard.ops.release.runner_source import (
    ENV,
    UNSUPPORTED,
    CannotTell,
    Facts,
    RunnerChoice,
    RunnerRule,
    read_runner_rule,
)
from cgguard.ops.release.v2_features import ON, FeatureSettings, V2Features, read_v2_features
from cgguard.ops.release.workarounds import Workarounds


@dataclass(frozen=True)
class RunSettings:
    """The start-up settings the verdict depends on, as the operator gives them."""

    env_use_v2: str | None = None  # VLLM_USE_V2_MODEL_RUNNER, raw
    enforce_eager: bool = False
    cudagraph_mode: str | None = None
    kv_cache_memory_bytes: int | None = None
    speculative_method: str | None = None
    num_speculative_tokens: int = 0
    tensor_parallel_size: int | None = None


def parse_env_flag(raw: str | None) -> bool | None:
    """VLLM_USE_V2_MODEL_RUNNER as vLLM reads it: ``bool(int(value))``; ValueError
    where vLLM would fail on it."""
    if raw is None:
        return None
    return bool(int(raw))


def settings_from_env(env: Mapping[str, str] | None = None, **given: object) -> RunSettings:
    env = os.environ if env is None else env
    return RunSettings(env_use_v2=env.get(ENV), **given)  # type: ignore[arg-type]


@dataclass
class PathVerdict:
    taken: bool | None  # None: cannot be ruled out
    runner: str | None  # "V1", "V2", None when unknown
    reasons: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)
    model: ModelKind | None = None
    # The features V2 lacks, where the runner choice went through them.
    v2_features: V2Features | None = None

    def to_json(self) -> dict:
        return {
            "takes_per_token_path": self.taken,
            "runner": self.runner,
            "reasons": self.reasons,
            "assumed": self.assumed,
            "model": self.model.to_json() if self.model is not None else None,
            "v2_unsupported_features": self.v2_features.to_json()
            if self.v2_features is not None
            else None,
        }


def triton_present() -> bool:
    try:
        return importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):
        return False


def facts_for(
    kind: ModelKind, settings: RunSettings, has_triton: bool, unsupported: tuple[str, ...] = ()
) -> Facts:
    return Facts(
        architectures=kind.architectures,
        is_moe=kind.is_moe,
        is_quantized=kind.is_quantized,
        is_hybrid=kind.is_hybrid,
        is_attention_free=kind.is_attention_free,
        is_diffusion=kind.is_diffusion,
        runner_type=kind.runner_type,
        env_use_v2=parse_env_flag(settings.env_use_v2),
        has_triton=has_triton,
        speculative_method=settings.speculative_method,
        unsupported=unsupported,
    )


def _kind_text(kind: ModelKind) -> str:
    parts = [", ".join(kind.architectures)]
    if kind.is_moe:
        parts.append(f"MoE ({kind.experts_field} {kind.num_experts})")
    else:
        parts.append("not MoE (no expert count)")
    if kind.is_hybrid:
        parts.append(f"hybrid ({kind.model_class} is IsHybrid)")
    if kind.is_attention_free:
        parts.append(f"attention-free ({kind.model_class} is IsAttentionFree)")
    if kind.is_quantized:
        parts.append("quantized (quantization_config)")
    return "; ".join(parts)


def _skip_reasons(settings: RunSettings, workarounds: Workarounds | None) -> list[str]:
    """Why the profiling step does not run with these settings, from the worker's code."""
    found = workarounds.found if workarounds is not None else []
    reasons = []
    for w in found:
        if settings.kv_cache_memory_bytes and "kv_cache_memory_bytes" in w.setting.replace(
            "-", "_"
        ):
            reasons.append(
                f"kv_cache_memory_bytes {settings.kv_cache_memory_bytes} is set: {w.effect} ({w.evidence})"
            )
        elif settings.enforce_eager and "enforce" in w.setting:
            reasons.append(f"enforce_eager is set: {w.effect} ({w.evidence})")
        elif (settings.cudagraph_mode or "").upper() == "NONE" and "cudagraph_mode" in w.setting:
            reasons.append(f"cudagraph_mode is NONE: {w.effect} ({w.evidence})")
    return reasons


def _runner_steps(choice: RunnerChoice) -> str:
    return "; ".join(f"line {s.line}: `{s.text}`" for s in choice.steps)


def model_verdict(
    package_dir: str,
    model_dir: str,
    settings: RunSettings,
    workarounds: Workarounds | None,
    *,
    has_triton: bool | None = None,
    triton_note: str | None = None,
) -> PathVerdict:
    """Whether the model in ``model_dir`` takes the per-token path on the vLLM at
    ``package_dir`` (one whose runner sizes per token). Raises ConfigError for a bad
    config.json.

    ``has_triton`` is what vLLM's HAS_TRITON is where it runs: None reads this
    Python's packages (the vLLM installed here); a tree read for another machine
    passes it, with ``triton_note`` saying why (listed under "Assumed")."""
    kind = read_model_kind(model_dir, package_dir)
    verdict = PathVerdict(taken=None, runner=None, model=kind)
    verdict.assumed.extend(kind.notes)
    triton_read = has_triton is None
    if has_triton is None:
        has_triton = triton_present()
    skips = _skip_reasons(settings, workarounds)
    if settings.cudagraph_mode and settings.cudagraph_mode.upper() == "NONE" and not skips:
        verdict.reasons.append(
            "cudagraph_mode NONE: this vLLM's start-up code does not skip the profiling step for it"
        )
    features = read_v2_features(
        package_dir,
        FeatureSettings(
            speculative_method=settings.speculative_method,
            num_speculative_tokens=settings.num_speculative_tokens,
            tensor_parallel_size=settings.tensor_parallel_size,
            runner_type=kind.runner_type,
        ),
    )
    in_use = tuple(features.labels(ON)) if features is not None else ()
    try:
        rule = read_runner_rule(package_dir)
        choice = rule.decide(facts_for(kind, settings, has_triton, in_use))
        if triton_read and has_triton and rule.kind == "property":
            verdict.assumed.append(
                "Triton finds its GPU driver (vLLM's HAS_TRITON): triton is installed in this Python"
            )
        elif triton_note is not None and rule.kind == "property":
            verdict.assumed.append(triton_note)
    except ValueError:
        verdict.reasons.append(
            f"{ENV}={settings.env_use_v2!r} is not an integer: vLLM fails to read it (bool(int(value)))"
        )
        choice = None
    except CannotTell as exc:
        verdict.reasons.append(f"which runner vLLM picks cannot be read: {exc}")
        choice = None
    if choice is not None:
        verdict.assumed.extend(choice.assumed)
        verdict.runner = "V2" if choice.v2 else "V1"
        verdict.reasons.append(
            f"model: {_kind_text(kind)}; runner {verdict.runner}, as {choice.path} decides "
            f"({_runner_steps(choice)})"
        )
        if choice.asked_unsupported and features is not None:
            verdict.v2_features = features
            if in_use:
                verdict.reasons.append(
                    f"model runner V2 lacks {'; '.join(in_use)}, which the settings given turn "
                    f"on ({features.path}:{features.line}, {UNSUPPORTED})"
                )
            note = features.assumed()
            if note is not None:
                verdict.assumed.append(note)
        if settings.num_speculative_tokens > 0 and settings.speculative_method is None:
            verdict.assumed.append(
                "the speculative method is not named (--speculative-method names it): cgguard "
                "takes it as one that changes no runner choice"
            )
        if choice.v2:
            if rule.v2_profiles_nothing:
                verdict.reasons.append(
                    f"model runner V2's profile_cudagraph_memory() returns 0 ({rule.v2_evidence}): "
                    "no profiling cache"
                )
            else:
                verdict.reasons.append(
                    "model runner V2's profile_cudagraph_memory() is not a plain `return 0` "
                    f"({rule.v2_evidence or 'not found'}): it may allocate"
                )
    verdict.reasons.extend(skips)
    if skips:
        verdict.taken = False
    elif choice is None:
        verdict.taken = None
    elif choice.v2:
        verdict.taken = False if rule.v2_profiles_nothing else None
    else:
        verdict.taken = True
    return verdict


# Model kinds the summary tries, as (label, facts) over an architecture not listed
# by the release; listed architectures are tried one by one.
_KINDS = (
    ("dense", dict(is_moe=False, is_quantized=False, is_hybrid=False, is_attention_free=False)),
    (
        "quantized dense",
        dict(is_moe=False, is_quantized=True, is_hybrid=False, is_attention_free=False),
    ),
    ("MoE", dict(is_moe=True, is_quantized=False, is_hybrid=False, is_attention_free=False)),
    ("hybrid", dict(is_moe=False, is_quantized=False, is_hybrid=True, is_attention_free=False)),
    (
        "attention-free",
        dict(is_moe=False, is_quantized=False, is_hybrid=False, is_attention_free=True),
    ),
)
UNLISTED = "AnyOtherForCausalLM"


@dataclass(frozen=True)
class RunnerSummary:
    v1_kinds: list[str]  # kinds (with exceptions named) that run V1 by default: affected
    v2_kinds: list[str]
    rule: RunnerRule | None
    note: str | None = None  # why there is no summary
    # The features V2 lacks, each taken as not configured for the kinds above.
    v2_features: V2Features | None = None

    def to_json(self) -> dict:
        return {
            "rule": self.rule.kind if self.rule is not None else None,
            "evidence": self.rule.path if self.rule is not None else None,
            "v2_default_architectures": list(self.rule.architectures) if self.rule else [],
            "v1_by_default": self.v1_kinds,
            "v2_by_default": self.v2_kinds,
            "v2_unsupported_features": self.v2_features.to_json()
            if self.v2_features is not None
            else None,
            "note": self.note,
        }


def runner_summary(package_dir: str, has_triton: bool = True) -> RunnerSummary:
    """Which kinds of model run the affected V1 runner on this vLLM by default."""
    try:
        rule = read_runner_rule(package_dir)
    except CannotTell as exc:
        return RunnerSummary([], [], None, str(exc))
    v1: list[str] = []
    v2: list[str] = []
    for label, base in _KINDS:

        def on_v2(arch: str, base: dict = base) -> bool:
            facts = Facts(
                architectures=(arch,),
                is_diffusion=False,
                runner_type="generate",
                has_triton=has_triton,
                **base,
            )
            return rule.decide(facts).v2

        try:
            default = on_v2(UNLISTED)
            flipped = [a for a in rule.architectures if on_v2(a) != default]
        except CannotTell as exc:
            return RunnerSummary([], [], rule, str(exc))
        text = f"{label} models"
        if flipped:
            text += f" (except {', '.join(flipped)})"
        (v2 if default else v1).append(text)
    features = read_v2_features(package_dir, FeatureSettings()) if v2 else None
    return RunnerSummary(v1, v2, rule, v2_features=features)
