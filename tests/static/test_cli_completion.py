"""Shell completion, as docs/linter.md says to turn it on: click's `_CGGUARD_COMPLETE`,
through the installed console script, and the bash script it prints sourced by a real bash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def _complete(words: str, cword: int) -> list[str]:
    result = subprocess.run(
        [str(BIN / "cgguard")], capture_output=True, text=True, timeout=120,
        env={**os.environ, "COMP_WORDS": words, "COMP_CWORD": str(cword),
             "_CGGUARD_COMPLETE": "bash_complete"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_completion_offers_commands_options_and_choices():
    assert _complete("cgguard ch", 1) == ["plain,check"]
    assert _complete("cgguard d", 1) == ["plain,doctor"]  # commands loaded on use are offered too
    assert _complete("cgguard check --sta", 2) == ["plain,--statistics"]
    assert _complete("cgguard check --format ", 3) == [
        "plain,text", "plain,full", "plain,json", "plain,sarif", "plain,github"]


def test_each_shells_script_is_printed():
    for shell, first in (("bash", "_cgguard_completion() {"), ("zsh", "#compdef cgguard"),
                         ("fish", "function _cgguard_completion;")):
        result = subprocess.run([str(BIN / "cgguard")], capture_output=True, text=True, timeout=120,
                                env={**os.environ, "_CGGUARD_COMPLETE": f"{shell}_source"})
        assert result.returncode == 0 and result.stdout.startswith(first), (shell, result.stdout[:80])


def test_the_bash_script_completes_in_bash():
    bash = shutil.which("bash")
    assert bash, "bash is needed to test the completion script it sources"
    script = (
        'eval "$(_CGGUARD_COMPLETE=bash_source cgguard)"\n'
        "COMP_WORDS=(cgguard fix --un); COMP_CWORD=2; _cgguard_completion cgguard\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    result = subprocess.run([bash, "--norc", "--noprofile", "-c", script], capture_output=True,
                            text=True, timeout=120,
                            env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["--unsafe-fixes"]
