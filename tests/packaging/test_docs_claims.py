"""The README's commands and the reference pages say what the tool does.

The README's console snippets are run as written on a copy of ``examples/`` beside this
repository's ``pyproject.toml``, and must print exactly what the README shows. The settings
reference in docs/configuration.md must name every key cgguard accepts and its real defaults.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

from cgguard.static.workflow import config
from tests.conftest import REPO, run_cgguard
from tests.workflow.conftest import readme_snippet

README = (REPO / "README.md").read_text(encoding="utf-8")
QUICK_START = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/cgguard check examples/fork_runner"


def _example_copy(tmp_path: Path) -> Path:
    """This repository's settings and example fork, with one clean module beside them."""
    root = tmp_path / "checkout"
    shutil.copytree(REPO / "examples", root / "examples")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "pkg").mkdir()
    (root / "pkg" / "clean.py").write_text("def f(x):\n    return x + 1\n")
    return root


def _console(snippet: str) -> list[tuple[list[str], str]]:
    """(cgguard arguments, expected output) for each ``$ cgguard ...`` line of a console block."""
    runs: list[tuple[list[str], str]] = []
    for line in snippet.splitlines(keepends=True):
        if line.startswith("$ "):
            words = shlex.split(line[2:])
            assert words[0] == "cgguard", line
            runs.append((words[1:], ""))
        else:
            args, out = runs[-1]
            runs[-1] = (args, out + line)
    return runs


def test_the_quick_start_installs_and_checks_the_example_and_ci_runs_the_test_command():
    blocks = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert QUICK_START in blocks
    assert (REPO / "examples" / "fork_runner").is_dir()
    assert "scripts/test" in blocks  # the command that sets up and runs every test
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == "exec scripts/test"


def test_the_readme_is_short_and_opens_with_install_check_and_fix():
    lines = README.splitlines()
    assert len(lines) <= 200
    first_screen = "\n".join(lines[:60])
    assert QUICK_START in first_screen
    assert "$ cgguard check examples/fork_runner" in first_screen
    assert "$ cgguard fix" in first_screen


def test_the_readme_check_and_fix_commands_print_what_it_shows(tmp_path):
    root = _example_copy(tmp_path)
    runs = _console(readme_snippet("example-check")) + _console(readme_snippet("example-fix"))
    assert [args[0] for args, _ in runs] == ["check", "fix", "fix"]
    codes = []
    for args, expected in runs:
        result = run_cgguard(*args, cwd=root)
        assert (result.stdout, result.stderr) == (expected, ""), args
        codes.append(result.returncode)
    # check and fix --diff exit 1 while the finding is on disk; fix leaves nothing, exit 0.
    assert codes == [1, 1, 0]
    assert run_cgguard("check", "examples/fork_runner", cwd=root).returncode == 0


def test_the_repository_settings_skip_the_example_unless_it_is_named(tmp_path):
    root = _example_copy(tmp_path)
    whole = run_cgguard("check", ".", cwd=root)
    assert (whole.returncode, whole.stdout) == (0, "No findings in 1 file checked.\n")
    assert run_cgguard("check", "examples/fork_runner", cwd=root).returncode == 1


def test_estimate_prints_the_readme_table_for_llama_3_8b(tmp_path):
    model = tmp_path / "Meta-Llama-3-8B"
    model.mkdir()
    # Meta-Llama-3-8B's shape, as its config.json gives it.
    shape = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "torch_dtype": "bfloat16",
    }
    (model / "config.json").write_text(json.dumps(shape))
    readme_lines = [b for b in re.findall(r"```sh\n(.*?)\n```", README, re.S) if "estimate" in b]
    [command] = [
        line for line in readme_lines[0].replace("\\\n", "").splitlines() if "estimate" in line
    ]
    words = shlex.split(command.split("#")[0])
    assert words[:3] == ["cgguard", "estimate", "~/models/Meta-Llama-3-8B"]
    result = run_cgguard("estimate", str(model), *words[3:], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert readme_snippet("estimate-table") in result.stdout


def _reference_rows() -> dict[str, list[str]]:
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = text[text.index("## Settings reference") :]
    section = section[: section.index("\n## ", 1)]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `"):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_the_settings_reference_names_every_key_and_the_default_excludes():
    rows = _reference_rows()
    assert sorted(rows) == sorted(config.KEYS)
    named = re.findall(r"`([^`]+)`", rows["exclude"][1])
    assert sorted(named) == sorted(config.DEFAULT_EXCLUDE)
    assert rows["unsafe-fixes"][1] == rows["force-exclude"][1] == "`false`"
    assert rows["respect-gitignore"][1] == "`true`"


def test_the_readmes_whole_tree_time_is_the_latest_benchmarks():
    # The README quotes the whole-tree row of the table docs/performance.md holds.
    said = re.search(
        r"all of vLLM's ([\d,]+) files took ([\d.]+ m?s) on two cores", " ".join(README.split())
    )
    assert said is not None
    performance = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    latest = performance[
        performance.index("<!-- latest:start") : performance.index("<!-- latest:end")
    ]
    row = re.search(
        r"\| cgguard check, whole tree \(default: CGGUARD_JOBS unset\) \| ([\d.]+) (ms|s) \|[^|]*\|[^|]*\|"
        r" \d+ \| (\d+) \|",
        latest,
    )
    assert row is not None
    # Quoted as the table prints it (505 ms, 1.17 s): rounding could hide a missed target.
    assert f"{row.group(1)} {row.group(2)}" == said.group(2)
    assert int(said.group(1).replace(",", "")) == int(row.group(3))
