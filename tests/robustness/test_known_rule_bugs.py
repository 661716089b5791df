"""Bugs found by the robustness work in code this area does not own (edits.py,
messages). Each test states the right behaviour and is marked strict xfail, so it
fails loudly (XPASS) once fixed and the mark must go. The safety net already keeps
them harmless: the broken fix is never written and the run reports it.
"""

from __future__ import annotations

import ast

import pytest

from cgguard.static.run import fix_source_text

PARENTHESISED = '''\
class MyForkModelRunner(GPUModelRunner):
    def _init_minimal_kv_cache_for_profiling(self):
        min_blocks = (self.compilation_config.max_cudagraph_capture_size) or 1
        self.cache_config.num_gpu_blocks_override = min_blocks
'''


def test_parenthesised_capture_size_is_refused_by_the_safety_net_today():
    # What happens now: edits.py builds a fix that does not parse; nothing is lost.
    result = fix_source_text(PARENTHESISED, "runner.py")
    assert not result.changed and result.new_text == PARENTHESISED
    assert result.error is not None and "would not parse" in result.error.reason
    assert [f.code for f in result.findings] == ["CGG001"]


@pytest.mark.xfail(strict=True, reason=(
    "edits.py build_fix: for `(CAP) or K` the fallback is cut from the BoolOp's source by "
    "len(target_src), which ignores the parentheses, giving fallback 'e) or 1' and an "
    "unparsable multi-line fix"))
def test_parenthesised_capture_size_is_fixed():
    result = fix_source_text(PARENTHESISED, "runner.py")
    assert result.error is None
    ast.parse(result.new_text)
    assert "min(self.max_num_reqs, (self.compilation_config.max_cudagraph_capture_size))" in result.new_text \
        or "min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)" in result.new_text
    assert "or 1" in result.new_text and "e) or 1" not in result.new_text


@pytest.mark.xfail(strict=True, reason=(
    "messages: the finding message quotes the whole fallback expression, so a long "
    "`CAP or 1 or 1 ...` chain gives a single message line of hundreds of kilobytes"))
def test_finding_message_stays_one_readable_line():
    text = ("class R(GPUModelRunner):\n    def f(self):\n        min_blocks = "
            "self.compilation_config.max_cudagraph_capture_size" + " or 1" * 20_000 + "\n")
    result = fix_source_text(text, "runner.py")
    assert result.findings
    assert all(len(f.message) < 2_000 for f in result.findings)
