"""Which affected vLLM release `cgguard estimate` resolves defaults for, and whether
its source is installed here to say which runner the model gets."""

from __future__ import annotations

from dataclasses import dataclass

from cgguard.ops.doctor.diagnosis import in_affected_releases, release_tuple
from cgguard.ops.release.installed import find_installed_vllm
from cgguard.ops.release.memory import EstimateError
from cgguard.ops.release.model_config import ConfigError
from cgguard.ops.release.runner_verdict import (
    PathVerdict,
    RunSettings,
    model_verdict,
    settings_from_env,
)
from cgguard.shared.bound import FIRST_AFFECTED, FIRST_FIXED

LAST_AFFECTED = "0.25.0"


@dataclass(frozen=True)
class ReleaseContext:
    version: str
    release: tuple[int, int, int]
    assumed: str | None  # why this release, when the operator did not name it
    package_dir: str | None  # the installed source of this very release, if any


def release_context(given: str | None) -> ReleaseContext:
    installed = next((d for d in find_installed_vllm() if d.imported), None)
    if given is not None:
        release = release_tuple(given)
        if release is None or not FIRST_AFFECTED <= release < FIRST_FIXED:
            affected = (
                f"{'.'.join(map(str, FIRST_AFFECTED))} to {FIRST_FIXED[0]}.{FIRST_FIXED[1] - 1}.x"
            )
            raise EstimateError(
                f"--vllm-version {given}: not one of the affected releases ({affected})"
            )
        same = installed is not None and release_tuple(installed.version) == release
        package_dir = installed.package_dir if installed is not None and same else None
        return ReleaseContext(given, release, None, package_dir)
    if installed is not None and in_affected_releases(installed.version):
        release = release_tuple(installed.version)
        assert release is not None
        return ReleaseContext(
            installed.version,
            release,
            f"vLLM {installed.version}, the installed release ({installed.name}, read without importing it)",
            installed.package_dir,
        )
    why = (
        f"the installed {installed.name} {installed.version} is not an affected release"
        if installed is not None
        else "no vLLM is installed here"
    )
    release = release_tuple(LAST_AFFECTED)
    assert release is not None
    return ReleaseContext(
        LAST_AFFECTED,
        release,
        f"vLLM {LAST_AFFECTED}'s defaults, the last affected release ({why}; --vllm-version names one)",
        None,
    )


def runner_check(
    ctx: ReleaseContext, model_dir: str, settings: RunSettings | None = None
) -> PathVerdict | None:
    """The runner the installed release gives this model with these settings
    (VLLM_USE_V2_MODEL_RUNNER read from the environment when none are given); None when
    that release's source is not installed here."""
    if ctx.package_dir is None:
        return None
    try:
        return model_verdict(ctx.package_dir, model_dir, settings or settings_from_env(), None)
    except ConfigError as exc:  # the estimate itself needs less of config.json
        return PathVerdict(taken=None, runner=None, reasons=[f"the runner was not read: {exc}"])
