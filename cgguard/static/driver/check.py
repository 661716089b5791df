"""Check one file's text: the driver's stages, one after the other, each called from here.

    text -> screen -> parse -> analyse -> report -> findings (-> fix, :mod:`.fixer`)

- :mod:`.screen` decides on the text and Python's tree what libcst parses (a Plan);
- :mod:`.parse` makes libcst's modules of it (on a thread with a large stack);
- :mod:`.analyse` runs the rules over them;
- :mod:`.report` turns the rules' hits into findings with positions and fixes;
- :mod:`.project` does the same for flows through helpers imported from the
  project's other modules (its own index, then the same stages).

No stage calls a later one or goes back to an earlier one: where only the rules can
tell whether a helper's return carries a capture size, the screen says so in its
plan, and this module asks the rules (parse, analyse) before choosing what to parse.
A test holds the modules to that order (tests/static/test_pipeline.py).

Two paths give the same findings (a test compares them over all of vLLM): the
*fast* plan (default) and the *full* one (``fast=False``: libcst parses every file
that holds a capture size whole).
"""

from __future__ import annotations

from cgguard.static.driver import screen
from cgguard.static.driver.findings import Finding


def check_source(text: str, path: str, *, fast: bool = True) -> list[Finding]:
    """Findings for one file's text. Raises SyntaxError/ValueError/RecursionError on bad input.

    The file's own findings (fast or full path), and those of flows through helpers
    imported from the project's other modules (:mod:`.project`, the same for both paths).
    """
    own = own_findings(text, path, fast=fast)
    from cgguard.static.driver import project

    across = project.findings(text, path)
    if not across:
        return own
    return sorted(set(own) | set(across), key=Finding.sort_key)


def own_findings(text: str, path: str, *, fast: bool = True) -> list[Finding]:
    """The findings of flows that end in ``path``'s own code: within it, and through the
    parameter of a helper imported from another module of the project (read alone)."""
    plan = screen.plan(text, path, fast=fast)
    if plan.mode == screen.NOTHING:
        return []  # most files: the later stages are not even imported
    from cgguard.static.driver import analyse, parse, report

    if plan.confirm and parse.deep(
        lambda: any(analyse.returns_capture(parse.cut(plan, s, e, path)) for s, e in plan.confirm)
    ):
        plan = plan.whole(
            path
        )  # a helper's return carries the capture size: the rules need every caller
    if plan.mode == screen.FUNCTIONS and not plan.spans:
        return []

    from cgguard.static.driver import project

    def work() -> tuple[list, list[Finding]]:
        # Inside deep(): ImportedParams is libcst's side, so a forked child hands this file
        # to the parent before importing libcst a second time in the run.
        imported = project.imported_params(
            text, path
        )  # helpers of other modules, read when a call asks
        pieces = parse.pieces(plan, path)
        analysed = analyse.hits(plan, pieces, path, imported)
        return analysed, report.findings(analysed, plan.text, plan.lines, path)

    analysed, found = parse.deep(work)
    if found:
        analyse.check_parses(
            analysed
        )  # the full path would parse the whole file: a finding needs it to
    return found
