"""The documentation's links lead somewhere: every relative link in the README, CONTRIBUTING.md,
CHANGELOG.md, docs/*.md, benchmarks/README.md and rules/*/rule.md names a file or folder of the
repository, and every ``#anchor`` names a heading of the page it points to. A snippet shown on
several pages is the same on each, so the test that runs one copy holds them all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO


def doc_pages() -> list[Path]:
    pages = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md"]
    pages += sorted((REPO / "docs").glob("*.md"))
    pages += sorted((REPO / "rules").glob("*/rule.md"))
    pages.append(REPO / "benchmarks" / "README.md")
    return pages


_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_INLINE_CODE = re.compile(r"`+[^`\n]*`+")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _outside_fences(text: str) -> str:
    return _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _prose(text: str) -> str:
    """The text outside fenced blocks, with inline code blanked (a link there is not a link)."""
    return _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), _outside_fences(text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor, with GitHub's -1, -2 ... for repeated headings."""
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_outside_fences(text)):
        base = slug(heading)
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def broken_links(page: Path, text: str) -> list[str]:
    """One line per link of ``text`` (the content of ``page``) that leads nowhere."""
    problems = []
    for target in _LINK.findall(_prose(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not ours to check
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            problems.append(f"{page.relative_to(REPO)}: {target}: no such file")
            continue
        if not dest.resolve().is_relative_to(REPO):
            problems.append(f"{page.relative_to(REPO)}: {target}: outside the repository")
            continue
        if anchor:
            if dest.suffix != ".md" or dest.is_dir():
                problems.append(f"{page.relative_to(REPO)}: {target}: an anchor into a non-page")
            elif anchor not in anchors(dest.read_text(encoding="utf-8")):
                problems.append(f"{page.relative_to(REPO)}: {target}: no heading with that anchor")
    return problems


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_leads_to_a_file_and_heading_of_the_repository(page):
    assert page.is_file(), f"{page.relative_to(REPO)} is missing"
    assert broken_links(page, page.read_text(encoding="utf-8")) == []


def test_the_checker_finds_a_missing_file_a_missing_heading_and_ignores_code(tmp_path):
    page = REPO / "docs" / "linter.md"
    text = (
        "# Title\n\n## Exit codes\n\n"
        "[ok](configuration.md#settings-reference) [self](#exit-codes) [up](../README.md)\n"
        "[gone](nowhere.md) [no heading](configuration.md#no-such-heading) [web](https://example.org/x)\n"
        "`[in code](nowhere-either.md)`\n\n```md\n[in a block](also-nowhere.md)\n```\n"
    )
    assert broken_links(page, text) == [
        "docs/linter.md: nowhere.md: no such file",
        "docs/linter.md: configuration.md#no-such-heading: no heading with that anchor",
    ]


def test_slugs_follow_github():
    assert slug("Exit codes") == "exit-codes"
    assert slug("The rules' cases are the tests") == "the-rules-cases-are-the-tests"
    assert (
        slug("The linter: `cgguard check` and `cgguard fix`")
        == "the-linter-cgguard-check-and-cgguard-fix"
    )
    assert anchors("# A\n\n## A\n\n```\n# not a heading\n```\n") == {"a", "a-1"}


def test_every_docs_page_is_linked_from_the_readme():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = {
        (REPO / target.partition("#")[0]).resolve() for target in _LINK.findall(_prose(readme))
    }
    pages = set(sorted((REPO / "docs").glob("*.md"))) | {
        REPO / "CONTRIBUTING.md",
        REPO / "CHANGELOG.md",
    }
    assert sorted(str(p.relative_to(REPO)) for p in pages - linked) == []


_SNIPPET = re.compile(r"<!-- snippet: ([\w-]+) -->\n```[a-z]*\n(.*?)\n```", re.S)


def test_a_snippet_shown_on_several_pages_is_the_same_on_each():
    copies: dict[str, dict[str, str]] = {}
    for page in doc_pages():
        for name, body in _SNIPPET.findall(page.read_text(encoding="utf-8")):
            where = str(page.relative_to(REPO))
            assert where not in copies.get(name, {}), f"{where} shows snippet {name!r} twice"
            copies.setdefault(name, {})[where] = body
    assert {"pre-commit", "github-actions"} <= {n for n, pages in copies.items() if len(pages) > 1}
    for name, pages in copies.items():
        assert len(set(pages.values())) == 1, f"snippet {name!r} differs between {sorted(pages)}"


_CITATION = re.compile(r"docs/([\w-]+\.md)(?:,\s*\"([^\"\n]+)\")?")


def _code_files() -> list[Path]:
    """The repository's code, scripts and tests: where a comment may cite a docs page."""
    files = []
    for folder in ("cgguard", "scripts", "tests", "benchmarks", ".ci"):
        for path in sorted((REPO / folder).rglob("*")):
            skipped = ".work" in path.parts or "__pycache__" in path.parts
            if (
                path.is_file()
                and not skipped
                and path.suffix in {".py", ".yml", ".yaml", ".toml", ""}
            ):
                files.append(path)
    return files


def test_code_that_cites_a_docs_page_names_a_page_and_heading_that_exist():
    cited = 0
    for path in _code_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for page, heading in _CITATION.findall(text):
            where = f"{path.relative_to(REPO)} cites docs/{page}"
            if path.name == "test_docs_links.py":  # this file's own examples
                continue
            assert (REPO / "docs" / page).is_file(), f"{where}, which does not exist"
            if heading:
                cited += 1
                headings = {
                    slug(h)
                    for h in _HEADING.findall(
                        _outside_fences((REPO / "docs" / page).read_text(encoding="utf-8"))
                    )
                }
                assert slug(heading) in headings, f'{where}, "{heading}": no such heading'
    assert cited, "no code cites a docs heading: the test would prove nothing"
