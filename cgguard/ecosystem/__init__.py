"""cgguard's rules in the libcst ecosystem: thin adapters over the same core.

- :mod:`cgguard.ecosystem.fixit`: Fixit 2 lint rules ``CGG001``, ``CGG002`` and ``CGG003``
  (``fixit --rules cgguard.ecosystem.fixit lint|fix PATH``, or
  ``[tool.fixit] enable = ["cgguard.ecosystem.fixit"]``);
- :mod:`cgguard.ecosystem.codemod`: a libcst codemod command
  (``python -m libcst.tool codemod -x --no-format cgguard.ecosystem.codemod.BoundProfilingBlocks PATH``).

Both lower the module the tool parsed to cgguard's intermediate form
(:mod:`cgguard.static.core.cst_frontend`), run the same core as ``cgguard check`` on it,
and keep what cgguard's settings and suppressions keep for that file
(:mod:`cgguard.ecosystem.settings`): the same findings as ``cgguard check``, the same
fixes as ``cgguard fix`` without ``--unsafe-fixes`` (unsafe ones only with
``unsafe-fixes = true``; display-only ones are reported, never applied).
"""
