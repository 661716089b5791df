"""Each configuration's sink words are derived from its model's sinks, typed by the API they feed.

``mentions_sink_word`` decides, before any parse, whether a file may hold a sink: a file
naming a source but none of these words is parsed only where another module of its project
may complete a flow with it, and a file naming no source is read for an imported count only
where it names one. A name that merely looks like a block count (a kernel's ``num_blocks=``,
a ``*_blocks`` local) is no sink, so it is no sink word either.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS, CONFIGURATIONS, Configuration

IDS = [c.name for c in CONFIGURATIONS]


@pytest.mark.parametrize("configuration", CONFIGURATIONS, ids=IDS)
def test_the_words_are_the_sinks_names(configuration: Configuration) -> None:
    # the stored and compared names, anywhere; each callee whose parameter is a sink, called
    model = configuration.model()
    assert set(configuration.sink_names) == model.store_sinks | model.compare_sinks
    assert set(configuration.sink_callees) == {s.callee for s in model.param_sinks}


# Every sink of a model names a sink word where it is reached: a store, a keyword or a
# comparison names the attribute or count, a parameter sink its callee.
@pytest.mark.parametrize("configuration", CONFIGURATIONS, ids=IDS)
def test_every_sink_names_a_sink_word(configuration: Configuration) -> None:
    model = configuration.model()
    forms = [
        form
        for name in model.store_sinks
        for form in (f"cfg.{name} = n", f'setattr(cfg, "{name}", n)', f"replace(cfg, {name}=n)")
    ]
    forms += [f"if cap > self.{name}:" for name in model.compare_sinks]
    forms += [f"x = builder.{s.callee}(cfg, {s.param}=n)" for s in model.param_sinks]
    assert forms and all(configuration.mentions_sink_word(f) for f in forms), forms
    assert all(configuration.mentions_sink_word(f.encode()) for f in forms)


def test_a_name_that_looks_like_a_block_count_is_no_sink_word() -> None:
    for text in (
        "min_blocks = cap or 1",
        "kernel[grid](x, num_blocks=max_grid_blocks)",
        "profile_run(available_memory)",  # a parameter of no builder
        "kv_cache_config = make_config(min_blocks)",
        # where a builder is defined, not called
        "def get_kv_cache_config_from_groups(vllm_config, groups, available_memory):",
        "    async def get_profiling_kv_cache_config(\n        self, spec, min_blocks",
    ):
        assert not CAPTURE_SIZE_BLOCKS.mentions_sink_word(text), text
    # Names are compared as spelled: another case is another name.
    assert not CAPTURE_SIZE_BLOCKS.mentions_sink_word("NUM_GPU_BLOCKS_OVERRIDE = 4")
    assert CAPTURE_SIZE_BLOCKS.mentions_sink_word("cfg = get_kv_cache_config_from_groups(c, g, m)")


WORDS = sorted({w for c in CONFIGURATIONS for w in c.sink_words})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*WORDS, "def ", "é", "\udcff", "_", " ", "\n", "x"]), max_size=6))
def test_bytes_and_text_agree(parts: list[str]) -> None:
    text = "".join(parts)
    data = text.encode("utf-8", "surrogatepass")
    for configuration in CONFIGURATIONS:
        assert configuration.mentions_sink_word(data) == configuration.mentions_sink_word(text)
