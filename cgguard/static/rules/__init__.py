"""The rules, on libcst: CGG001 (:mod:`.cgg001`) and CGG002 (:mod:`.cgg002`).

What they recognise (:mod:`.model`, the taint model as data, and :mod:`.nodes`, on libcst
nodes), how values flow to block counts (:mod:`.flow`), the fix as a change to the
smallest node (:mod:`.fixes`), messages (:mod:`.messages`), and the engine that runs
them over a parsed module (:mod:`.engine`) with what rules report (:mod:`.base`).

Pure analysis of parsed code; knows nothing of files, config or output. The
driver (``cgguard check``/``fix``) and the adapters in :mod:`cgguard.ecosystem`
(Fixit, codemods) decide what is parsed and run the same rule classes.
"""
