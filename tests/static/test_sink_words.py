"""CGG001/CGG002's sink words are derived from the model's sinks, typed by the API they feed.

``mentions_sink_word`` decides, before any parse, whether a file may hold a sink: a file
naming a capture size but none of these words is parsed only where another module of its
project may complete a flow with it, and a file naming no capture size is read for an
imported count only where it names one. A name that merely looks like a block count (a
kernel's ``num_blocks=``, a ``*_blocks`` local) is no sink, so it is no sink word either.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cgguard.static.rules import model


def test_the_words_are_the_sinks_names() -> None:
    # the attribute whose store is the sink, and each builder whose parameter is one
    sinks = model.MODEL.param_sinks
    assert set(model.SINK_WORD_LIST) == model.MODEL.store_sinks | {s.callee for s in sinks}


# Every sink of the model names a sink word where it is reached: a store or keyword names
# the attribute, a parameter sink its callee (tests/static/test_cgg003.py holds CGG003's).
def test_every_sink_names_a_sink_word() -> None:
    sinks = model.MODEL.param_sinks
    forms = [
        form
        for name in model.MODEL.store_sinks
        for form in (f"cfg.{name} = n", f'setattr(cfg, "{name}", n)', f"replace(cfg, {name}=n)")
    ]
    forms += [f"kv_cache_utils.{s.callee}(vllm_config, groups, {s.param}=n)" for s in sinks]
    assert forms and all(model.mentions_sink_word(f) for f in forms), forms
    assert all(model.mentions_sink_word(f.encode()) for f in forms)


def test_a_name_that_looks_like_a_block_count_is_no_sink_word() -> None:
    for text in (
        "min_blocks = cap or 1",
        "kernel[grid](x, num_blocks=max_grid_blocks)",
        "profile_run(available_memory)",  # a parameter of no builder
        "kv_cache_config = make_config(min_blocks)",
    ):
        assert not model.mentions_sink_word(text), text
    # Names are compared as spelled: another case is another name.
    assert not model.mentions_sink_word("NUM_GPU_BLOCKS_OVERRIDE = 4")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*model.SINK_WORD_LIST, "é", "\udcff", "_", " ", "x"]), max_size=6))
def test_bytes_and_text_agree(parts: list[str]) -> None:
    text = "".join(parts)
    data = text.encode("utf-8", "surrogatepass")
    assert model.mentions_sink_word(data) == model.mentions_sink_word(text), repr(text)
