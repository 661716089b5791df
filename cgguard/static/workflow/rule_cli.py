"""`cgguard rule [CODE] [--all]`: a rule's page as ruff writes one, and its reference."""

from __future__ import annotations

import click


@click.command()
@click.argument("code", required=False)
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Also print the reference: every shape the rule follows, what is silent, its model "
    "and its example cases.",
)
def rule(code: str | None, everything: bool) -> None:
    """Print a rule's page (all rules' summaries without CODE)."""
    from cgguard.static.workflow.ruledocs import documented_rules, get_rule

    if code is None:
        for r in documented_rules():
            click.echo(f"{r.code}  {r.name}: {r.summary} (fix: {r.fix})")
        return
    doc = get_rule(code)
    if doc is None:
        known = ", ".join(r.code for r in documented_rules())
        raise click.UsageError(f"unknown rule {code!r} (known: {known})")
    click.echo(
        f"# {doc.code} ({doc.name})\n\n{doc.summary}\n\nFix: {doc.fix}\n\n{doc.page}", nl=False
    )
    cases = doc.cases()
    projects = doc.project_cases()
    if not everything:
        if doc.reference or cases or projects:
            more = (
                ["every shape it follows", "what is silent", "its model"] if doc.reference else []
            )
            if cases or projects:
                more.append(f"its {len(cases) + len(projects)} example cases")
            listed = ", ".join(more[:-1]) + (" and " if len(more) > 1 else "") + more[-1]
            click.echo(f"\n`cgguard rule {doc.code} --all` adds {listed}.")
        return
    if doc.reference:
        click.echo(f"\n{doc.reference}", nl=False)
    if cases or projects:
        # The examples the tests are generated from: Python source under a `.pycase` suffix.
        click.echo(f"\n## Cases ({len(cases) + len(projects)}, in {doc.folder / 'cases'})\n")
        for case in cases:
            fixed = f" -> {case.fixed_path.name}" if case.fixed_path else ""
            click.echo(f"- {case.kind}/{case.path.name}{fixed}")
        for project in projects:
            # A folder is a project of several modules (a flow across files).
            modules = project.modules()
            with_fix = sum(m.fixed_path is not None for m in modules)
            click.echo(
                f"- {project.kind}/{project.name}/ (a project of {len(modules)} modules"
                + (f", {with_fix} with an expected fix)" if with_fix else ")")
            )
