"""The driver: decides what the rules see and runs them fast.

One file's text goes one way through its stages, each a module with one job, called
in turn by :mod:`.check`: :mod:`.prefilter` (bytes) -> the core (:mod:`cgguard.static.core`:
Python's parser, the intermediate form, the data flow, across the project's modules) ->
:mod:`.report` (findings; libcst through :mod:`.parse`) -> :mod:`.fixer` (fixes, re-parsed,
written atomically). :mod:`.context` holds what one run has read; :mod:`.run` maps files
over the stages (:mod:`.parallel`: one or two processes).
Entry points: :func:`.check.check_source` (one text) and :mod:`.run` (paths).
"""
