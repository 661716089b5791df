"""The features model runner V2 lacks, as cgguard reads them from the installed release's
``_get_v2_model_runner_unsupported_features`` source, against that method itself, and
the runner choice they lead to against the release's ``use_v2_model_runner``.

Stand-ins, because these machines have no GPU and no draft models: vLLM's
``HAS_TRITON`` is set to True in the reference process (on a GPU machine Triton finds
its driver), and the speculative config is an object holding only what the method
reads (method, ``num_speculative_tokens``, ``parallel_drafting`` False, vLLM's
default), in place of a ``SpeculativeConfig``, which needs the draft model's files.
The tensor-parallel size is set on the release's own ``ParallelConfig``.
0.18.0 has no such method (nothing picks V2 by default there): the test checks that
cgguard finds none and that doctor's verdict lists no such assumption.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cgguard.ops.release.model_kind import read_model_kind
from cgguard.ops.release.runner_verdict import RunSettings, model_verdict
from cgguard.ops.release.v2_features import DEFAULT, OFF, ON, FeatureSettings, read_v2_features
from tests.conftest import installed_vllm_dir
from tests.runtime.conftest import TINY_LLAMA, VLLM_RELEASE, clean_env

# (speculative method, tokens, tensor-parallel size)
CASES = [(None, 0, 1), ("ngram", 2, 1), ("ngram_gpu", 2, 1), ("eagle", 2, 1), ("eagle3", 3, 1),
         ("mtp", 1, 1), ("suffix", 2, 1), ("medusa", 2, 1), ("dflash", 2, 1), ("ngram", 2, 2),
         ("eagle", 2, 2)]

REFERENCE = r"""
import json, logging, os, sys, types
logging.disable(logging.CRITICAL)
os.environ.pop("VLLM_USE_V2_MODEL_RUNNER", None)
import vllm.config.vllm as config_module
from vllm.config import ModelConfig, VllmConfig
config_module.HAS_TRITON = True  # stand-in for a GPU machine (module docstring)
model_config = ModelConfig(model=sys.argv[1], skip_tokenizer_init=True, max_model_len=128)
out = {"has_method": hasattr(VllmConfig, "_get_v2_model_runner_unsupported_features")}
for method, tokens, tp in json.loads(sys.argv[2]):
    vllm_config = VllmConfig(model_config=model_config)
    vllm_config.parallel_config.tensor_parallel_size = tp
    if method is not None:  # stand-in for a SpeculativeConfig (module docstring)
        object.__setattr__(vllm_config, "speculative_config", types.SimpleNamespace(
            method=method, num_speculative_tokens=tokens, parallel_drafting=False))
    key = f"{method}/{tokens}/{tp}"
    if out["has_method"]:
        out[key] = {"unsupported": vllm_config._get_v2_model_runner_unsupported_features(),
                    "v2": vllm_config.use_v2_model_runner}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("v2-features")
    (folder / "config.json").write_text(json.dumps(TINY_LLAMA))
    return folder


