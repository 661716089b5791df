"""A module that imports nothing from its project is walked first only where its scopes name
a sink word, or a function of the module that reaches one (``core/modulepass.py``,
``_may_hit``, asking ``ModuleHits.hit_words``): where none of those walks makes a hit, the module has none, and its
other scopes (the capture size feeding token buffers) are not walked at all. Where one does,
the module is walked as before, so its findings, their fixes and what makes a fix unsafe are
unchanged. A count handed to a function of the module through another name than its own is
still followed: the cases below are findings the first walk must not miss."""

from __future__ import annotations

import pytest

from cgguard.static.core import modulepass
from cgguard.static.core import summaries as summaries_module
from cgguard.static.driver.check import check_source

SILENT = (
    "def reserve(vllm_config):\n"
    "    cap = vllm_config.compilation_config.max_cudagraph_capture_size\n"
    "    seqs = vllm_config.scheduler_config.max_num_seqs\n"
    "    vllm_config.cache_config.num_gpu_blocks_override = min(seqs, cap) or 1\n"
    + "".join(
        f"\n\nclass Builder{i}:\n"
        f"    def __init__(self, vllm_config):\n"
        f"        self.cap = vllm_config.compilation_config.max_cudagraph_capture_size\n"
        f"    def buffers(self, torch):\n"
        f"        return torch.zeros(self.cap + 1), max(self.cap, 8)\n"
        for i in range(30)
    )
)


def _walked(monkeypatch) -> list[str]:
    """The functions walked for the module's hits (asked with ``walk``), by name: through a
    summary (``Summaries.function_flow``) or by the module's pass, for its lanes at once."""
    walked: list[str] = []
    real = summaries_module.function_flows

    def recording(asked, *, walk=False, reading=None):
        if walk:
            walked.extend(func.name for _, func in asked)
        return real(asked, walk=walk, reading=reading)

    monkeypatch.setattr(summaries_module, "function_flows", recording)
    monkeypatch.setattr(modulepass, "function_flows", recording)
    return walked


def test_a_module_without_a_hit_walks_only_the_scopes_that_name_a_sink(monkeypatch, tmp_path):
    walked = _walked(monkeypatch)
    assert check_source(SILENT, str(tmp_path / "backend.py")) == []
    assert walked == ["reserve"]


FOUND = {
    "a helper of the module that sinks its parameter": (
        "def set_blocks(cache_config, n):\n"
        "    cache_config.num_gpu_blocks_override = n\n\n\n"
        "def profile(cache_config, compilation_config):\n"
        "    set_blocks(cache_config, compilation_config.max_cudagraph_capture_size or 1)\n"
    ),
    "through a helper that names no sink word": (
        "def set_blocks(cache_config, n):\n"
        "    cache_config.num_gpu_blocks_override = n\n\n\n"
        "def reserve(cache_config, n):\n"
        "    set_blocks(cache_config, n)\n\n\n"
        "def profile(cache_config, compilation_config):\n"
        "    reserve(cache_config, compilation_config.max_cudagraph_capture_size or 1)\n"
    ),
    "a method called through self": (
        "class Runner:\n"
        "    def set_blocks(self, n):\n"
        "        self.cache_config.num_gpu_blocks_override = n\n\n"
        "    def profile(self):\n"
        "        self.set_blocks(self.compilation_config.max_cudagraph_capture_size or 1)\n"
    ),
    "a member a constructor sets, read where it sinks": (
        "class Runner:\n"
        "    def __init__(self, compilation_config):\n"
        "        self.graph_tokens = compilation_config.max_cudagraph_capture_size or 1\n\n"
        "    def profile(self, cache_config):\n"
        "        cache_config.num_gpu_blocks_override = self.graph_tokens\n"
    ),
    "a base class's constructor through super()": (
        "class Base:\n"
        "    def __init__(self, cache_config, n):\n"
        "        cache_config.num_gpu_blocks_override = n\n\n\n"
        "class Runner(Base):\n"
        "    def __init__(self, cache_config, compilation_config):\n"
        "        super().__init__(cache_config, compilation_config.max_cudagraph_capture_size or 1)\n"
    ),
    "a helper's return taken to the sink": (
        "def graph_tokens(compilation_config):\n"
        "    return compilation_config.max_cudagraph_capture_size or 1\n\n\n"
        "def profile(cache_config, compilation_config):\n"
        "    cache_config.num_gpu_blocks_override = graph_tokens(compilation_config)\n"
    ),
}


