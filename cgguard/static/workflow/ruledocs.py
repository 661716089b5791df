"""The rules/ folder as data: each rule's documentation and example cases.

``rules/<CODE>/rule.md`` starts with a small front matter block (``key: value``
lines between ``---`` fences: code, name, summary, fix) followed by the page
(What it does / Why is this bad? / Example / Fix safety). ``rules/<CODE>/cases/``
holds ``flagged/*.pycase`` (lines marked ``# expect: CODE``), their expected fixes
``flagged/*.fixed.pycase`` (absent when the fix must change nothing), and
``silent/*.pycase``. The tool, the docs and the tests all read these files,
through :meth:`RuleDoc.cases` only.

Cases are Python source stored under the ``.pycase`` suffix on purpose: many are
deliberately buggy, and a ``.py`` suffix would make them part of every installed
environment's Python files (a linter run over a virtual environment would report
cgguard's own examples).

Installed wheels carry the folder as ``cgguard/_rules``; a source checkout reads
``rules/`` beside the package.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


CASE_SUFFIX = ".pycase"
FIXED_SUFFIX = ".fixed" + CASE_SUFFIX
CASE_KINDS = ("flagged", "silent")


@dataclass(frozen=True)
class RuleCase:
    """One example case: Python source the rule must flag (with its expected fix) or leave alone."""

    code: str
    kind: str  # "flagged" or "silent"
    name: str  # file name without the suffix
    path: Path
    fixed_path: Path | None  # the expected fix; None when the fix must change nothing

    @property
    def id(self) -> str:
        return f"{self.code}/{self.kind}/{self.name}"

    def source(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def expected_fix(self) -> str:
        """The text ``cgguard fix`` must produce (the source itself when nothing changes)."""
        return (self.fixed_path or self.path).read_text(encoding="utf-8")


@dataclass(frozen=True)
class RuleDoc:
    code: str
    name: str
    summary: str
    fix: str  # safe | unsafe | display-only | none
    body: str  # the markdown page
    folder: Path

    def cases(self, kind: str | None = None) -> list[RuleCase]:
        """The rule's example cases, of one kind or all, sorted by kind then name."""
        out = []
        for k in CASE_KINDS if kind is None else (kind,):
            folder = self.folder / "cases" / k
            if not folder.is_dir():
                continue
            for path in sorted(folder.iterdir()):
                name = path.name
                if not name.endswith(CASE_SUFFIX) or name.endswith(FIXED_SUFFIX):
                    continue
                stem = name[: -len(CASE_SUFFIX)]
                fixed = folder / (stem + FIXED_SUFFIX)
                out.append(RuleCase(self.code, k, stem, path, fixed if fixed.is_file() else None))
        return out


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
