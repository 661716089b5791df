"""The rule pages' model table, written from the model itself.

Each row is one field of :class:`cgguard.static.core.patterns.Model` with its value in
:data:`cgguard.static.rules.model.MODEL`, what the field means, and the rule cases that
test it. A rule page (``rules/<CODE>/rule.md``) holds the table between two marker
lines; ``python -m cgguard.static.rules.modeltable --write`` rewrites it there, and a
test holds every page equal to :func:`render`, so the page says what the model holds.
A field without an entry in :data:`FIELD_DOCS` is an error, not a missing row.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from cgguard.static.core.patterns import ParamSink

BEGIN = "<!-- model table: begin (written by python -m cgguard.static.rules.modeltable --write) -->"
END = "<!-- model table: end -->"

# field -> (part of the model, what the field means, cases that test it). The cases are
# names under rules/<CODE>/cases/ (``*`` matches any run of characters).
FIELD_DOCS: dict[str, tuple[str, str, str]] = {
    "source_attrs": (
        "sources (tokens)",
        "attributes holding the largest capture size, read on any receiver or by `getattr` "
        "with a constant name",
        "old_names_and_lists, version_getattr_capture_size",
    ),
    "source_lists": (
        "sources (tokens)",
        "lists of capture sizes: their last element and their `max()` are the largest, also "
        "through a copy (sorted, filtered, collected in a loop)",
        "old_names_and_lists, flows_capture_size_lists",
    ),
    "collection_calls": (
        "propagators",
        "calls whose result is still a list of capture sizes (a sorted or copied list)",
        "flows_capture_size_lists, flows_capture_size_lists_tokens",
    ),
    "element_stores": (
        "propagators",
        "methods that put one capture size into a list, which then holds capture sizes",
        "flows_capture_size_lists",
    ),
    "partial_calls": (
        "propagators",
        "`partial(f, a)`: a call of the result is a call of `f` with `a` first",
        "flows_functools_partial, flows_functools_partial_bounded",
    ),
    "passthrough_calls": (
        "propagators",
        "calls whose result keeps their first argument's magnitude",
        "params_module_and_static, grid_reduce_workspace_blocks",
    ),
    "widening_calls": (
        "propagators",
        "a call that keeps the largest of its arguments: with a capture size in it, the count "
        "still grows with the tokens (CGG002)",
        "params_module_and_static, precision_max_of_min",
    ),
    "clamp_calls": (
        "sanitizers",
        "a call that bounds its arguments by their smallest; with a request count among them "
        "it bounds the count (the `if` clamp and the conditional expression are the same bound)",
        "min_with_request_count, bounded_conditional_clamp, precision_clamp_idiom",
    ),
    "bound_counts": (
        "sanitizers",
        "attributes, on any receiver, that count requests; a local, a helper's or a "
        "property's return holding one is one too",
        "min_with_request_count, bounded_min_request_helper, bounded_imported_request_helper",
    ),
    "unbounded_counts": (
        "sanitizers",
        "attributes that count tokens: a bound by one of them still counts tokens",
        "min_with_token_count, bounded_min_token_helper, bounded_conditional_token_clamp",
    ),
    "store_sinks": (
        "sinks (the allocation)",
        "attributes whose store on any object is the profiling cache's block count, also "
        "through `setattr`, a `replace` keyword and a dict key splatted into a call",
        "v025_runner, sinks_setattr_override, sinks_dataclasses_replace, version_dict_key_sink",
    ),
    "param_sinks": (
        "sinks (the allocation)",
        "parameters of vLLM's KV-cache config builders that take the block count or a byte "
        "budget built from it: `callee(param=)`, by keyword or at its position (`@ 2`: the "
        "third positional argument, a method's receiver not counted), also a key of a dict "
        "splatted into that callee. A keyword of any other call is no sink, whatever its name",
        "keyword_and_positional_sinks, prerelease_byte_budget, flows_dicts_in_steps, "
        "sinks_unknown_callees, grid_launch_keywords",
    ),
    "setattr_calls": (
        "sinks (the allocation)",
        '`setattr(obj, "<store sink>", n)`, `object.__setattr__(obj, "<store sink>", n)` and '
        '`mock.patch.object(obj, "<store sink>", n)`: the same store as the attribute',
        "sinks_setattr_override, sinks_setattr_replace_bounded, sinks_object_setattr, "
        "sinks_patch_object",
    ),
    "replace_calls": (
        "sinks (the allocation)",
        "`replace(obj, <store sink>=n)` (`dataclasses.replace`, however imported): a copy "
        "holding the count",
        "sinks_dataclasses_replace, sinks_replace_in_helper",
    ),
    "placement_names": (
        "where it reports",
        "names of locals that hold a block count: no sink by themselves (returned, stored or "
        "handed to any other call, they are nothing), they are where the finding and the fix "
        "go when a per-token value flows from them to a sink",
        "v025_runner, precision_bounded_on_every_path, grid_triton_launch_blocks, "
        "grid_blocks_returned",
    ),
    "quiet_calls": (
        "where it reports",
        "calls a helper's count may be handed to without being used otherwise (conversions, "
        "logging, the bounds): the helper's return stays a block count",
        "mirror_logged_and_asserted",
    ),
    "fix_bound.runner_names": (
        "the fix's request count",
        "receivers that are a model runner: the fix bounds by `<receiver>.<runner request>`",
        "runner_receiver, performs_contextmanager",
    ),
    "fix_bound.runner_request": (
        "the fix's request count",
        "the request count of a model runner",
        "runner_receiver, request_count_from_class",
    ),
    "fix_bound.config_roots": (
        "the fix's request count",
        "receivers that are vLLM's config: the fix bounds by `<receiver>.<config request>`",
        "vllm_config_chains",
    ),
    "fix_bound.config_request": (
        "the fix's request count",
        "the request count read from vLLM's config",
        "vllm_config_chains, imports_project_helper",
    ),
    "fix_bound.source_config": (
        "the fix's request count",
        "the config object the sources are read from, dropped from a receiver to reach its config",
        "vllm_config_chains",
    ),
    "fix_bound.class_requests": (
        "the fix's request count",
        "attributes of a class, in this order, that give it a request count, and the count "
        "the fix writes",
        "class_own_request_count, request_count_from_class, class_facts_*",
    ),
    "fix_bound.runner_classes": (
        "the fix's request count",
        "class names (searched) that are a model runner, the class itself or a base resolved "
        "through imports and aliases",
        "imports_aliased_base_class, imports_alias_not_a_runner, bases_*",
    ),
    "source_label": (
        "labels",
        "what a source's value counts; a hit whose count carries it alone is CGG001's "
        "(rules/configs.py; CGG003's models name a batch's tokens and its requests)",
        "helper_return, old_names_and_lists",
    ),
    "widened_label": (
        "labels",
        "what `max()` of a followed count and others adds to its labels (the count or more); "
        "a hit whose count carries it is CGG002's, also through a helper that widens what it "
        "is handed",
        "params_module_and_static, precision_max_of_min",
    ),
    "bound_label": (
        "labels",
        "what a count holds that a `min()` or a clamp bounds a capture size by (a request "
        "count, a local or a helper's return holding one), and the capture size in the branch "
        "of an `if` clamp that bounds it; never reported (CGG003's models name their own)",
        "min_with_request_count, bounded_min_request_helper, bounded_conditional_clamp",
    ),
    "unbounded_label": (
        "labels",
        "what a count from no source holds that bounds nothing (a token count, a local "
        "holding one): a sum of it and a request count is neither; never reported (CGG003's "
        "models name their own)",
        "min_with_token_count, bounded_min_token_helper",
    ),
    "compare_sinks": (
        "sinks",
        "names of counts a followed value may not be ordered against (`<`, `<=`, `>`, `>=`); "
        "none here: a capture size compared with a request count is the `if` clamp (CGG003 "
        "names a Mamba cache's block count)",
        "precision_clamp_idiom",
    ),
    "source_params": (
        "sources (tokens)",
        "parameters, by name, that hold a count on entry; none here: a parameter holds a "
        "capture size through its default or what its callers hand it (CGG003 names a dummy "
        "run's `num_tokens`)",
        "parameter_default, params_method_argument",
    ),
    "tuple_passthrough_calls": (
        "propagators",
        "calls returning a tuple whose first element keeps their first argument's magnitude "
        "(`n, across, _ = sync(n)`); none here: an unpacked call's element holds a count "
        "where the project's helper returns one there (CGG003 names the data-parallel sync)",
        "members_tuple_helper, members_tuple_token_element",
    ),
    "converting_factors": (
        "sanitizers",
        "names whose product with a followed count is a count of another unit, no longer "
        "followed; none here: a capture size times anything still grows with it (CGG003 "
        "names the tokens each request decodes, `(1 + num_spec_tokens) * max_num_reqs`)",
        "prerelease_byte_budget",
    ),
}

# What the core does not follow: no finding comes from these, whatever they hold (each
# named case shows one).
NOT_FOLLOWED = (
    "functions and classes outside the project (vLLM's own helpers, other packages): their "
    "results carry no capture size; `getattr` and `setattr` with a name that is not a "
    "constant; code run from text (`exec`, `eval`); the last capture size taken by starred "
    "unpacking (`*_, last = sizes`) or by `sizes[len(sizes) - 1]`; a member of `self` "
    "holding a list of capture sizes handed straight to a helper (through a local it is "
    "followed)",
    "imports_aliased_runner_bounded, version_getattr_other_attributes, "
    "not_followed_dynamic_names, not_followed_list_shapes",
)


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _value(value: object) -> str:
    if isinstance(value, re.Pattern):
        return f"`{value.pattern}`"
    if isinstance(value, str):
        return f"`{value}`"
    if isinstance(value, frozenset | set):
        return ", ".join(f"`{v}`" for v in sorted(value))
    if isinstance(value, ParamSink):
        where = "" if value.position is None else f" @ {value.position}"
        return f"`{value.callee}({value.param}=)`{where}"
    if isinstance(value, tuple):
        return ", ".join(
            f"`{v[0]}` → `{v[1]}`" if isinstance(v, tuple) and len(v) == 2 else _value(v)
            for v in value
        )
    return f"`{value!r}`"


def _cases(names: str) -> str:
    return ", ".join(f"`{n.strip()}`" for n in names.split(","))


def undocumented(fields: Iterable[str]) -> list[str]:
    """Model fields that :data:`FIELD_DOCS` has no row for."""
    return [f for f in fields if f not in FIELD_DOCS]


def rows(value: object, prefix: str = "") -> Iterable[tuple[str, object]]:
    """(field, value) of each field of a model, a field holding a dataclass (the fix's bound,
    the rule's own) given field by field as ``<field>.<its field>``."""
    for field in dataclasses.fields(value):  # type: ignore[arg-type]  # a dataclass instance
        held = getattr(value, field.name)
        if dataclasses.is_dataclass(held) and not isinstance(held, type | ParamSink):
            yield from rows(held, f"{prefix}{field.name}.")
        else:
            yield f"{prefix}{field.name}", held


def render() -> str:
    """The model table of the rule pages, from :data:`~cgguard.static.rules.model.MODEL`."""
    from cgguard.static.rules.model import MODEL

    found = list(rows(MODEL))
    missing = undocumented(name for name, _ in found)
    if missing:
        raise ValueError(f"model fields without a row in FIELD_DOCS: {', '.join(missing)}")
    lines = ["| part | model field | value | what | cases |", "|---|---|---|---|---|"]
    for name, held in found:
        part, what, cases = FIELD_DOCS[name]
        value = _value(held)
        lines.append(f"| {part} | `{name}` | {_cell(value)} | {_cell(what)} | {_cases(cases)} |")
    what, cases = NOT_FOLLOWED
    lines.append(f"| not followed | | | {_cell(what)} | {_cases(cases)} |")
    return "\n".join(lines) + "\n"


def with_table(page: str, table: str) -> str:
    """``page`` with the text between its markers replaced by ``table``."""
    head, sep, rest = page.partition(BEGIN + "\n")
    if not sep or END not in rest:
        raise ValueError("the page has no model table markers")
    return head + BEGIN + "\n" + table + END + rest.split(END, 1)[1]


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print("usage: python -m cgguard.static.rules.modeltable --write", file=sys.stderr)
        return 2
    table = render()
    checkout_rules = Path(__file__).resolve().parents[3] / "rules"  # the source checkout's pages
    for page in sorted(checkout_rules.glob("*/rule.md")):
        text = page.read_text(encoding="utf-8")
        if BEGIN in text:
            page.write_text(with_table(text, table), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
