"""Start-up settings that keep an affected vLLM from building the per-token profiling
cache, read from that vLLM's own start-up code, never assumed from a version number.

The allocation happens in ``GPUModelRunner.profile_cudagraph_memory()``, which the
worker's ``determine_available_memory()`` (``vllm/v1/worker/gpu_worker.py``) calls only
under a condition that differs between releases: 0.25.0 skips it when
``cudagraph_mode`` is NONE, 0.18.0 only under ``enforce_eager``. Both return earlier,
before any profiling, when ``kv_cache_memory_bytes`` is set. So each way around is
offered only where the installed source shows it (the file and line are kept as
evidence), with its cost:

- a fixed KV cache size (``--kv-cache-memory-bytes``): the early return;
- ``--enforce-eager``: named in the condition, or it sets ``cudagraph_mode`` to NONE
  in ``vllm/config/vllm.py`` where the condition tests that;
- ``cudagraph_mode`` NONE: named in the condition;
- a smaller ``--max-cudagraph-capture-size``: the finding itself shows the block count
  is the capture size, so a smaller one shrinks the cache; its cost is where the
  CUDA-graph dispatcher (``vllm/v1/cudagraph_dispatcher.py``) runs a batch of more
  tokens than that without a graph.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import asdict, dataclass

WORKER = os.path.join("v1", "worker", "gpu_worker.py")
VLLM_CONFIG = os.path.join("config", "vllm.py")
ENGINE_ARGS = os.path.join("engine", "arg_utils.py")
DISPATCHER = os.path.join("v1", "cudagraph_dispatcher.py")
ENTRY = "determine_available_memory"
PROFILE_CALL = "profile_cudagraph_memory"


@dataclass(frozen=True)
class Workaround:
    setting: str  # how to set it when starting vLLM (its command-line flag)
    effect: str  # what it does to the profiling allocation, as the source shows
    cost: str
    evidence: str  # PATH:LINE of the code that shows the effect

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Workarounds:
    found: list[Workaround]
    condition: str | None  # the condition under which vLLM runs the profiling step
    evidence: str | None  # where that condition is
    note: str | None = None  # why none could be confirmed

    def to_json(self) -> dict:
        return {
            "profiling_condition": self.condition,
            "evidence": self.evidence,
            "settings": [w.to_json() for w in self.found],
            "note": self.note,
        }


def parse_source(path: str) -> tuple[ast.Module, str] | None:
    """A release file's tree and text, or None where it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        return ast.parse(text), text
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def _text(node: ast.AST, source: str) -> str:
    return " ".join((ast.get_source_segment(source, node) or "").split())


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _in_body(node: ast.AST, stmt: ast.If, parents: dict[ast.AST, ast.AST]) -> bool:
    """Is ``node`` inside ``stmt``'s body (its then-branch)?"""
    while node in parents:
        parent = parents[node]
        if parent is stmt:
            return node in stmt.body
        node = parent
    return False


def _flag(args_text: str | None, flag: str, key: str) -> str:
    """The flag when this release's argument parser has it, else the config key."""
    if args_text is not None and f'"{flag}"' in args_text:
        return flag
    return f"{key} (engine argument)"


def _eager_sets_no_graphs(package_dir: str) -> tuple[str | None, bool]:
    """Where ``enforce_eager`` sets ``cudagraph_mode`` to NONE in vllm/config/vllm.py
    (PATH:LINE or None), and whether it also turns compilation off there."""
    path = os.path.join(package_dir, VLLM_CONFIG)
    parsed = parse_source(path)
    if parsed is None:
        return None, False
    tree, source = parsed
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and "enforce_eager" in _text(node.test, source)):
            continue
        sets = {}
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and "NONE" in _text(stmt.value, source):
                for target in stmt.targets:
                    if isinstance(target, ast.Attribute):
                        sets[target.attr] = stmt.lineno
        if "cudagraph_mode" in sets:
            return f"{path}:{sets['cudagraph_mode']}", "mode" in sets
    return None, False


