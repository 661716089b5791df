"""The rule page's model table is written from the model, and says what each field holds."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from cgguard.static.core.patterns import Model
from cgguard.static.rules import modeltable
from cgguard.static.rules.model import MODEL
from cgguard.static.workflow.ruledocs import get_rule
from tests.conftest import REPO

PAGE = REPO / "rules" / "CGG001" / "rule.md"


def test_every_field_of_the_model_has_a_row_and_no_row_names_a_field_it_lacks():
    fields = [name for name, _ in modeltable.rows(MODEL)]
    assert modeltable.undocumented(fields) == []
    assert sorted(modeltable.FIELD_DOCS) == sorted(fields)
    # Every field of the core's Model is there, the fix's bound field by field (the rule's).
    assert {name.split(".", 1)[0] for name in fields} == {f.name for f in dataclasses.fields(Model)}
    assert "fix_bound.runner_request" in fields


def test_a_field_without_a_row_is_an_error_not_a_missing_row(monkeypatch: pytest.MonkeyPatch):
    docs = dict(modeltable.FIELD_DOCS)
    del docs["setattr_calls"]
    monkeypatch.setattr(modeltable, "FIELD_DOCS", docs)
    with pytest.raises(ValueError, match="model fields without a row in FIELD_DOCS: setattr_calls"):
        modeltable.render()


def test_the_page_holds_the_table_written_from_the_model():
    page = PAGE.read_text(encoding="utf-8")
    assert modeltable.BEGIN in page and modeltable.END in page
    assert modeltable.with_table(page, modeltable.render()) == page
    # The rule's page as cgguard prints it holds the same rows.
    body = get_rule("CGG001").body
    for row in modeltable.render().splitlines():
        assert row in body


def test_each_row_shows_the_models_value():
    table = modeltable.render()
    rows = {
        line.split(" | ")[1].strip("`"): line for line in table.splitlines()[2:] if "| `" in line
    }
    assert "`num_gpu_blocks_override`" in rows["store_sinks"]
    assert "`setattr`" in rows["setattr_calls"] and "`replace`" in rows["replace_calls"]
    for name in sorted(MODEL.source_attrs):
        assert f"`{name}`" in rows["source_attrs"]
    # A pattern's "|" is escaped, so the table keeps its five columns.
    assert all(line.replace("\\|", "").count("|") == 6 for line in table.splitlines())
    assert table.splitlines()[-1].startswith("| not followed | | | ")


def test_write_rewrites_only_the_table_and_a_wrong_call_says_how_to_run_it(tmp_path):
    page = PAGE.read_text(encoding="utf-8")
    stale = modeltable.with_table(page, "| part | model field | value | what | cases |\n")
    assert modeltable.with_table(stale, modeltable.render()) == page
    with pytest.raises(ValueError, match="no model table markers"):
        modeltable.with_table("## The model\n", "")
    proc = subprocess.run(
        [sys.executable, "-m", "cgguard.static.rules.modeltable"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr == "usage: python -m cgguard.static.rules.modeltable --write\n"
