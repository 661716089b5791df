"""The bound a fix writes is the rule's: the core asks the model's ``fix_bound`` and names none.

CGG001's request counts (a runner's ``max_num_reqs``, the config's ``max_num_seqs``, the
class's own) live in ``rules/requestbound.py``. The core hands it what the scope shows: the
source's receiver, a local holding a bound, the class and its bases.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from cgguard.static.core.analysis import Analysis
from cgguard.static.rules import model
from tests.conftest import REPO

CORE = REPO / "cgguard" / "static" / "core"

RUNNER = """\
class GPUModelRunner:
    def __init__(self, vllm_config):
        self.compilation_config = vllm_config.compilation_config
        self.max_num_reqs = 256

    def profile(self):
        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1
        get_profiling_kv_cache_config(self.vllm_config, self.kv_cache_spec, min_blocks)


def profile(vllm_config):
    n = vllm_config.compilation_config.max_cudagraph_capture_size or 1
    get_profiling_kv_cache_config(vllm_config, spec, num_blocks=n)
"""


def _requests(source_model, tmp_path: Path) -> dict[int, tuple[str | None, bool]]:
    path = tmp_path / "runner.py"
    path.write_text(RUNNER)
    program = Analysis(source_model)
    return {
        h.node.span.line: (h.request, h.guessed)
        for h in program.hits(program.add(str(path), RUNNER))
    }


def _strings(path: Path) -> set[str]:
    """The string constants of a module's code, its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    }


def test_cgg001_bounds_by_the_runners_and_the_configs_request_count(tmp_path):
    found = _requests(model.model(), tmp_path)
    assert found == {
        7: ("self.max_num_reqs", False),
        13: ("vllm_config.scheduler_config.max_num_seqs", False),
    }


def test_another_rules_bound_is_what_the_fix_writes(tmp_path):
    cgg001 = model.model()
    bound = dataclasses.replace(
        cgg001.fix_bound,
        runner_request="max_batch",
        config_request="limits.max_sequences",
        runner_classes=re.compile(r"Runner$"),
    )
    found = _requests(dataclasses.replace(cgg001, fix_bound=bound), tmp_path)
    assert found == {
        7: ("self.max_batch", False),
        13: ("vllm_config.limits.max_sequences", False),
    }


def test_a_rule_without_a_bound_gets_no_fix_text(tmp_path):
    found = _requests(
        dataclasses.replace(model.model(), fix_bound=lambda site: (None, False)), tmp_path
    )
    assert found == {7: (None, False), 13: (None, False)}


def test_the_core_names_no_bound_of_cgg001():
    bound = model.model().fix_bound
    names = {bound.runner_request, bound.config_request, bound.source_config}
    names |= bound.runner_names | bound.config_roots
    names |= {text for _, text in bound.class_requests} | {attr for attr, _ in bound.class_requests}
    for path in sorted(CORE.glob("*.py")):
        strings = _strings(path)
        assert not (strings & names), path.name
        assert not any("ModelRunner" in text for text in strings), path.name
