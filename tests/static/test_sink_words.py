"""The fast sink-word test is the model's pattern (``SINK_WORDS``), character for character.

``mentions_sink_word`` decides, before any parse, whether a file without a capture
size may still take one from an imported helper; it lowers bytes instead of running
the case-insensitive pattern. Where ``re`` folds a character other than an ASCII
letter onto one (``K``, ``ſ``, ``İ``, ``ı``), the pattern decides.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cgguard.static.rules import model

PIECES = [
    *model.SINK_WORD_LIST, "BLOCKS", "Blocks", "blockſ", "\u212av_cache_config", "prof\u0130l", "prof\u0131l",
    "minimal_kv_cach", "profi", "é", "\udcff", "_", " ", "\n", "available_", "memory", "KV_CACHE_CONFIG", "x",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=3)), max_size=8))
def test_text_agrees_with_the_pattern(parts: list[str]) -> None:
    text = "".join(parts)
    assert model.mentions_sink_word(text) == (model.SINK_WORDS.search(text) is not None), repr(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=3)), max_size=8))
def test_bytes_never_miss_what_their_text_mentions(parts: list[str]) -> None:
    text = "".join(parts)
    data = text.encode("utf-8", "surrogatepass")
    if model.SINK_WORDS.search(text) is not None:
        assert model.mentions_sink_word(data), repr(text)


def test_folded_characters() -> None:
    assert model.mentions_sink_word("make_minimal_\u212aV_cache(x)")  # Kelvin sign: re folds it to k
    assert model.mentions_sink_word("num_blockſ")
    assert not model.mentions_sink_word("num_bl\u00f6cks")
    assert model.mentions_sink_word("make_minimal_\u212aV_cache(x)".encode())


# Every sink of the model names a sink word: a file that names none cannot hold one (the
# driver does not walk a file whose count could reach no sink).
def test_every_sink_names_a_sink_word() -> None:
    sinks = model.MODEL.param_sinks
    names = model.MODEL.store_sinks | {s.callee for s in sinks} | {s.param for s in sinks}
    assert names and all(model.mentions_sink_word(n) for n in names), names


@settings(max_examples=200, deadline=None)
@given(st.from_regex(model.MODEL.placement_names, fullmatch=True))
def test_every_placement_name_names_a_sink_word(name: str) -> None:
    # a local the finding is placed at holds a count on its way to a sink: its file names one
    assert model.mentions_sink_word(name), repr(name)
