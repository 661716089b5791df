"""The rules/ folder as data: each rule's documentation and example cases.

``rules/<CODE>/rule.md`` starts with a small front matter block (``key: value``
lines between ``---`` fences: code, name, summary, fix) followed by the page as ruff
writes one, on one screen (What it does / Why is this bad? / Example / Fix safety), then,
after the :data:`REFERENCE` line, the reference (every shape followed, what is silent, the
model table) that ``cgguard rule CODE --all`` adds. ``rules/<CODE>/cases/``
holds ``flagged/*.pycase`` (lines marked ``# expect: CODE``), their expected fixes
``flagged/*.fixed.pycase`` (absent when the fix must change nothing), and
``silent/*.pycase``. The tool, the docs and the tests all read these files,
through :meth:`RuleDoc.cases` only.

A folder in ``flagged/`` or ``silent/`` is a *project case* (:meth:`RuleDoc.project_cases`):
the folder is a project's root and holds its modules, each ``<module path>.pycase``
(``npu_plugin/limits.pycase`` is the module ``npu_plugin/limits.py``), with its expected
fix beside it as ``<module path>.fixed.pycase`` (absent when the fix must change the
module in no way) and its findings marked ``# expect: CODE`` as in single files. It is
written out as ``.py`` files under a ``pyproject.toml`` (a project root marker) and
checked with the real CLI: for flows that cross modules (a helper imported from
another file of the project), which one file cannot show. Tools that see one file
at a time (the Fixit rule) take the single-file cases only.

Cases are Python source stored under the ``.pycase`` suffix on purpose: many are
deliberately buggy, and a ``.py`` suffix would make them part of every installed
environment's Python files (a linter run over a virtual environment would report
cgguard's own examples).

Installed wheels carry the folder as ``cgguard/_rules``; a source checkout reads
``rules/`` beside the package.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

CASE_SUFFIX = ".pycase"
# What marks a line of a case that must hold a finding: ``# expect: CODE``.
EXPECT_MARK = re.compile(r"#\s*expect:\s*(CGG\d{3})")
# The line (an HTML comment: invisible where markdown is rendered) between a rule's page and
# its reference.
REFERENCE = "<!-- reference: "
FIXED_SUFFIX = ".fixed" + CASE_SUFFIX
CASE_KINDS = ("flagged", "silent")


def expected_findings(text: str) -> list[tuple[int, str]]:
    """(line, code) of each line of a case's text marked ``# expect: CODE``, in order."""
    return [
        (i, m.group(1))
        for i, line in enumerate(text.splitlines(), start=1)
        for m in [EXPECT_MARK.search(line)]
        if m
    ]


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
class CaseModule:
    """One module of a project case."""

    rel: str  # its path in the project, with the .py suffix, "/"-separated
    path: Path  # the .pycase file
    fixed_path: Path | None  # the expected fix; None when the module must not change

    def source(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def expected_fix(self) -> str:
        return (self.fixed_path or self.path).read_text(encoding="utf-8")


# Written at the root of a project case's copy: what makes a folder a project root.
PROJECT_MARKER = "pyproject.toml"


@dataclass(frozen=True)
class ProjectCase:
    """A case of several modules: a folder under ``cases/<kind>/`` that is a project root."""

    code: str
    kind: str  # "flagged" or "silent"
    name: str  # the folder's name
    folder: Path

    @property
    def id(self) -> str:
        return f"{self.code}/{self.kind}/{self.name}/"

    def modules(self) -> list[CaseModule]:
        """Every module of the project, sorted by path."""
        out = []
        for path in sorted(self.folder.rglob("*" + CASE_SUFFIX)):
            if path.name.endswith(FIXED_SUFFIX):
                continue
            rel = path.relative_to(self.folder).as_posix()[: -len(CASE_SUFFIX)]
            fixed = path.with_name(path.name[: -len(CASE_SUFFIX)] + FIXED_SUFFIX)
            out.append(CaseModule(rel + ".py", path, fixed if fixed.is_file() else None))
        return out

    def expected_findings(self) -> list[tuple[str, int, str]]:
        """(module path, line, code) of every line its modules mark ``# expect: CODE``, sorted."""
        return sorted(
            (m.rel, line, code)
            for m in self.modules()
            for line, code in expected_findings(m.source())
        )

    def write(self, dest: Path) -> Path:
        """Write the project as Python files under ``dest/<name>``; returns that root."""
        root = dest / self.name
        for module in self.modules():
            target = root / module.rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(module.source(), encoding="utf-8")
        (root / PROJECT_MARKER).write_text(
            f'# the root of rule case {self.id}\n[project]\nname = "{self.name}"\n',
            encoding="utf-8",
        )
        return root


@dataclass(frozen=True)
class RuleDoc:
    code: str
    name: str
    summary: str
    fix: str  # safe | unsafe | display-only | none
    body: str  # the markdown page
    folder: Path

    @property
    def page(self) -> str:
        """What ``cgguard rule CODE`` prints: the page before the reference."""
        return self.body.split("\n" + REFERENCE, 1)[0].rstrip("\n") + "\n"

    @property
    def reference(self) -> str:
        """What ``cgguard rule CODE --all`` adds (empty for a rule without one)."""
        parts = self.body.split("\n" + REFERENCE, 1)
        return parts[1].split("\n", 1)[1].strip("\n") + "\n" if len(parts) == 2 else ""

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

    def project_cases(self, kind: str | None = None) -> list[ProjectCase]:
        """The rule's project cases (folders), of one kind or all, sorted by kind then name."""
        out = []
        for k in CASE_KINDS if kind is None else (kind,):
            folder = self.folder / "cases" / k
            if folder.is_dir():
                out += [
                    ProjectCase(self.code, k, p.name, p)
                    for p in sorted(folder.iterdir())
                    if p.is_dir()
                ]
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


def _parse(folder: Path, page: str = "rule.md") -> RuleDoc:
    text = (folder / page).read_text(encoding="utf-8")
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


def workflow_rules() -> list[RuleDoc]:
    """Codes the workflow reports itself, outside the data flow's rules and without cases:
    CGG100 (:mod:`cgguard.static.driver.unusednoqa`). Their pages sit beside this module."""
    folder = Path(__file__).resolve().with_name("rulepages")
    return [_parse(folder, name) for name in sorted(os.listdir(folder)) if name.endswith(".md")]


def documented_rules() -> list[RuleDoc]:
    """Every code ``cgguard rule`` explains: the rules of rules/, then the workflow's."""
    return all_rules() + workflow_rules()


def get_rule(code: str) -> RuleDoc | None:
    for rule in documented_rules():
        if rule.code.upper() == code.upper():
            return rule
    return None
