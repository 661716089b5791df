"""docs/architecture.md starts a reader at a rule's configuration: the code it quotes is the
code as it is (each block appears verbatim in the file the page names for it)."""

from __future__ import annotations

import re

from tests.conftest import REPO

DOC = REPO / "docs" / "architecture.md"


def _start_here() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split("### Start here: a rule is a configuration", 1)[1].split("\n### ", 1)[0]


def test_the_quoted_configuration_and_model_are_the_code():
    section = _start_here()
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    sources = re.findall(r"`(cgguard/static/rules/[\w/]+\.py)`", section)
    assert len(blocks) == 2
    assert sources[:2] == ["cgguard/static/rules/configs.py", "cgguard/static/rules/cgg003.py"]
    for block, source in zip(blocks, sources, strict=False):
        assert block in (REPO / source).read_text(encoding="utf-8"), source


def test_the_names_it_explains_are_the_models_fields():
    from cgguard.static.rules import cgg003

    model = cgg003.model()
    assert (
        "max_num_tokens" in cgg003.SOURCE_ATTRS and "max_num_batched_tokens" in cgg003.SOURCE_ATTRS
    )
    assert model.source_attrs == cgg003.SOURCE_ATTRS
    assert model.bound_counts == cgg003.BOUNDS
    assert {s.param for s in model.param_sinks} >= {"seq_len", "batch_size"}
    assert model.compare_sinks == cgg003.COMPARE_SINKS
    # A count from no source: the page names the labels' values.
    assert model.bound_label == cgg003.BOUND_LABEL == "requests or one sequence's length"
    assert model.unbounded_label == cgg003.UNBOUNDED_LABEL == "tokens"
    assert f'("{cgg003.BOUND_LABEL}", its `bound_label`)' in _start_here()
