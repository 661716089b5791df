"""The text tests that choose which functions the core walks: names are used whole, and a
class is used through the methods its name calls."""

from __future__ import annotations

from cgguard.static.core.program import _called_through, _holds_word


def test_a_name_is_used_whole():
    assert _holds_word("x = self.model(y)", "model")
    assert not _holds_word("x = self.model_config.y", "model")
    assert not _holds_word("submodel = 1", "model")
    assert _holds_word("model", "model")
    # A later whole use counts when an earlier one is part of a longer name.
    assert _holds_word("model_config = model", "model")


def test_a_class_word_ends_in_a_dot_and_is_followed_by_what_it_qualifies():
    assert _holds_word("n = GraphLimits.tokens(cfg)", "GraphLimits.")
    assert not _holds_word("n = MyGraphLimits.tokens(cfg)", "GraphLimits.")
    assert not _holds_word("n = GraphLimits(cfg)", "GraphLimits.")


def test_the_methods_a_text_calls_through_a_name():
    text = (
        "a = GraphLimits.tokens(cfg)\n"
        "b = GraphLimits.for_config (vllm_config)\n"
        "c = GraphLimits.NAME\n"
        "d = plugin.GraphLimits.other(x)\n"
        "e = MyGraphLimits.mine(x)\n"
    )
    assert _called_through(text, "GraphLimits") == {"tokens", "for_config"}
    assert _called_through("x = 1\n", "GraphLimits") == set()
