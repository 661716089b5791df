"""Rule reach, round 2 (issue 11): the node helpers in cgguard.static.rules.reach."""

from __future__ import annotations

import re
import textwrap

import libcst as cst
import pytest

from cgguard.static.rules import reach


def expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


@pytest.mark.parametrize(
    "text, kind",
    [
        ("self.max_num_reqs", reach.REQUESTS),
        ("vllm_config.scheduler_config.max_num_seqs", reach.REQUESTS),
        ("max_num_seqs * (1 + num_spec)", reach.REQUESTS),
        ("int(self.max_num_reqs) * 2", reach.REQUESTS),
        ("self.max_num_tokens", reach.TOKENS),
        ("self.scheduler_config.max_num_batched_tokens", reach.TOKENS),
        ("self.model_config.max_model_len // 2", reach.TOKENS),
        ("self.max_num_tokens // self.max_num_reqs", None),
        ("len(self.requests)", None),
        ("num_spec", None),
        ("16", None),
        ("self.sizes[0]", None),
    ],
)
def test_count_kind(text, kind):
    assert reach.count_kind(expr(text)) == kind


def test_count_kind_of_locals():
    local = {"reqs": reach.REQUESTS, "tokens": reach.TOKENS}.get
    assert reach.count_kind(expr("reqs * 2"), local) == reach.REQUESTS
    assert reach.count_kind(expr("tokens + 1"), local) == reach.TOKENS
    assert reach.count_kind(expr("tokens + reqs"), local) is None


def _pairs(code: str):
    stmt = cst.parse_statement(code).body[0]
    out = []
    for t in stmt.targets:
        for target, value in reach.unpack_pairs(t.target, stmt.value):
            out.append((cst.Module([]).code_for_node(target), None if value is None else cst.Module([]).code_for_node(value)))
    return out


def test_unpack_pairs():
    assert _pairs("a, b = x or 1, y") == [("a", "x or 1"), ("b", "y")]
    assert _pairs("(a, (b, c)) = (x, (y, z))") == [("a", "x"), ("b", "y"), ("c", "z")]
    assert _pairs("[a, b] = f()") == [("a", None), ("b", None)]
    assert _pairs("a, *b = x, y, z") == [("a", None), ("b", None)]
    assert _pairs("a = b = x") == [("a", "x"), ("b", "x")]


def test_with_first_arg_keeps_layout():
    call = expr("min(self.max_num_tokens, cap)")
    assert cst.Module([]).code_for_node(reach.with_first_arg(call, "self.max_num_reqs")) == (
        "min(self.max_num_reqs, self.max_num_tokens, cap)"
    )
    multi = expr("min(\n    self.max_num_tokens,\n    cap,\n)")
    assert cst.Module([]).code_for_node(reach.with_first_arg(multi, "self.max_num_reqs")) == (
        "min(\n    self.max_num_reqs,\n    self.max_num_tokens,\n    cap,\n)"
    )


def _facts(code: str):
    """The class facts of the first class in ``code``, from Python's tree and from libcst's
    (the fast path reads one, the full path the other: they must agree)."""
    import ast

    from cgguard.static.rules import classfacts

    source = textwrap.dedent(code).lstrip("\n")
    py = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef))
    lc = next(n for n in reach.nodes.walk(cst.parse_module(source)) if isinstance(n, cst.ClassDef))
    assert classfacts.of_ast(py) == classfacts.of_cst(lc)
    return classfacts.of_ast(py)


def _runner(name: str, code: str, aliases=None) -> bool:
    from cgguard.static.rules.classfacts import names_model_runner

    return names_model_runner(name, _facts(code).bases, aliases)


def test_model_runner_by_name_or_base():
    assert _runner("ForkGPUModelRunner", "class ForkGPUModelRunner:\n    pass\n")
    assert _runner(
        "AscendBackend", "class AscendBackend(\n    LoRAMixin,\n    gpu_model_runner.GPUModelRunner,\n):\n    x = 1\n"
    )
    assert _runner("B", "class B(CPUModelRunner, metaclass=ABCMeta):\n    pass\n")
    assert not _runner("ProfilingMixin", "class ProfilingMixin(WorkerBase):\n    pass\n")
    assert _facts("class C(Generic[T], a.b.CPUModelRunner):\n    pass\n").bases == ("Generic", "a.b.CPUModelRunner")
    assert _runner("Fork", "class Fork(Base):\n    pass\n", {"Base": "vllm.v1.worker.gpu_model_runner.GPUModelRunner"})
    assert not _runner("Fork", "class Fork(ModelRunner):\n    pass\n", {"ModelRunner": "pkg.ProfilingMixin"})


def test_body_declarations():
    facts = _facts(
        """
        class State:
            max_num_reqs: int
            other = 3  # comment

            def f(self):
                max_num_seqs = 4
                return max_num_seqs
        """
    )
    assert facts.attrs == frozenset({"max_num_reqs", "other"})
    assert _facts("class X: pass\n").attrs == frozenset()


