"""The platform contract's tables, generated from the code and written into the Markdown files
themselves.

A page holds each table between two markers, so it reads right as a file (GitHub's view) and on the
site:

    <!-- contract-table:start sglang_plugin_runtime.platforms.interface:SRTPlatform own -->
    ... generated: one row per contract member (``describe_contract``),
    ... with what the base does by default ...
    <!-- contract-table:end -->

    <!-- interface-table:start -->
    ... generated: the interface table (platforms/interface_table.jsonl),
    ... one table per SGLang class ...
    <!-- interface-table:end -->

    <!-- release-matrix:start -->
    ... generated: one row per SGLang release with a plugin system, from the
    ... runtime's data of their wheels (``_sglang_releases``) ...
    <!-- release-matrix:end -->

``own`` keeps only the members the class declares itself. ``python docs/_hooks/contract_tables.py``
rewrites the tables of every page (``--check``: exit 1 naming the pages that differ, changing
nothing); ``tests/test_contract_page.py`` fails when a page differs from the code. The site build
(``sglang_docs.py``) fills the same markers from the code, so the site never shows a stale table.
"""

from __future__ import annotations

import argparse
import ast
import html
import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1]
COMMAND = "python docs/_hooks/contract_tables.py"

_REGION = re.compile(
    r"^<!-- (?P<kind>contract-table|interface-table|release-matrix):start(?P<args>[^>]*?)\s*-->"
    r"\n.*?^<!-- (?P=kind):end -->$",
    re.M | re.S,
)
#: SGLang's platform classes, as the interface table's ``owner`` names them, with their import
#: paths.
_OWNER_TITLES = {
    "DeviceMixin": "`sglang.srt.platforms.device_mixin.DeviceMixin`",
    "SRTPlatform": "`sglang.srt.platforms.interface.SRTPlatform`",
    "diffusion Platform": (
        "`sglang.multimodal_gen.runtime.platforms.interface.Platform` (the diffusion engine)"
    ),
}


def _cell(text: str) -> str:
    """Prose for a table cell: one line, its pipes escaped (a code span in it must hold none: see
    ``_code``)."""
    text = text.replace("\n", " ")
    if "|" in "".join(re.findall(r"`+[^`]*`+", text)):
        raise ValueError(
            f"a code span in a table cell holds a '|', which splits the cell on GitHub: {text!r}"
        )
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    """Inline code for a table cell, written as HTML so that it reads the same on the site and in
    GitHub's view.

    GitHub splits a table cell at a ``|`` even inside backticks, and Python-Markdown prints an
    escaped one with its backslash; an entity is a pipe to both. ``<``, ``*`` are entities too (no
    tag, no emphasis). On the site code in a table never wraps (extra.css), except where ``<wbr>``
    allows it: after a comma or an opening parenthesis.
    """
    escaped = html.escape(text, quote=False).replace("|", "&#124;").replace("*", "&#42;")
    breakable = re.sub(r"\((?!\))", "(<wbr>", escaped.replace(", ", ", <wbr>"))
    return f"<code>{breakable}</code>"


# --------------------------------------------------------------------------------------
# What the base does by default
# --------------------------------------------------------------------------------------


