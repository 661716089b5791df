"""The README's GitHub Actions workflow: its cgguard step, run here, makes the SARIF it uploads."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import yaml

from tests.workflow.conftest import CGG001_SOURCE, CLEAN_SOURCE, GIT_ENV, git, git_init, readme_snippet, write
from tests.workflow.test_formats import _validate_sarif


def test_workflow_snippet_produces_valid_sarif_for_upload(tmp_path):
    workflow = yaml.safe_load(readme_snippet("github-actions"))
    job = workflow["jobs"]["cgguard"]
    assert job["permissions"]["security-events"] == "write"  # upload-sarif needs it
    steps = job["steps"]
    assert any("pip install" in s.get("run", "") and "cgguard" in s["run"] for s in steps)
    [check] = [s for s in steps if s.get("run", "").startswith("cgguard ")]
    [upload] = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert upload["if"] == "always()"  # uploads even when the check step fails the job

    repo = git_init(tmp_path / "checkout")
    write(repo, {"src/runner.py": CGG001_SOURCE, "src/ok.py": CLEAN_SOURCE})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "x")
    argv = shlex.split(check["run"])
    result = subprocess.run([sys.executable, "-m", "cgguard", *argv[1:]], cwd=repo, capture_output=True,
                            text=True, timeout=300, env={**os.environ, **GIT_ENV})
    assert result.returncode == 1, result.stderr  # findings fail the step
    sarif_file = repo / upload["with"]["sarif_file"]
    doc = json.loads(sarif_file.read_text())
    _validate_sarif(doc)
    [finding] = doc["runs"][0]["results"]
    assert finding["ruleId"] == "CGG001"
    assert finding["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/runner.py"
