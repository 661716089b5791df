"""Reading the features runner V2 lacks from a release's ``vllm/config/vllm.py``.

The source below has the shapes of vLLM 0.25.0's method (tests/runtime/
test_runner_v2_features.py compares with the release itself). The logits-processor
plugin is a real distribution's metadata on this Python's path, which is what the
release's ``entry_points(group="vllm.logits_processors")`` reads.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from cgguard.ops.release.v2_features import DEFAULT, OFF, ON, FeatureSettings, read_v2_features

SOURCE = '''
class VllmConfig:
    def _get_v2_model_runner_unsupported_features(self) -> list[str]:
        """Collect features not yet supported by the V2 model runner."""
        unsupported: list[str] = []
        model_config = self.model_config
        speculative_config = self.speculative_config

        if self.parallel_config.prefill_context_parallel_size > 1:
            unsupported.append("prefill context parallelism")

        if speculative_config is not None:
            if speculative_config.method in ("ngram", "ngram_gpu"):
                unsupported.append("ngram/ngram_gpu speculative decoding")
            elif speculative_config.method not in ("eagle", "eagle3", "mtp"):
                unsupported.append(f"speculative method '{speculative_config.method}'")

        has_logitsproc_plugins = False
        if model_config is not None:
            from importlib.metadata import entry_points

            has_logitsproc_plugins = bool(entry_points(group="vllm.logits_processors"))

        if model_config is not None and (
            model_config.logits_processors or has_logitsproc_plugins
        ):
            unsupported.append("custom logits processors")

        if (
            model_config is not None
            and model_config.runner_type == "generate"
            and model_config.logprobs_mode in ("raw_logits", "processed_logits")
        ):
            unsupported.append(f"logprobs mode '{model_config.logprobs_mode}'")
        return unsupported
'''


def package(tmp_path: Path) -> str:
    (tmp_path / "vllm" / "config").mkdir(parents=True)
    (tmp_path / "vllm" / "config" / "vllm.py").write_text(SOURCE)
    return str(tmp_path / "vllm")


def states(found) -> dict[str, str]:
    return {f.label: f.state for f in found.features}


def test_nothing_given_is_all_assumed(tmp_path):
    found = read_v2_features(package(tmp_path), FeatureSettings(runner_type="generate"))
    assert states(found) == {
        "prefill context parallelism": DEFAULT,
        "ngram/ngram_gpu speculative decoding": DEFAULT,
        "speculative method '<speculative_config.method>'": DEFAULT,
        "custom logits processors": DEFAULT,
        "logprobs mode '<model_config.logprobs_mode>'": DEFAULT,
    }
    assert found.line == 3
    assert found.assumed().startswith("none of these features model runner V2 lacks is in use (")
    assert found.assumed().endswith(": prefill context parallelism; ngram/ngram_gpu speculative decoding; "
                                    "speculative method '<speculative_config.method>'; custom logits "
                                    "processors; logprobs mode '<model_config.logprobs_mode>' (each taken "
                                    "as not configured)")


def test_the_method_given_decides_the_speculative_ones(tmp_path):
    pkg = package(tmp_path)
    ngram = states(read_v2_features(pkg, FeatureSettings(speculative_method="ngram", num_speculative_tokens=2)))
    assert ngram["ngram/ngram_gpu speculative decoding"] == ON
    assert ngram["speculative method '<speculative_config.method>'"] == OFF
    eagle = read_v2_features(pkg, FeatureSettings(speculative_method="eagle"))
    assert eagle.labels(ON) == [] and len(eagle.labels(OFF)) == 2
    suffix = read_v2_features(pkg, FeatureSettings(speculative_method="suffix"))
    assert suffix.labels(ON) == ["speculative method 'suffix'"]
    # Tokens without a method: whether the method is one V2 lacks is not known.
    unnamed = states(read_v2_features(pkg, FeatureSettings(num_speculative_tokens=2)))
    assert unnamed["ngram/ngram_gpu speculative decoding"] == DEFAULT
    # A pooling model: the logprobs condition is ruled out by the runner type.
    assert states(read_v2_features(pkg, FeatureSettings(runner_type="pooling")))[
        "logprobs mode '<model_config.logprobs_mode>'"] == OFF


def test_an_installed_logits_processor_plugin_counts(tmp_path, monkeypatch):
    pkg = package(tmp_path / "src")
    site = tmp_path / "site"
    dist = site / "my_logits-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-logits\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[vllm.logits_processors]\nmine = my_logits:Processor\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    found = read_v2_features(pkg, FeatureSettings(runner_type="generate"))
    assert found.labels(ON) == ["custom logits processors"]
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(site)])
    assert read_v2_features(pkg, FeatureSettings()).labels(ON) == []


def test_a_release_without_the_method_has_no_list(tmp_path):
    (tmp_path / "vllm" / "config").mkdir(parents=True)
    (tmp_path / "vllm" / "config" / "vllm.py").write_text("class VllmConfig:\n    pass\n")
    assert read_v2_features(str(tmp_path / "vllm"), FeatureSettings()) is None
    assert read_v2_features(str(tmp_path / "missing"), FeatureSettings()) is None