@pytest.mark.parametrize("text", FOUND.values(), ids=FOUND.keys())
def test_a_count_handed_to_a_sink_is_found(text, tmp_path):
    found = check_source(text, str(tmp_path / "runner.py"))
    assert [f.code for f in found] == ["CGG001"]


def _fork(root, modules: dict[str, str]):
    (root / ".git").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    pkg = root / "fork"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in modules.items():
        (pkg / name).write_text(text)
    return pkg


HELPERS = (
    "def set_blocks(cache_config, n):\n"
    "    cache_config.num_gpu_blocks_override = n\n\n\n"
    "def zeros(n):\n"
    "    return [0] * n\n"
)


def _context_with_callees(pkg):
    """A run's context whose program has worked out the project's sink callees."""
    from cgguard.static.driver.context import RunContext
    from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS

    context = RunContext()
    program = context.analysis(str(pkg.parent), CAPTURE_SIZE_BLOCKS)
    reach = program.sink_reach(CAPTURE_SIZE_BLOCKS.sink_words, CAPTURE_SIZE_BLOCKS.mentions_sink_word)
    assert reach.callees() == {"set_blocks"}
    return context


def test_a_project_module_walks_first_where_it_names_a_sink_callee(monkeypatch, tmp_path):
    """Once the project's sink callees are known, a module importing from its project is
    walked first only where it names a sink word or one of them (or what it binds one to)."""
    text = "from fork.helpers import zeros\n\n" + SILENT
    pkg = _fork(tmp_path, {"helpers.py": HELPERS, "backend.py": text})
    context = _context_with_callees(pkg)
    walked = _walked(monkeypatch)
    assert check_source(text, str(pkg / "backend.py"), context=context) == []
    assert walked == ["reserve"]


def test_without_the_callees_a_project_module_is_walked_whole(monkeypatch, tmp_path):
    from cgguard.static.driver.context import RunContext

    text = "from fork.helpers import zeros\n\n" + SILENT
    pkg = _fork(tmp_path, {"helpers.py": HELPERS, "backend.py": text})
    walked = _walked(monkeypatch)
    assert check_source(text, str(pkg / "backend.py"), context=RunContext()) == []
    assert len(walked) > 30


PROJECT_FOUND = {
    "an imported sink callee": (
        "from fork.helpers import set_blocks\n\n\n"
        "def profile(cache_config, compilation_config):\n"
        "    set_blocks(cache_config, compilation_config.max_cudagraph_capture_size or 1)\n"
    ),
    "an imported sink callee under another name": (
        "from fork.helpers import set_blocks as reserve\n\n\n"
        "def profile(cache_config, compilation_config):\n"
        "    reserve(cache_config, compilation_config.max_cudagraph_capture_size or 1)\n"
    ),
    "a sink callee through its module": (
        "from fork import helpers\n\n\n"
        "def profile(cache_config, compilation_config):\n"
        "    helpers.set_blocks(cache_config, compilation_config.max_cudagraph_capture_size or 1)\n"
    ),
}


@pytest.mark.parametrize("text", PROJECT_FOUND.values(), ids=PROJECT_FOUND.keys())
def test_a_count_handed_to_a_sink_callee_of_another_module_is_found(text, tmp_path):
    pkg = _fork(tmp_path, {"helpers.py": HELPERS, "caller.py": text})
    context = _context_with_callees(pkg)
    found = check_source(text, str(pkg / "caller.py"), context=context)
    assert [(f.code, f.line) for f in found] == [("CGG001", 5)]
