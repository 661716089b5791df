"""The text tests that choose which functions the core walks: names are used whole, and a
class is used through the methods its name calls."""

from __future__ import annotations

from cgguard.static.core.words import called_through, holds_word


def test_a_name_is_used_whole():
    assert holds_word("x = self.model(y)", "model")
    assert not holds_word("x = self.model_config.y", "model")
    assert not holds_word("submodel = 1", "model")
    assert holds_word("model", "model")
    # A later whole use counts when an earlier one is part of a longer name.
    assert holds_word("model_config = model", "model")


def test_a_class_word_ends_in_a_dot_and_is_followed_by_what_it_qualifies():
    assert holds_word("n = GraphLimits.tokens(cfg)", "GraphLimits.")
    assert not holds_word("n = MyGraphLimits.tokens(cfg)", "GraphLimits.")
    assert not holds_word("n = GraphLimits(cfg)", "GraphLimits.")


def test_the_methods_a_text_calls_through_a_name():
    text = (
        "a = GraphLimits.tokens(cfg)\n"
        "b = GraphLimits.for_config (vllm_config)\n"
        "c = GraphLimits.NAME\n"
        "d = plugin.GraphLimits.other(x)\n"
        "e = MyGraphLimits.mine(x)\n"
    )
    assert called_through(text, "GraphLimits") == {"tokens", "for_config"}
    assert called_through("x = 1\n", "GraphLimits") == set()


def test_a_module_imported_in_a_function_from_a_namespace_package_is_followed(tmp_path):
    # ``plugin/`` has no ``__init__.py``: ``from plugin import sizes`` still imports a module of
    # the project, and the helper it lends is followed from inside the method. (The runner
    # names a source itself: one that names none is asked what it imports by the driver,
    # which reads only packages with an ``__init__.py``.)
    from tests.conftest import run_cgguard

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "sizes.py").write_text(
        "def graph_tokens(compilation_config):\n"
        "    return compilation_config.max_cudagraph_capture_size\n"
    )
    (tmp_path / "plugin" / "runner.py").write_text(
        "class Runner:\n"
        "    def graph_sizes(self):\n"
        "        return sorted(self.compilation_config.cudagraph_capture_sizes)\n"
        "\n"
        "    def buffers(self):\n"
        "        from plugin import sizes\n"
        "        self.ids = torch.zeros(sizes.graph_tokens(self.compilation_config))\n"
        "\n"
        "    def profile(self):\n"
        "        from plugin import sizes\n"
        "        min_blocks = sizes.graph_tokens(self.compilation_config) or 1\n"
        "        self.cache_config.num_gpu_blocks_override = min_blocks\n"
    )
    result = run_cgguard("check", "--isolated", "plugin/runner.py", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "plugin/runner.py:11:22: CGG001 " in result.stdout, result.stdout