def test_class_header_skips_decorators():
    facts = _facts(
        """
        @dataclass(frozen=True)
        class Limits(Base):
            max_num_reqs: int = 0
        """
    )
    assert facts.bases == ("Base",)
    assert facts.attrs == frozenset({"max_num_reqs"})


# ---- facts the regular expressions over the class's text got wrong -------------------------


def test_self_assignments_in_strings_and_comments_are_no_attributes():
    facts = _facts(
        """
        class Planner:
            HELP = "set self.max_num_reqs = 4 to bound it"

            def plan(self):
                # self.max_num_seqs = 2 was removed
                note = \"\"\"
                self.scheduler_config = None
                \"\"\"
                self.budget, self.rows = 1, 2
                self.cap: int = 8
                self.hint: int
                return note
        """
    )
    assert facts.attrs == frozenset({"HELP", "budget", "rows", "cap"})


def test_docstring_mention_is_no_declaration():
    facts = _facts(
        """
        class Planner:
            \"\"\"Plans the profiling cache.

            max_num_reqs: read from the scheduler, never stored here
            \"\"\"

            def plan(self):
                return 1
        """
    )
    assert "max_num_reqs" not in facts.attrs


def test_multiline_header_with_comments():
    code = """
        class ForkRunner(  # a fork of upstream's runner (see docs, section 3)
            LoRAMixin,  # adapters: first
            GPUModelRunner  # the upstream runner
        ):
            pass
        """
    assert _facts(code).bases == ("LoRAMixin", "GPUModelRunner")
    assert _runner("ForkRunner", code)
    # A runner named only in a comment of the header is no base.
    assert not _runner("Planner", "class Planner(  # not a GPUModelRunner\n    Base,\n):\n    pass\n")


def test_module_defs_resolve_and_references():
    module = cst.parse_module(
        textwrap.dedent(
            """
            def helper(vllm_config):
                return vllm_config.compilation_config.max_cudagraph_capture_size

            class Runner:
                def _cap(self):
                    return 1

                def use(self, helper=None):
                    a = self._cap()
                    b = helper(self.vllm_config)
                    c = other._cap()
                    return f(_cap=a)
            """
        )
    )
    defs = reach.ModuleDefs.of(module)
    assert set(defs.functions) == {"helper"}
    (runner,) = defs.classes
    assert set(defs.methods[id(runner)]) == {"_cap", "use"}
    calls = [n for n in reach.nodes.walk(module) if isinstance(n, cst.Call)]
    resolved = {cst.Module([]).code_for_node(c.func): defs.resolve(c, runner) for c in calls}
    assert resolved["self._cap"] is defs.methods[id(runner)]["_cap"]
    assert resolved["helper"] is defs.functions["helper"]
    assert resolved["other._cap"] is None
    refs = reach.references(module, {"_cap", "helper"})
    # self._cap, helper (the call), other._cap; not the defs, the parameter or the keyword
    assert sorted(cst.Module([]).code_for_node(r) for r in refs) == ["helper", "other._cap", "self._cap"]


def test_call_argument():
    module = cst.parse_module("class C:\n    def h(self, runner, k=1):\n        pass\n")
    (cls,) = reach.ModuleDefs.of(module).classes
    owner = reach.Owner(cls.body.body[0], cls)
    call = expr("self.h(r, k=2)")
    assert cst.Module([]).code_for_node(reach.call_argument(call, owner, "runner")) == "r"
    assert cst.Module([]).code_for_node(reach.call_argument(call, owner, "k")) == "2"
    fn = reach.Owner(cst.parse_module("def g(vllm_config):\n    pass\n").body[0], None)
    assert cst.Module([]).code_for_node(reach.call_argument(expr("g(cfg)"), fn, "vllm_config")) == "cfg"
    assert reach.call_argument(expr("g(*args)"), fn, "vllm_config") is None


# ---- end to end, on the rules (issue 11) ------------------------------------------------

from cgguard.static.driver.check import check_source  # noqa: E402
from cgguard.static.driver.run import fix_source_text  # noqa: E402
from cgguard.static.source.findings import SAFE, UNSAFE  # noqa: E402
from cgguard.static.workflow.ruledocs import get_rule  # noqa: E402


def _rule_case(code: str, name: str) -> str:
    (case,) = [c for c in get_rule(code).cases("flagged") if c.name == name]
    return case.source()


def test_no_request_count_in_the_class_gets_an_unsafe_self_max_num_reqs_fix():
    text = _rule_case("CGG001", "no_request_count_in_class")
    findings = check_source(text, "x.py")
    assert len(findings) == 2
    for f in findings:
        assert f.fix.applicability == UNSAFE
        assert f.message.endswith("` (unsafe fix)")
        assert "nothing shows that this class has `self.max_num_reqs`" in f.fix.description
    assert fix_source_text(text, "x.py").new_text == text
    fixed = fix_source_text(text, "x.py", unsafe=True).new_text
    # One call keeps its line; the other passes 88 columns and is laid out over lines.
    flat = re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", fixed))
    assert flat.count("min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)") == 2
    assert check_source(fixed, "x.py") == []


