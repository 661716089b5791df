"""Packaging tells the truth: the license ships, the version is in the changelog, and the
README's install lines and snippets work as written from this repository.

The sdist and the wheel are built by hatchling (the build backend pyproject.toml names) from
a copy of the working tree as git would commit it, as `pip install .` or a release would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tests.conftest import REPO
from tests.workflow.conftest import git, git_env, git_init, readme_snippet
from tests.workflow.test_precommit import _copy_of_this_tree

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]


def test_license_file_is_the_apache_2_text_the_metadata_names():
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_changelog_names_the_version_in_pyproject():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## (\d+\.\d+\.\d+\S*)", text, re.M)
    assert versions, "CHANGELOG.md has no version heading"
    assert versions[0] == VERSION  # the newest entry is the version being built
    import cgguard

    assert cgguard.__version__ == VERSION


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(sdist, wheel) built by hatchling's PEP 517 hooks from a committed copy of the tree."""
    base = tmp_path_factory.mktemp("build")
    src = base / "src"
    _copy_of_this_tree(src)
    out = base / "dist"
    out.mkdir()
    code = (
        "import sys, hatchling.build as b; "
        "print(b.build_sdist(sys.argv[1])); print(b.build_wheel(sys.argv[1]))"
    )
    result = subprocess.run([sys.executable, "-c", code, str(out)], cwd=src, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    sdist_name, wheel_name = result.stdout.split()
    return out / sdist_name, out / wheel_name


def test_sdist_ships_license_and_changelog(built):
    sdist, _ = built
    with tarfile.open(sdist) as tar:
        names = set(tar.getnames())
    root = f"cgguard-{VERSION}"
    assert f"{root}/LICENSE" in names
    assert f"{root}/CHANGELOG.md" in names
    assert f"{root}/README.md" in names


def test_wheel_ships_license_and_declares_it(built):
    _, wheel = built
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        meta = whl.read(f"cgguard-{VERSION}.dist-info/METADATA").decode()
        license_members = [n for n in names if n.startswith(f"cgguard-{VERSION}.dist-info/licenses/")]
        assert license_members == [f"cgguard-{VERSION}.dist-info/licenses/LICENSE"]
        assert whl.read(license_members[0]) == (REPO / "LICENSE").read_bytes()
    assert "License-Expression: Apache-2.0" in meta
    assert "License-File: LICENSE" in meta
    assert f"Version: {VERSION}" in meta


def _snippet_refs() -> list[str]:
    """Every git ref the README's install snippets pin (`rev:` and `git+URL@ref`)."""
    refs = []
    for name in ("pre-commit", "github-actions", "pip-git"):
        snippet = readme_snippet(name)
        refs += re.findall(r"^\s*rev:\s*(\S+)", snippet, re.M)
        refs += re.findall(r"git\+[^@\s\"]+@([^\s\"#]+)", snippet)
    return refs


def test_snippets_pin_no_tag_that_does_not_exist():
    refs = _snippet_refs()
    assert refs, "the snippets pin nothing: the test would prove nothing"
    for ref in refs:
        if ref == "CGGUARD_REV":  # a placeholder the README tells the reader to replace
            continue
        found = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "-q", f"{ref}^{{commit}}"],
                               capture_output=True, env=git_env())
        assert found.returncode == 0, f"README pins {ref!r}, which this repository does not have"


def test_readme_never_tells_to_install_from_an_index():
    pages = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        # `pip install cgguard` (bare name) would look the package up on an index, where it is not.
        assert not re.search(r"pip install (?:-\S+ )*cgguard(?![\w.@ ]*@)(?:\s|`|$)", text), page.name


def test_install_from_git_url_as_the_readme_writes_it(tmp_path):
    """The pip-git snippet, with the placeholders filled in, installs a working cgguard."""
    source = tmp_path / "cgguard-src"
    rev = _copy_of_this_tree(source)
    [line] = readme_snippet("pip-git").strip().splitlines()
    line = line.replace("CGGUARD_REPO_URL", source.as_uri()).replace("CGGUARD_REV", rev)
    assert line.startswith("pip install ")
    spec = re.fullmatch(r'pip install "(.+)"', line).group(1)
    target = tmp_path / "site"
    # --no-deps / --target: install into a folder of this test, beside the test venv's own
    # click and libcst; --no-build-isolation: hatchling comes from the test extras.
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(target), spec],
        capture_output=True, text=True, timeout=600, env={**git_env(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert result.returncode == 0, result.stderr
    version = subprocess.run([sys.executable, "-m", "cgguard", "--version"], cwd=tmp_path,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(target)})
    assert version.returncode == 0, version.stderr
    assert VERSION in version.stdout
    # The installed copy is the one that ran, not the checkout's.
    where = subprocess.run([sys.executable, "-c", "import cgguard; print(cgguard.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(target)})
    assert where.stdout.strip().startswith(str(target))
    assert (target / "cgguard" / "_rules" / "CGG001" / "rule.md").is_file()
