"""Fix safety, messages and request-count choice, beyond what the rule cases show."""

from __future__ import annotations

import ast
import difflib

from cgguard.shared.bound import bound_source, profiling_block_bound
from cgguard.static.driver.check import check_source
from cgguard.static.driver.run import fix_source_text
from cgguard.static.source.findings import DISPLAY_ONLY, UNSAFE
from cgguard.static.workflow.ruledocs import get_rule


def _case(code: str, name: str) -> str:
    (case,) = [c for c in get_rule(code).cases("flagged") if c.name == name.removesuffix(".py")]
    return case.source()


def test_no_request_count_in_scope_says_which_expression_to_use():
    (finding,) = check_source(_case("CGG001", "no_request_count_in_scope.py"), "x.py")
    assert finding.fix is None
    assert finding.message.endswith("use `min(<max_num_reqs>, ...) or 1` (no request count in scope)")


def test_capture_size_that_may_be_none_gets_an_unsafe_fix_applied_only_on_request():
    text = _case("CGG001", "capture_size_may_be_none.py")
    (finding,) = check_source(text, "x.py")
    assert finding.fix.applicability == UNSAFE
    assert "None" in finding.fix.description
    assert fix_source_text(text, "x.py").new_text == text
    fixed = fix_source_text(text, "x.py", unsafe=True).new_text
    assert "min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)" in fixed
    assert check_source(fixed, "x.py") == []


def test_cgg002_is_display_only_with_the_bounded_suggestion():
    text = _case("CGG002", "max_with_request_count.py")
    first, second = check_source(text, "x.py")
    assert first.code == second.code == "CGG002"
    assert first.fix.applicability == DISPLAY_ONLY
    assert "min(self.max_num_reqs, <capture size>) or 1" in first.message
    assert "min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size) or 1" in first.fix.description
    assert "max(16, vllm_config" not in second.message
    assert "min(vllm_config.scheduler_config.max_num_seqs" in second.message
    assert fix_source_text(text, "x.py").new_text == text


def test_fix_changes_only_the_statements_it_fixes():
    text = _case("CGG001", "walrus_and_try_finally.py")
    fixed = fix_source_text(text, "x.py").new_text
    # The `if` header (laid out anew: it would pass 88 columns) and the count's own
    # line inside the parenthesized assignment change; every other line, comments
    # included, stays byte for byte.
    diff = difflib.SequenceMatcher(a=text.splitlines(True), b=fixed.splitlines(True), autojunk=False)
    changed = [i + 1 for tag, i1, i2, _, _ in diff.get_opcodes() if tag != "equal" for i in range(i1, i2)]
    assert changed == [3, 11]
    assert "                or 1  # at least one block\n" in fixed


def test_fix_adds_parentheses_where_precedence_needs_them():
    # build() hands its budget to vLLM's builder: the sink, so the finding is its argument.
    helper = "def build(available_memory):\n    return get_kv_cache_config_from_groups(None, [], available_memory)\n\n\n"
    text = helper + (
        "class FooModelRunner:\n"
        "    def f(self, p):\n"
        "        cc = self.compilation_config\n"
        "        build(available_memory=cc.max_capture_size * p)\n"
        "\n"
        "    def g(self, page_size):\n"
        "        return build(available_memory=self.compilation_config.max_cudagraph_capture_size * page_size)\n"
    )
    fixed = fix_source_text(text, "x.py").new_text
    # Within 88 columns the count is rewritten in place; past them the statement
    # takes ruff format's layout, the parentheses kept.
    assert fixed == helper + (
        "class FooModelRunner:\n"
        "    def f(self, p):\n"
        "        cc = self.compilation_config\n"
        "        build(available_memory=(min(self.max_num_reqs, cc.max_capture_size) or 1) * p)\n"
        "\n"
        "    def g(self, page_size):\n"
        "        return build(\n"
        "            available_memory=(\n"
        "                min(\n"
        "                    self.max_num_reqs,\n"
        "                    self.compilation_config.max_cudagraph_capture_size,\n"
        "                )\n"
        "                or 1\n"
        "            )\n"
        "            * page_size\n"
        "        )\n"
    )
    ast.parse(fixed)


def test_fix_uses_the_files_own_line_endings_and_tabs_when_wrapping():
    text = (
        "class FooModelRunner:\r\n"
        "\tdef f(self):\r\n"
        "\t\tmin_blocks = self.compilation_config.max_cudagraph_capture_size or 1\r\n"
        "\t\tself.cache_config.num_gpu_blocks_override = min_blocks\r\n"
    )
    fixed = fix_source_text(text, "x.py").new_text
    assert fixed == (
        "class FooModelRunner:\r\n"
        "\tdef f(self):\r\n"
        "\t\tmin_blocks = (\r\n"
        "\t\t\tmin(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)\r\n"
        "\t\t\tor 1\r\n"
        "\t\t)\r\n"
        "\t\tself.cache_config.num_gpu_blocks_override = min_blocks\r\n"
    )


def test_the_fix_and_the_runtime_bound_are_the_same_formula():
    src = bound_source("max_num_reqs", "max_cudagraph_capture_size")
    for reqs, cap in [(4, 512), (256, 8192), (512, 8), (0, 512), (4, 0), (4, None)]:
        expected = eval(src.replace("max_cudagraph_capture_size", "(max_cudagraph_capture_size or 0)"),
                        {"max_num_reqs": reqs, "max_cudagraph_capture_size": cap})
        assert profiling_block_bound(reqs, cap) == expected
    assert profiling_block_bound(4, 512) == 4
    assert profiling_block_bound(256, 8192) == 256


def test_message_names_the_fallback_without_comments_between_operands():
    text = _case("CGG001", "walrus_and_try_finally.py")
    second = check_source(text, "x.py")[1]
    assert second.message.endswith("use `min(self.max_num_reqs, ...) or 1`")
    assert second.fix.description.endswith(
        "min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size) or 1"
    )
    assert "#" not in second.message + second.fix.description
