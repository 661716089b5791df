"""Random fork projects: the cross-module screens lose nothing (issue 17).

A flow through a helper imported from another module of the project is found by the
rules on libcst, but only where cheap screens let the files through first: the byte
screen's sink words and import statements (``run._importer_bytes``,
``projectindex.imports_a_helper``), the helper's module on its bytes and Python's tree
(``Project.defines``, ``Project._may_hold_helper``, ``helperscreen.returns_capture_alone``)
and the roles a file's text can play (``project._roles``). Each is meant as a superset
of what the rules need. Here every one of them is switched off and the findings must
stay the same, over projects drawn at random: helpers of several shapes, imported in
every way Python spells an import, used as a block count or not, from a package, a
subpackage or a top-level module, the whole project checked or the runner alone.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cgguard.static.driver import helperscreen, prefilter, project, projectindex, projectroot, run
from cgguard.static.rules import model

CAP = "cfg.compilation_config.max_cudagraph_capture_size"
HELPERS = {
    "plain": f"def {{name}}(cfg):\n    return {CAP} or 1\n",
    "local": f"def {{name}}(cfg):\n    n = {CAP}\n    return n\n",
    "bounded": f"def {{name}}(cfg):\n    return min(cfg.scheduler_config.max_num_seqs, {CAP}) or 1\n",
    "getattr": f'def {{name}}(cfg):\n    return getattr(cfg.compilation_config, "max_capture_size", 512)\n',
    "decorated": f"@functools.cache\ndef {{name}}(cfg):\n    return {CAP}\n",
    "branch": f"def {{name}}(cfg):\n    if cfg.x:\n        return 1\n    return {CAP}\n",
    "no_return": f"def {{name}}(cfg):\n    print({CAP})\n",
    "tuple": f"def {{name}}(cfg):\n    return {CAP}, cfg.x\n",
    "param": "def {name}(n):\n    return n * 2\n",  # hands its argument through
}
USES = {
    "override": "        self.cache_config.num_gpu_blocks_override = {call}(self.vllm_config)\n",
    "local": "        num_blocks = {call}(self.vllm_config)\n        self.cache_config.num_gpu_blocks_override = num_blocks\n",
    "keyword": "        self.kv = make_minimal_kv_cache(num_blocks={call}(self.vllm_config))\n",
    "clamped": "        n = min(self.max_num_reqs, {call}(self.vllm_config))\n        self.cache_config.num_gpu_blocks_override = n\n",
    "buffer": "        self.buf = [0] * {call}(self.vllm_config)\n",
    "argument": "        n = {call}(self.compilation_config.max_cudagraph_capture_size)\n        self.cache_config.num_gpu_blocks_override = n\n",
    "element": "        num_blocks, _ = {call}(self.vllm_config)\n        self.cache_config.num_gpu_blocks_override = num_blocks\n",
}


@st.composite
def fork(draw) -> dict[str, str]:
    name = draw(st.sampled_from(["profiling_num_blocks", "capture_bound", "blocks_for"]))
    helper_where = draw(st.sampled_from(["pkg/limits.py", "pkg/util/limits.py", "limits.py", "pkg/util/__init__.py"]))
    runner_where = draw(st.sampled_from(["pkg/runner.py", "pkg/worker/runner.py", "runner.py"]))
    helpers = "import functools\n\n\n" + HELPERS[draw(st.sampled_from(sorted(HELPERS)))].format(name=name)
    if draw(st.booleans()):  # a use in its own module: a finding stays at the use
        helpers += f"\n\ndef twice(cfg):\n    return 2 * {name}(cfg)\n"
    module = helper_where[:-3].replace("/", ".").removesuffix(".__init__")
    package, _, leaf = module.rpartition(".")
    alias = draw(st.sampled_from(["lim", "L"]))
    forms = [
        (f"from {module} import {name}\n", name),
        (f"from {module} import {name} as hb\n", "hb"),
        (f"from {module} import (\n    twice,  # maybe\n    {name},\n)\n", name),
        (f"from {module} import twice, \\\n    {name}\n", name),
        (f"from {module} \\\n    import {name}\n", name),
        (f"import os, {module} as {alias}\n", f"{alias}.{name}"),
        (f"import {module} as {alias}\n", f"{alias}.{name}"),
        (f"import os; from {module} import {name}\n", name),
    ]
    if package:
        forms.append((f"from {package} import {leaf}\n", f"{leaf}.{name}"))
    if runner_where.rpartition("/")[0] == helper_where.rpartition("/")[0] and package and not helper_where.endswith("__init__.py"):
        forms.append((f"from .{leaf} import {name}\n", name))  # a relative import, same package
    forms.append((f"if TYPE_CHECKING:\n    from {module} import {name}\n", name))
    imports, call = draw(st.sampled_from(forms))
    base = draw(st.sampled_from(["GPUModelRunner", "object"]))
    uses = "".join(USES[u].format(call=call) for u in draw(st.lists(st.sampled_from(sorted(USES)), min_size=1, max_size=2)))
    header = "\n\nclass Runner({base}):\n    def _init_minimal_kv_cache_for_profiling(self):\n".format(base=base)
    if draw(st.booleans()):  # imported in the method that uses it
        runner = "import os\n" + header + "".join(f"        {line}\n" for line in imports.splitlines()) + uses
    else:
        runner = imports + header + uses
    files = {"pyproject.toml": "[project]\nname = 'fork'\n", helper_where: helpers, runner_where: runner}
    for path in (helper_where, runner_where):
        parts = path.split("/")[:-1]
        for k in range(1, len(parts) + 1):
            files.setdefault("/".join(parts[:k]) + "/__init__.py", "")
    if draw(st.booleans()):  # another module using the helper as no count
        files["other.py"] = f"from {module} import {name}\n\n\ndef show(cfg):\n    print({name}(cfg))\n"
    if draw(st.booleans()):  # a src/ layout
        files = {(rel if rel == "pyproject.toml" else f"src/{rel}"): text for rel, text in files.items()}
    return files


def _findings(root: Path, named: Path) -> list[tuple[str, int, int, str, str]]:
    for cache in (projectindex._PROJECTS,):
        cache.clear()
    projectroot.project_root.cache_clear()
    prefilter._last_asked[:] = [None, False]
    model._last_asked[:] = [None, False]
    result = run.check_paths([str(named)])
    assert result.errors == [], result.errors
    return sorted((str(Path(f.path).relative_to(root)), f.line, f.col, f.code, f.message) for f in result.findings)


def _screens_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "_importer_bytes", lambda path, data: b"import" in data and projectroot.project_root(
        str(Path(path).resolve().parent)) is not None)
    monkeypatch.setattr(run, "_may_import_a_count", lambda text: "import" in text)
    monkeypatch.setattr(project, "mentions_sink_word", lambda text: True)
    monkeypatch.setattr(project, "imports_a_helper", lambda *a: True)
    monkeypatch.setattr(projectindex.Project, "defines", lambda self, path, names: True)
    monkeypatch.setattr(projectindex.Project, "_may_hold_helper", lambda self, path: True)
    monkeypatch.setattr(helperscreen, "returns_capture_alone", lambda func: True)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fork())
def test_switching_the_cross_module_screens_off_changes_no_finding(monkeypatch, files: dict[str, str]) -> None:
    monkeypatch.setenv("CGGUARD_JOBS", "1")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        runner = next(root / rel for rel in files if rel.endswith("runner.py"))
        screened = [_findings(root, root), _findings(root, runner)]
        with monkeypatch.context() as m:
            _screens_off(m)
            unscreened = [_findings(root, root), _findings(root, runner)]
        assert screened == unscreened, files
