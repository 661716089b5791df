"""cgguard's rules in the libcst ecosystem: thin adapters over the same rule classes.

- :mod:`cgguard.ecosystem.fixit`: Fixit 2 lint rules ``CGG001`` and ``CGG002``
  (``fixit --rules cgguard.ecosystem.fixit lint|fix PATH``, or
  ``[tool.fixit] enable = ["cgguard.ecosystem.fixit"]``);
- :mod:`cgguard.ecosystem.codemod`: a libcst codemod command
  (``python -m libcst.tool codemod -x --no-format cgguard.ecosystem.codemod.BoundProfilingBlocks PATH``).

Both run :mod:`cgguard.static.rules.engine` on the module the tool parsed and use
its reports as they are: the same findings as ``cgguard check``, the same fixes as
``cgguard fix`` (safe fixes only; unsafe and display-only ones are reported).
"""
