"""cgguard: find, fix and guard vLLM's per-token CUDA-graph profiling KV cache.

Layout:
- ``cgguard.static``  the linter and autofix (libcst rules; never imports vLLM or torch)
- ``cgguard.runtime`` the guard hooked into vLLM's model runner at startup
- ``cgguard.shared``  facts both use (the bound formula, affected releases)
- ``cgguard.ops``     operator tools (doctor, estimate)
"""

__version__ = "0.1.0"
