"""The rules/ folder as data: each rule's documentation and example cases.

``rules/<CODE>/rule.md`` starts with a small front matter block (``key: value``
lines between ``---`` fences: code, name, summary, fix) followed by the page
(What it does / Why is this bad? / Example / Fix safety). ``rules/<CODE>/cases/``
holds ``flagged/*.py`` (lines marked ``# expect: CODE``), their expected fixes
``flagged/*.fixed.py`` (absent when the fix must change nothing), and
``silent/*.py``. The tool, the docs and the tests all read these files.

Installed wheels carry the folder as ``cgguard/_rules``; a source checkout reads
``rules/`` beside the package.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RuleDoc:
    code: str
    name: str
    summary: str
    fix: str  # safe | unsafe | display-only | none
    body: str  # the markdown page
    folder: Path


def rules_dir() -> Path:
    here = Path(__file__).resolve().parents[2]  # the cgguard package
    packaged = here / "_rules"
    if packaged.is_dir():
        return packaged
    checkout = here.parent / "rules"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError("cgguard's rules folder is missing from this installation")


def _parse(folder: Path) -> RuleDoc:
    text = (folder / "rule.md").read_text(encoding="utf-8")
    meta: dict[str, str] = {}
    body = text
    if text.startswith("---\n"):
        head, _, body = text[4:].partition("\n---\n")
        for line in head.splitlines():
            key, _, value = line.partition(":")
            meta[key.strip()] = value.strip()
    return RuleDoc(
        code=meta.get("code", folder.name),
        name=meta.get("name", ""),
        summary=meta.get("summary", ""),
        fix=meta.get("fix", "none"),
        body=body.strip() + "\n",
        folder=folder,
    )


def all_rules() -> list[RuleDoc]:
    root = rules_dir()
    return [_parse(root / d) for d in sorted(os.listdir(root)) if (root / d / "rule.md").is_file()]


def get_rule(code: str) -> RuleDoc | None:
    for rule in all_rules():
        if rule.code.upper() == code.upper():
            return rule
    return None