@pytest.fixture(scope="module")
def release(dense: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", REFERENCE, str(dense), json.dumps(CASES)],
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def settings(method: str | None, tokens: int, tp: int, dense: Path) -> FeatureSettings:
    kind = read_model_kind(str(dense), str(installed_vllm_dir()))
    return FeatureSettings(speculative_method=method, num_speculative_tokens=tokens,
                           tensor_parallel_size=tp, runner_type=kind.runner_type)


@pytest.mark.parametrize("method, tokens, tp", CASES, ids=lambda v: str(v))
def test_features_in_use_are_the_release_list(release, dense, method, tokens, tp):
    found = read_v2_features(str(installed_vllm_dir()), settings(method, tokens, tp, dense))
    if not release["has_method"]:
        assert VLLM_RELEASE == "0.18.0" and found is None
        return
    assert found is not None
    assert found.labels(ON) == release[f"{method}/{tokens}/{tp}"]["unsupported"]
    # Every feature the source appends is accounted for, once.
    source = Path(found.path).read_text(encoding="utf-8")
    func = next(n for n in ast.walk(ast.parse(source))
                if isinstance(n, ast.FunctionDef) and n.name == "_get_v2_model_runner_unsupported_features")
    appends = [n for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "append"]
    assert len(found.features) == len(appends) > 0
    if method is None:  # no speculative decoding named: its features stay assumptions
        assert not found.labels(ON) and found.labels(DEFAULT)
        if VLLM_RELEASE == "0.25.0":  # a tensor-parallel size of 1 rules sequence parallelism out
            assert "ngram/ngram_gpu speculative decoding" in found.labels(DEFAULT)
            assert found.labels(OFF) == ["sequence parallelism"]
    else:  # the speculative ones are decided by the method given
        assert any(f.state == OFF for f in found.features) or found.labels(ON)


@pytest.mark.parametrize("method, tokens, tp", CASES, ids=lambda v: str(v))
def test_runner_verdict_is_the_release_choice(release, dense, method, tokens, tp):
    verdict = model_verdict(str(installed_vllm_dir()), str(dense),
                            RunSettings(speculative_method=method, num_speculative_tokens=tokens,
                                        tensor_parallel_size=tp), None, has_triton=True)
    if not release["has_method"]:
        assert verdict.runner == "V1" and verdict.v2_features is None
        assert not any("model runner V2 lacks" in a for a in verdict.assumed)
        return
    expected = release[f"{method}/{tokens}/{tp}"]
    assert verdict.runner == ("V2" if expected["v2"] else "V1")
    if VLLM_RELEASE == "0.25.0":  # a dense Llama: V2 by default, so the list decides
        assert verdict.v2_features is not None
        in_use = expected["unsupported"]
        assert bool(in_use) is (verdict.runner == "V1")
        if in_use:
            assert any(r.startswith(f"model runner V2 lacks {'; '.join(in_use)}, which the settings given turn on")
                       for r in verdict.reasons)
        assumed = [a for a in verdict.assumed if a.startswith("none of these features model runner V2 lacks")]
        assert len(assumed) == 1 and "prefill context parallelism" in assumed[0]
        assert verdict.to_json()["v2_unsupported_features"]["in_use"] == in_use


def test_doctor_and_estimate_take_the_method(dense, release):
    def doctor(*flags: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "cgguard", "doctor", "--model", str(dense), *flags,
                               "--format", "json"], capture_output=True, text=True, env=clean_env(), timeout=600)
        return json.loads(proc.stdout)

    if VLLM_RELEASE != "0.25.0":  # 0.18.0 picks V1 whatever the method; 0.32.0 is fixed
        verdict = doctor("--speculative-method", "ngram")["model_verdict"]
        assert verdict is None or verdict["v2_unsupported_features"] is None
        return
    # Without a model: the kinds that run V2 by default need none of the features, each
    # taken as not configured.
    summary = subprocess.run([sys.executable, "-m", "cgguard", "doctor", "--format", "json"],
                             capture_output=True, text=True, env=clean_env(), timeout=600)
    listed = json.loads(summary.stdout)["runners"]["v2_unsupported_features"]
    assert listed["in_use"] == [] and "ngram/ngram_gpu speculative decoding" in listed["assumed_not_in_use"]
    plain, ngram = doctor()["model_verdict"], doctor("--speculative-method", "ngram")["model_verdict"]
    assert plain["runner"] == "V2" and ngram["runner"] == "V1"
    assert ngram["v2_unsupported_features"]["in_use"] == release["ngram/2/1"]["unsupported"]
    assert ngram["takes_per_token_path"] is True
    proc = subprocess.run([sys.executable, "-m", "cgguard", "estimate", str(dense), "--num-speculative-tokens", "2",
                           "--speculative-method", "ngram", "--format", "json"],
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    out = json.loads(proc.stdout)
    assert out["runner"]["runner"] == "V1" and out["per_token"] is not None
    text = subprocess.run([sys.executable, "-m", "cgguard", "estimate", str(dense), "--num-speculative-tokens", "2",
                           "--speculative-method", "ngram"], capture_output=True, text=True, env=clean_env(), timeout=600)
    assert ("\n                model runner V2 lacks ngram/ngram_gpu speculative decoding, which the settings "
            "given turn on\n") in text.stdout
    eagle = subprocess.run([sys.executable, "-m", "cgguard", "estimate", str(dense), "--num-speculative-tokens", "2",
                            "--speculative-method", "eagle", "--format", "json"],
                           capture_output=True, text=True, env=clean_env(), timeout=600)
    assert json.loads(eagle.stdout)["runner"]["runner"] == "V2"
