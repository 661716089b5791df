"""The per-project index (helpers imported from other modules) is built only where a flow can be."""

from __future__ import annotations

from pathlib import Path

from cgguard.static.driver import projectindex
from cgguard.static.driver.projectroot import project_root
from cgguard.static.driver.run import check_paths

HELPER = "def profiling_num_blocks(vllm_config):\n    return vllm_config.compilation_config.max_cudagraph_capture_size or 1\n"
RUNNER = (
    "from plugin.limits import profiling_num_blocks\n\n\n"
    "class NPUModelRunner(GPUModelRunner):\n"
    "    def _init_minimal_kv_cache_for_profiling(self):\n"
    "        self.cache_config.num_gpu_blocks_override = profiling_num_blocks(self.vllm_config)\n"
)


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'plugin'\n")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_file_with_nothing_to_parse_never_builds_the_index(tmp_path, monkeypatch):
    root = _project(tmp_path, {"plugin/__init__.py": "", "plugin/util.py": "import os\n\nX = os.sep\n"})
    built = []
    monkeypatch.setattr(projectindex.Project, "files", lambda self: built.append(self.root) or [])
    result = check_paths([str(root / "plugin" / "util.py")])
    assert result.findings == [] and result.errors == []
    assert built == []


def test_one_file_named_sees_the_helper_in_another_module(tmp_path):
    root = _project(tmp_path, {"plugin/__init__.py": "", "plugin/limits.py": HELPER, "plugin/runner.py": RUNNER})
    # The helper's only use is a block count: the finding sits at its return, in limits.py.
    found = check_paths([str(root / "plugin" / "limits.py")]).findings
    assert [(Path(f.path).name, f.line, f.code) for f in found] == [("limits.py", 2, "CGG001")]
    assert check_paths([str(root / "plugin" / "runner.py")]).findings == []


def test_an_installed_package_is_no_project(tmp_path):
    site = tmp_path / "lib" / "site-packages" / "plugin"
    site.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert project_root(str(site)) is None
    assert project_root(str(tmp_path / "lib")) == str(tmp_path)


def test_a_helper_below_a_form_feed_is_read_at_its_own_lines(tmp_path):
    # A form feed (a page break in old-style sources) is no line break for Python, but
    # str.splitlines() breaks there: the helper must be cut at the lines Python numbers.
    limits = "# Sizing helpers.\n# \x0c page two\n\n\n" + HELPER
    root = _project(tmp_path, {"plugin/__init__.py": "", "plugin/limits.py": limits, "plugin/runner.py": RUNNER})
    for named in ("limits.py", "runner.py"):
        found = check_paths([str(root / "plugin" / named)]).findings
        assert [(Path(f.path).name, f.line, f.code) for f in found] == ([("limits.py", 6, "CGG001")] if named == "limits.py" else [])


def test_imports_are_followed_from_every_place_a_module_can_live(tmp_path):
    # The helper is used in its own module too, so the finding stays at the use in the
    # runner: what the importer's side finds. Its import's first part names a package at
    # the root, a package under src/, or a single top-level module; `torch` names
    # nothing of the project and is passed over.
    helper = HELPER + "\n\ndef twice(vllm_config):\n    return 2 * profiling_num_blocks(vllm_config)\n"
    layouts = {
        "package": ("plugin/limits.py", "from plugin.limits import"),
        "src": ("src/plugin/limits.py", "from plugin.limits import"),
        "module": ("limits.py", "from limits import"),
    }
    for name, (where, spelled) in layouts.items():
        root = tmp_path / name
        root.mkdir()
        runner = "import torch\n" + RUNNER.replace("from plugin.limits import", spelled)
        files = {where: helper, "plugin/runner.py": runner, "plugin/__init__.py": ""}
        if where.startswith("src/"):
            files = {where: helper, "src/plugin/__init__.py": "", "src/plugin/runner.py": runner}
        _project(root, files)
        found = check_paths([str(root / Path(next(k for k in files if k.endswith("runner.py"))))]).findings
        assert [(Path(f.path).name, f.line, f.code) for f in found] == [("runner.py", 7, "CGG001")], name


def test_imports_are_followed_however_they_are_written(tmp_path):
    # Shapes the screen's old scanner passed over, so the flow through the helper went
    # unreported: a name after a backslash continuation, an alias that is not the first
    # of its statement, a continuation before `import`, an import after `;`.
    helper = HELPER + "\n\ndef twice(vllm_config):\n    return 2 * profiling_num_blocks(vllm_config)\n"
    use = (
        "\n\nclass NPUModelRunner(GPUModelRunner):\n"
        "    def _init_minimal_kv_cache_for_profiling(self):\n"
        "        self.cache_config.num_gpu_blocks_override = {call}(self.vllm_config)\n"
    )
    shapes = {
        "continued_names": ("from plugin.limits import twice, \\\n    profiling_num_blocks\n", "profiling_num_blocks"),
        "second_alias": ("import os, plugin.limits as lim\n", "lim.profiling_num_blocks"),
        "continued_from": ("from plugin.limits \\\n    import profiling_num_blocks\n", "profiling_num_blocks"),
        "after_semicolon": ("import os; from plugin.limits import profiling_num_blocks\n", "profiling_num_blocks"),
    }
    for name, (imports, call) in shapes.items():
        runner = imports + use.format(call=call)
        (tmp_path / name).mkdir()
        root = _project(tmp_path / name, {"plugin/__init__.py": "", "plugin/limits.py": helper, "plugin/runner.py": runner})
        line = runner[: runner.index(f"= {call}(")].count("\n") + 1
        for named in (root / "plugin" / "runner.py", root):
            found = check_paths([str(named)]).findings
            assert [(Path(f.path).name, f.line, f.code) for f in found] == [("runner.py", line, "CGG001")], (name, named)
