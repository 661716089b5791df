"""The rules: CGG001 (:mod:`.cgg001`), CGG002 (:mod:`.cgg002`) and CGG003 (:mod:`.cgg003`) over
the core's hits, each configuration of the engine they run as listed in :mod:`.configs`.

What they follow is the taint model, as data (:mod:`.model`); the data-flow core
(:mod:`cgguard.static.core`) finds where a source reaches a sink. A rule says what such a
hit is: its code, its message (:mod:`.messages`) and how safe its fix is; :mod:`.verdict`
asks the rule for a hit. The fix itself is written by :mod:`cgguard.static.fixes`.

Knows nothing of files, config or output. The driver (``cgguard check``/``fix``) and the
adapters in :mod:`cgguard.ecosystem` (Fixit, the codemod) ask the same questions here.
"""