def find_workarounds(package_dir: str) -> Workarounds:
    """What this vLLM's start-up code lets an operator set to skip or shrink the
    profiling allocation (``package_dir``: its ``vllm/`` folder)."""
    worker = os.path.join(package_dir, WORKER)
    parsed = parse_source(worker)
    if parsed is None:
        return Workarounds(
            [],
            None,
            None,
            f"cannot tell: no {WORKER} (vLLM's start-up code) under {package_dir}, "
            "so no setting is confirmed to skip the per-token cache",
        )
    tree, source = parsed
    func = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == ENTRY
        ),
        None,
    )
    call = None
    if func is not None:
        call = next(
            (
                n
                for n in ast.walk(func)
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == PROFILE_CALL
            ),
            None,
        )
    if func is None or call is None:
        return Workarounds(
            [],
            None,
            None,
            f"cannot tell: {worker} has no {ENTRY}() that calls {PROFILE_CALL}(), "
            "so no setting is confirmed to skip the per-token cache",
        )
    parents = _parents(func)
    guards = [n for n in ast.walk(func) if isinstance(n, ast.If) and _in_body(call, n, parents)]
    early_returns = [
        n
        for n in ast.walk(func)
        if isinstance(n, ast.If)
        and n.lineno < call.lineno
        and "kv_cache_memory_bytes" in _text(n.test, source)
        and any(isinstance(s, ast.Return) for s in n.body)
    ]
    try:
        with open(os.path.join(package_dir, ENGINE_ARGS), encoding="utf-8") as fh:
            args_text: str | None = fh.read()
    except (OSError, UnicodeDecodeError):
        args_text = None

    found: list[Workaround] = []
    if early_returns:
        found.append(
            Workaround(
                setting=f"{_flag(args_text, '--kv-cache-memory-bytes', 'kv_cache_memory_bytes')} BYTES",
                effect=f"{ENTRY}() returns before it profiles CUDA-graph memory",
                cost="you size the KV cache by hand; vLLM no longer fits it to gpu_memory_utilization",
                evidence=f"{worker}:{early_returns[0].lineno}",
            )
        )
    tests = [(_text(g.test, source), g.lineno) for g in guards]
    eager_line = next((line for text, line in tests if "enforce_eager" in text), None)
    graphs_line = next(
        (line for text, line in tests if "cudagraph_mode" in text and "NONE" in text), None
    )
    # Where enforce_eager sets cudagraph_mode to NONE, and whether it turns
    # torch.compile off there too (its cost either way).
    eager_sets, no_compile = _eager_sets_no_graphs(package_dir)
    eager_cost = (
        "no CUDA graphs and no torch.compile: slower decode"
        if no_compile
        else "no CUDA graphs: slower decode"
    )
    if eager_line is not None:
        found.append(
            Workaround(
                setting=_flag(args_text, "--enforce-eager", "enforce_eager"),
                effect=f"{PROFILE_CALL}() runs only without enforce_eager",
                cost=eager_cost,
                evidence=f"{worker}:{eager_line}",
            )
        )
    elif graphs_line is not None and eager_sets is not None:
        found.append(
            Workaround(
                setting=_flag(args_text, "--enforce-eager", "enforce_eager"),
                effect=f"sets cudagraph_mode to NONE ({eager_sets}), so {PROFILE_CALL}() is not called",
                cost=eager_cost,
                evidence=f"{worker}:{graphs_line}",
            )
        )
    if graphs_line is not None:
        cc = (
            "--compilation-config"
            if args_text is not None and '"--compilation-config"' in args_text
            else None
        )
        found.append(
            Workaround(
                setting=(
                    f"""{cc} '{{"cudagraph_mode": "NONE"}}'"""
                    if cc
                    else 'compilation_config={"cudagraph_mode": "NONE"} (engine argument)'
                ),
                effect=f"{PROFILE_CALL}() runs only when cudagraph_mode is not NONE",
                cost="no CUDA graphs: slower decode",
                evidence=f"{worker}:{graphs_line}",
            )
        )
    eager_above = _dispatch_without_graph_above_capture_size(package_dir)
    if eager_above is not None:
        found.append(
            Workaround(
                setting=f"{_flag(args_text, '--max-cudagraph-capture-size', 'max_cudagraph_capture_size')} N",
                effect="the profiling cache takes at most N blocks (the per-token count above is the capture size)",
                cost="batches of more than N tokens run without CUDA graphs",
                evidence=eager_above,
            )
        )
    # The condition verbatim: the step runs only there (on CUDA, say), which the
    # operator needs to know before changing anything.
    condition = tests[-1][0] if tests else None
    return Workarounds(
        found, condition, f"{worker}:{tests[-1][1]}" if tests else f"{worker}:{call.lineno}"
    )


def _dispatch_without_graph_above_capture_size(package_dir: str) -> str | None:
    """PATH:LINE where the dispatcher sends a batch with more tokens than the
    capture size to no CUDA graph (``num_tokens > ...max_cudagraph_capture_size``)."""
    path = os.path.join(package_dir, DISPATCHER)
    parsed = parse_source(path)
    if parsed is None:
        return None
    tree, source = parsed
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        test = _text(node.test, source)
        if re.search(r"num_tokens > (max_size|\S*max_cudagraph_capture_size)\b", test) and any(
            "NONE" in _text(s, source) for s in node.body if isinstance(s, ast.Return)
        ):
            return f"{path}:{node.lineno}"
    return None