def test_a_runner_base_class_or_a_declaration_makes_the_fix_safe():
    base = (
        "class Backend(vllm.v1.worker.gpu_model_runner.GPUModelRunner):\n"
        "    def f(self):\n"
        "        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1\n"
        "        return min_blocks\n"
    )
    (finding,) = check_source(base, "x.py")
    assert finding.fix.applicability == SAFE
    declared = base.replace("(vllm.v1.worker.gpu_model_runner.GPUModelRunner)", "").replace(
        "    def f", "    max_num_reqs: int\n\n    def f"
    )
    (finding,) = check_source(declared, "x.py")
    assert finding.fix.applicability == SAFE
    bare = base.replace("(vllm.v1.worker.gpu_model_runner.GPUModelRunner)", "(WorkerBase)")
    (finding,) = check_source(bare, "x.py")
    assert finding.fix.applicability == UNSAFE


def test_helper_finding_moves_to_the_return_only_when_every_use_is_a_block_count():
    helper = (
        "class ForkModelRunner(GPUModelRunner):\n"
        "    def _cap(self):\n"
        "        return self.compilation_config.max_cudagraph_capture_size or 1\n"
        "\n"
        "    def init(self):\n"
        "        min_blocks = self._cap()\n"
        "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
    )
    (at_return,) = check_source(helper, "x.py")
    assert (at_return.line, at_return.code) == (3, "CGG001")
    assert at_return.message.startswith("`_cap()` counts one block per captured token")
    # A reference the flow does not follow (a callback) keeps the finding at the call.
    other_use = helper + "\n    def hooks(self):\n        return [self._cap]\n"
    (at_call,) = check_source(other_use, "x.py")
    assert at_call.line == 6
    assert at_call.message.startswith("`min_blocks` (via `_cap()`) counts one block per captured token")
    assert check_source(other_use, "x.py", fast=False) == [at_call]
    # Only token buffers: nothing.
    tokens = helper.replace("min_blocks = self._cap()", "tokens = self._cap()").replace(
        "num_gpu_blocks_override = min_blocks", "max_num_tokens = tokens"
    )
    assert check_source(tokens, "x.py") == []


def test_fast_path_equals_full_path_on_helper_flows_spread_over_functions():
    text = (
        "import torch\n\n\n"
        "def largest(vllm_config):\n"
        "    return vllm_config.compilation_config.max_cudagraph_capture_size\n\n\n"
        "def via(vllm_config):\n"
        "    return largest(vllm_config)\n\n\n"
        "class Worker:\n"
        "    def init(self, vllm_config):\n"
        "        self.cache_config.num_gpu_blocks_override = via(vllm_config) or 1\n"
    )
    fast = check_source(text, "x.py")
    assert fast == check_source(text, "x.py", fast=False)
    (finding,) = fast
    assert finding.line == 9  # at via()'s return: every use of via() is a block count
    fixed = fix_source_text(text, "x.py").new_text
    assert "return min(vllm_config.scheduler_config.max_num_seqs, largest(vllm_config)) or 1" in fixed


def test_rule_page_lists_the_new_cases():
    names = {c.name for c in get_rule("CGG001").cases()}
    assert {
        "min_with_token_count",
        "request_count_from_class",
        "no_request_count_in_class",
        "unpacking_and_chained_targets",
        "conditional_expressions",
        "helper_return",
        "helper_call_with_other_uses",
        "min_with_request_count",
        "helpers_feeding_token_buffers",
        "unpacking_and_conditionals",
    } <= names


# ---- a count stored in a dict that is splatted later -------------------------------

from cgguard.static.driver.check import check_source  # noqa: E402

_SPLAT = textwrap.dedent(
    """\
    def profiling_cache_config(vllm_config):
        overrides = {}
        overrides["num_gpu_blocks_override"] = vllm_config.compilation_config.max_cudagraph_capture_size{on_store}
        return replace(vllm_config.cache_config, **overrides){on_splat}
    """
)


def test_a_splatted_dict_key_belongs_to_the_statement_that_stored_it():
    """The finding, the lines its suppressions may sit on and the statement its fix lays
    out are where the count was put in the dict, not the later call that splats it."""
    plain = _SPLAT.replace("{on_store}", "").replace("{on_splat}", "")
    [finding] = check_source(plain, "plugin.py")
    assert (finding.line, finding.stmt_lines) == (3, (3, 3))
    fixed = fix_source_text(plain, "plugin.py").new_text
    assert '    overrides["num_gpu_blocks_override"] = (\n' in fixed  # the store, in ruff's layout
    assert all(len(line) <= 88 for line in fixed.splitlines())


def test_a_noqa_on_the_splat_does_not_hide_the_store(tmp_path):
    from tests.conftest import run_cgguard

    (tmp_path / "on_store.py").write_text(_SPLAT.replace("{on_store}", "  # noqa: CGG001").replace("{on_splat}", ""))
    (tmp_path / "on_splat.py").write_text(_SPLAT.replace("{on_store}", "").replace("{on_splat}", "  # noqa: CGG001"))
    result = run_cgguard("check", "--isolated", "on_store.py", "on_splat.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert [line.split(" ")[0] for line in result.stdout.splitlines() if " CGG001 " in line] == ["on_splat.py:3:44:"]
