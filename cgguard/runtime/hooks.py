"""Where the guard hooks into vLLM, and the wrappers it puts there.

Two kinds of hook point (docs/vllm.md, "Where the allocation runs"):

- *allocation*: ``initialize_kv_cache`` on the v1 and v2 ``GPUModelRunner`` and on
  every subclass that overrides it. The outermost call checks the configuration
  before the original allocates anything.
- *profiling scope*: ``_init_minimal_kv_cache_for_profiling`` and
  ``profile_cudagraph_memory`` (methods, overrides, and the module-level twins of
  model runner v2). While one runs, any allocation is the profiling one, which
  covers 0.18.0's ``initialize_kv_cache`` without ``is_profiling`` and forks that
  drop the keyword. An allocation is also the profiling one when its
  ``is_profiling`` argument is true, passed by keyword or by position.

Subclasses defined after :func:`install` (a fork's runner, the CPU runner
imported by the worker) are wrapped from ``__init_subclass__`` of the base classes.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import inspect
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cgguard.runtime.check import check_profiling_allocation
from cgguard.runtime.errors import GuardViolation
from cgguard.runtime.kvcache import looks_like_kv_cache_config, vllm_version
from cgguard.runtime.report import append_event
from cgguard.runtime.state import STATE, logger
from cgguard.shared.modes import MODES

RUNNER_CLASSES = (
    ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner"),  # v1 runner, 0.18.0+
    ("vllm.v1.worker.gpu.model_runner", "GPUModelRunner"),  # model runner v2
)
ALLOCATION_METHODS = ("initialize_kv_cache",)
SCOPE_METHODS = ("_init_minimal_kv_cache_for_profiling", "profile_cudagraph_memory")
SCOPE_FUNCTIONS = (  # model runner v2's module-level twins (0.33.0)
    ("vllm.v1.worker.gpu.cudagraph_utils", "_init_minimal_kv_cache_for_profiling"),
    ("vllm.v1.worker.gpu.cudagraph_utils", "profile_cudagraph_memory"),
)

_ORIGINAL = "__cgguard_original__"


@dataclass
class _Scope:
    """One profiling call in progress, from the outermost wrapped scope function in."""

    # Labels of the scope functions now running, innermost last ("via" in reports).
    labels: list[str] = field(default_factory=list)
    # (blocks the runner asked for, blocks the fix built), once ``fix`` acted.
    fixed: tuple[int, int] | None = None


# Context variables, so threads and asyncio tasks each see their own call stack.
_SCOPE: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar(
    "cgguard_scope", default=None
)
_CHECKING: contextvars.ContextVar[bool] = contextvars.ContextVar("cgguard_checking", default=False)


@dataclass
class _Patch:
    owner: Any  # a class or a module
    name: str
    original: Any  # the value in owner.__dict__ before patching, or _ABSENT
    label: str


_ABSENT = object()
_LOCK = threading.RLock()
_PATCHES: list[_Patch] = []
_INTERNAL_ERROR = "internal-error"  # STATE.log_once key


# --------------------------------------------------------------------------- wrappers


def _reconcile(scope: _Scope, runner: Any) -> None:
    """After ``fix``: vLLM records the block count it *asked* for; record the built one."""
    if scope.fixed is None:
        return
    requested, built = scope.fixed
    cache_config = getattr(runner, "cache_config", None)
    if cache_config is not None and getattr(cache_config, "num_gpu_blocks", None) == requested:
        cache_config.num_gpu_blocks = built


def _scope_wrapper(original: Callable, label: str) -> Callable:
    @functools.wraps(original)
    def cgguard_profiling_scope(*args: Any, **kwargs: Any) -> Any:
        if STATE.mode == "off":
            return original(*args, **kwargs)
        scope = _SCOPE.get()
        token = None
        if scope is None:
            scope = _Scope()
            token = _SCOPE.set(scope)
        scope.labels.append(label)
        try:
            return original(*args, **kwargs)
        finally:
            scope.labels.pop()
            if args:
                try:
                    _reconcile(scope, args[0])
                except Exception:  # never let bookkeeping break vLLM
                    logger.debug("cgguard: could not correct num_gpu_blocks", exc_info=True)
            if token is not None:
                _SCOPE.reset(token)

    setattr(cgguard_profiling_scope, _ORIGINAL, original)
    return cgguard_profiling_scope


def _profiling_flag(signature: inspect.Signature | None, args: tuple, kwargs: dict) -> bool:
    """True when the call says ``is_profiling=True``, by keyword or by position."""
    if kwargs.get("is_profiling"):
        return True
    if signature is None or "is_profiling" not in signature.parameters:
        return False
    try:
        bound = signature.bind_partial(*args, **kwargs)
    except TypeError:
        return False
    return bool(bound.arguments.get("is_profiling"))


def _find_config(args: tuple, kwargs: dict) -> tuple[int | str, Any] | None:
    """Where the KV cache configuration sits in the call: a position or a keyword."""
    for index, value in enumerate(args[1:], start=1):
        if looks_like_kv_cache_config(value):
            return index, value
    for key, value in kwargs.items():
        if looks_like_kv_cache_config(value):
            return key, value
    return None


def _guard_call(
    signature: inspect.Signature | None, label: str, args: tuple, kwargs: dict
) -> tuple[tuple, dict]:
    """Check a call to an allocation method; returns the arguments to call it with."""
    scope = _SCOPE.get()
    if scope is None and not _profiling_flag(signature, args, kwargs):
        return args, kwargs  # the real KV cache, not ours to judge
    found = _find_config(args, kwargs)
    if not args or found is None:
        STATE.log_once(
            f"noconfig:{label}",
            logging.WARNING,
            "cgguard: %s was called for profiling without a KV cache config; not checked",
            label,
        )
        return args, kwargs
    where, config = found
    via = scope.labels[-1] if scope is not None and scope.labels else label
    new_config, requested = check_profiling_allocation(args[0], config, via)
    if new_config is config:
        return args, kwargs
    if scope is not None and requested is not None:
        scope.fixed = (requested, int(new_config.num_blocks))
    if isinstance(where, int):
        args = args[:where] + (new_config,) + args[where + 1 :]
    else:
        kwargs = {**kwargs, where: new_config}
    return args, kwargs


def _allocation_wrapper(original: Callable, label: str) -> Callable:
    try:
        signature: inspect.Signature | None = inspect.signature(original)
    except (TypeError, ValueError):
        signature = None

    @functools.wraps(original)
    def cgguard_checked_allocation(*args: Any, **kwargs: Any) -> Any:
        # Only the outermost call checks: an override calling super() is one allocation.
        if STATE.mode == "off" or _CHECKING.get():
            return original(*args, **kwargs)
        token = _CHECKING.set(True)
        try:
            try:
                args, kwargs = _guard_call(signature, label, args, kwargs)
            except GuardViolation:
                raise
            except Exception as exc:
                # The guard must never be the reason vLLM fails to start.
                STATE.log_once(
                    _INTERNAL_ERROR,
                    logging.WARNING,
                    "cgguard: internal error while checking %s (%s: %s); vLLM continues unchecked",
                    label,
                    type(exc).__name__,
                    exc,
                )
            return original(*args, **kwargs)
        finally:
            _CHECKING.reset(token)

    setattr(cgguard_checked_allocation, _ORIGINAL, original)
    return cgguard_checked_allocation


# --------------------------------------------------------------------------- patching


def _patch(owner: Any, name: str, make: Callable[[Callable, str], Callable], label: str) -> bool:
    """Wrap ``owner.<name>`` if ``owner`` itself defines it as a plain function."""
    current = vars(owner).get(name, _ABSENT)
    if current is _ABSENT or not inspect.isfunction(current):
        return False
    if hasattr(current, _ORIGINAL):
        return True  # already ours
    setattr(owner, name, make(current, label))
    _PATCHES.append(_Patch(owner, name, current, label))
    STATE.targets.append(label)
    return True


def _patch_class(cls: type) -> list[str]:
    """Wrap the hook methods ``cls`` defines itself (not the inherited ones)."""
    done = []
    prefix = f"{cls.__module__}.{cls.__qualname__}"
    for name in ALLOCATION_METHODS:
        if _patch(cls, name, _allocation_wrapper, f"{prefix}.{name}"):
            done.append(name)
    for name in SCOPE_METHODS:
        if _patch(cls, name, _scope_wrapper, f"{prefix}.{name}"):
            done.append(name)
    return done


def _all_subclasses(cls: type) -> list[type]:
    seen: list[type] = []
    stack: list[type] = list(cls.__subclasses__())
    while stack:
        sub = stack.pop()
        if sub not in seen:
            seen.append(sub)
            stack.extend(sub.__subclasses__())
    return seen


def _hook_subclass_creation(base: type) -> None:
    """Wrap overrides in subclasses of ``base`` defined from now on."""
    original = vars(base).get("__init_subclass__", _ABSENT)

    def __init_subclass__(cls: type, **kwargs: Any) -> None:
        if original is _ABSENT:
            super(base, cls).__init_subclass__(**kwargs)  # type: ignore[arg-type]
        else:
            original.__get__(None, cls)(**kwargs)
        if STATE.active:
            try:
                with _LOCK:
                    _patch_class(cls)
            except Exception:
                logger.debug("cgguard: could not wrap %s", cls, exc_info=True)

    setattr(__init_subclass__, _ORIGINAL, original)
    base.__init_subclass__ = classmethod(__init_subclass__)  # type: ignore[assignment]
    _PATCHES.append(
        _Patch(
            base,
            "__init_subclass__",
            original,
            f"{base.__module__}.{base.__qualname__}.__init_subclass__",
        )
    )


def _import(module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except Exception as exc:  # a platform without this module: that hook point is absent
        logger.debug("cgguard: cannot import %s: %s", module_name, exc)
        return None


def _hook_everything() -> None:
    for module_name, class_name in RUNNER_CLASSES:
        module = _import(module_name)
        base = getattr(module, class_name, None) if module is not None else None
        if not isinstance(base, type):
            continue
        if not _patch_class(base):
            continue
        for sub in _all_subclasses(base):
            _patch_class(sub)
        _hook_subclass_creation(base)
    for module_name, function_name in SCOPE_FUNCTIONS:
        module = _import(module_name)
        if module is not None:
            _patch(module, function_name, _scope_wrapper, f"{module_name}.{function_name}")


def _restore_all() -> None:
    for patch in reversed(_PATCHES):
        if patch.original is _ABSENT:
            try:
                delattr(patch.owner, patch.name)
            except AttributeError:
                pass
        else:
            setattr(patch.owner, patch.name, patch.original)
    _PATCHES.clear()
    STATE.targets.clear()


def _has_allocation_hook() -> bool:
    return any(p.name in ALLOCATION_METHODS for p in _PATCHES)


# --------------------------------------------------------------------------- public API


def _stay_inactive(
    report_path: str | None, mode: str, message: str, *args: object, key: str = "inactive"
) -> None:
    """One warning per process, and the report's ``installed`` line with ``"active": false``."""
    STATE.log_once(key, logging.WARNING, message, *args)
    append_event(
        report_path, "installed", active=False, mode=mode, vllm_version=vllm_version(), targets=[]
    )