def default_behaviour(member: Any) -> str:
    """What the contract's own definition of ``member`` (a ``ContractMethod``) does, in a few words.

    A required member raises ``NotImplementedError``; an attribute is its value in the class body; a
    method says it in its docstring (a sentence starting "Default:"), or its body says it: nothing
    but a docstring is a no-op, one ``return X`` (after imports) returns ``X``. Anything longer must
    say it in its docstring.
    """
    if member.required:
        return "raises `NotImplementedError`: override it"
    if member.kind == "attribute":
        source = textwrap.dedent(inspect.getsource(member.declared_in))
        (klass,) = ast.parse(source).body
        values = [
            n.value
            for n in klass.body
            if isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == member.name
        ]
        return _code(ast.unparse(values[0])) if values and values[0] is not None else "unset"
    said = re.search(
        r"^Default: (.+?)(?:\n\n|\Z)", inspect.getdoc(member.function) or "", re.M | re.S
    )
    if said:
        return " ".join(said.group(1).split())
    (function,) = ast.parse(textwrap.dedent(inspect.getsource(member.function))).body
    body = [n for n in function.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body:
        return "does nothing"
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return f"returns {_code(ast.unparse(body[0].value))}"
    raise ValueError(
        f"{member.qualname}: say what it does by default in its docstring ('Default: ...')"
    )


# --------------------------------------------------------------------------------------
# The tables
# --------------------------------------------------------------------------------------


def contract_table(cls: type, *, own_only: bool = False) -> str:
    """The Markdown table of ``cls``'s platform contract, one row per member, in declaration
    order."""
    from sglang_plugin_runtime.platforms import describe_contract

    # A table of one class's own members leaves out "declared in": it is that class on every row.
    headers = [
        "member",
        "what it is for",
        "by default",
        "kind",
        "a host calls it",
        "must override",
        "declared in",
    ]
    headers = [h for h in headers if not (own_only and h == "declared in")]
    rows = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for member in describe_contract(cls):
        if own_only and member.declared_in is not cls:
            continue
        cells = [
            _code(member.render()),
            _cell(member.summary),
            _cell(default_behaviour(member)),
            member.kind,
            "yes (active)" if member.status == "active" else "not yet (reserved)",
            "**yes**" if member.required else "no",
            *([] if own_only else [_code(member.declared_in.__name__)]),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def interface_tables() -> str:
    """The interface table as Markdown: the supported versions, one table per SGLang class, other
    versions' names."""
    from sglang_plugin_runtime.platforms._contract import interface_rows, render_call
    from sglang_plugin_runtime.platforms._describe import host_versions

    rows = interface_rows()
    versions = host_versions()
    lines = [f"Supported SGLang versions: {', '.join(versions)}.", ""]
    for owner, title in _OWNER_TITLES.items():
        lines += [
            f"### {title}",
            "",
            "| member | SGLang's signature | how SGLang calls it | versions |",
            "|---|---|---|---|",
        ]
        for row in (r for r in rows if r.get("owner") == owner):
            shape = f"{'@classmethod ' if row['kind'] == 'classmethod' else ''}{row['signature']}"
            shape = _code(shape) if row["signature"] else row["kind"]
            calls = [
                f"{_code(render_call(c, row['name']))} ({_cell(c['site'])})"
                for c in row.get("calls", ())
            ]
            if row.get("replacement"):
                status = (
                    f"retired; served by {', '.join(row['served_by'])} and the runtime "
                    f"(DeprecationWarning): override {_code(row['replacement'])}"
                )
            else:
                first = row["versions"][0]
                status = ", ".join(row["versions"]) if first == versions[0] else f"since {first}"
            lines.append(
                f"| {_code(row['name'])} | {shape} | {'<br>'.join(calls) or 'not called'} | "
                f"{status} |"
            )
        lines.append("")
    lines += [
        "### Names of other SGLang versions",
        "",
        "Not declared by the newest release or SGLang main: names of earlier releases (what each "
        "release declares and calls: [per-release judging](#judged-against-each-sglang-release)) "
        "and of older versions. A plugin that defines one is accepted silently, and "
        "`sglang-plugins doctor` lists it.",
        "",
        "| name | where it comes from |",
        "|---|---|",
    ]
    lines += [
        f"| {_code(row['name'])} | {_cell(row['origin'])} |" for row in rows if "origin" in row
    ]
    return "\n".join(lines)


def _changes(before: dict[str, Any], after: dict[str, Any]) -> str:
    """What changed from one release's members (``name -> shape``) to the next's, as a table
    cell."""
    said = []
    for name in [*after, *(n for n in before if n not in after)]:
        was, now = before.get(name), after.get(name)
        if was is None or now is None:
            required = " (required)" if now and now.get("required") else ""
            said.append(f"{'+' if was is None else '−'}{_code(name)}{required}")
        elif {**was, "in": ""} != {**now, "in": ""}:
            flip = {(False, True): " (now required)", (True, False): " (no longer required)"}
            note = flip.get((bool(was.get("required")), bool(now.get("required"))), "")
            said.append(f"~{_code(name)}{note}")
    return ", ".join(said) or "-"


def release_matrix() -> str:
    """One row per SGLang release with a plugin system: what its platform contract asks of a plugin
    and what changed from the release before, from the runtime's data of the wheels."""
    from sglang_plugin_runtime import _sglang_releases as data

    listed = {r["version"]: r for r in data._data("releases.json")["releases"]}
    contract = data._data("contract.json")
    lines = [
        "| release | same plugin layer | SRT platform: members (required) | changed from the "
        "release before | `PlatformEnum`, capabilities | resolution hooks | diffusion "
        "`Platform`: members (required) | changed from the release before |",
        "|---|---|---|---|---|---|---|---|",
    ]
    previous = None
    for release in data.releases():
        row = [release, ", ".join(listed[release]["same_plugin_layer"]) or "-"]
        for host in ("srt", "diffusion"):
            members = data.contract(release, host)
            required = sum(1 for shape in members.values() if shape.get("required"))
            old = data.contract(previous, host) if previous else None
            row += [f"{len(members)} ({required})", "-" if old is None else _changes(old, members)]
            if host == "srt":
                enum = (
                    [
                        c
                        for c in data.diff(previous, release)
                        if c["section"] in ("PlatformEnum", "capabilities")
                    ]
                    if previous
                    else []
                )
                said = [f"{'+' if c['change'] == 'added' else '−'}{_code(c['name'])}" for c in enum]
                hooks = [
                    w for w in contract["resolution_hooks"].values() if release in data.held(w)
                ]
                row += [", ".join(said) or "-", str(len(hooks) or "none")]
        lines.append(f"| {' | '.join(row)} |")
        previous = release
    return "\n".join(lines)


def _resolve(target: str) -> type:
    module, _, name = target.partition(":") if ":" in target else target.rpartition(".")
    cls: type = getattr(importlib.import_module(module), name)
    return cls


def sync(markdown: str) -> str:
    """``markdown`` with every generated region rewritten from the code."""

    def region(match: re.Match[str]) -> str:
        kind, args = match.group("kind"), match.group("args").split()
        if kind == "contract-table":
            table = contract_table(_resolve(args[0]), own_only=args[1:] == ["own"])
        elif kind == "release-matrix":
            table = release_matrix()
        else:
            table = interface_tables()
        start = f"<!-- {kind}:start{''.join(' ' + a for a in args)} -->"
        note = f"<!-- generated from the code by `{COMMAND}`: do not edit -->"
        return f"{start}\n{note}\n\n{table}\n\n<!-- {kind}:end -->"

    return _REGION.sub(region, markdown)


def pages() -> list[Path]:
    """The pages that hold generated tables."""
    return [p for p in sorted(DOCS.rglob("*.md")) if _REGION.search(p.read_text(encoding="utf-8"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if a page differs from the code",
    )
    check = parser.parse_args(argv).check
    stale = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        generated = sync(text)
        if generated != text:
            stale.append(str(page.relative_to(DOCS.parent)))
            if not check:
                page.write_text(generated, encoding="utf-8")
    verb = "differ from the code" if check else "rewritten"
    print(f"{verb}: {', '.join(stale)}" if stale else "the generated tables match the code")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
