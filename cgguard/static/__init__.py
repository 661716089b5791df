"""The static half: rules CGG001-CGG003 over Python source, and their fixes.

Never imports vLLM or torch. Three places:

- ``rules/``    the rules' analysis and fixes, on libcst nodes (what is a finding);
- ``driver/``   what gets parsed and how fast: prefilter, cutting, parallel map, safe writes;
- ``workflow/`` what users configure and see: config, discovery, suppressions, formats, docs.

Entry points: :func:`cgguard.static.driver.check.check_source` (one source text) and
:mod:`cgguard.static.driver.run` (paths). The same rules run inside Fixit and
libcst's codemod CLI through :mod:`cgguard.ecosystem`.
"""