def install(mode: str = "warn", report: str | os.PathLike[str] | None = None) -> bool:
    """Hook vLLM's model runners; returns whether hooks are active.

    Calling it again only changes the mode and the report path (it never wraps
    twice). With no hook points in the installed vLLM (or no vLLM), the guard
    stays inactive, says so once, and returns False.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    report_path = os.fspath(report) if report is not None else None
    with _LOCK:
        old_report = STATE.report
        STATE.mode, STATE.report = mode, report_path
        if STATE.active:
            # A new report path, or a process forked from one that installed the
            # guard (hooks inherited, plugin loaded again): it gets its own line.
            if report_path and (report_path != old_report or STATE.announced_pid != os.getpid()):
                _announce()
            return True
        if _import("vllm") is None:
            _stay_inactive(
                report_path,
                mode,
                "cgguard: vLLM is not importable in this process; the runtime guard is inactive",
            )
            return False
        try:
            _hook_everything()
        except Exception as exc:
            _restore_all()
            _stay_inactive(
                report_path,
                mode,
                "cgguard: could not hook vLLM (%s: %s); the runtime guard is inactive",
                type(exc).__name__,
                exc,
                key="inactive-error",
            )
            return False
        if not _has_allocation_hook():
            _restore_all()
            _stay_inactive(
                report_path,
                mode,
                "cgguard: vLLM %s has none of the hook points the guard knows "
                "(GPUModelRunner.initialize_kv_cache in vllm.v1.worker); the runtime guard is inactive",
                vllm_version() or "(unknown version)",
            )
            return False
        STATE.active = True
        logger.info(
            "cgguard: runtime guard active in pid %d (mode %s), hooked %d targets",
            os.getpid(),
            STATE.mode,
            len(STATE.targets),
        )
        _announce()
        return True


def _announce() -> None:
    STATE.announced_pid = os.getpid()
    append_event(
        STATE.report,
        "installed",
        active=True,
        mode=STATE.mode,
        vllm_version=vllm_version(),
        targets=list(STATE.targets),
    )


def uninstall() -> None:
    """Restore every method and function the guard wrapped."""
    with _LOCK:
        _restore_all()
        STATE.active = False


def hooked_targets() -> list[str]:
    """Dotted names of the wrapped hook points (empty when inactive)."""
    with _LOCK:
        return list(STATE.targets)
