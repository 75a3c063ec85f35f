#!/usr/bin/env python3
"""The functions' IAM policies compared with what the functions call, so neither can drift.

`function_policies.py` writes each function's policy from the transformed template; the local
API enforces it and appends every call it allowed (with the grant that allowed it: the action
and resource as the policy writes them) and every call it refused to a seen file. This program

- keeps the grants table of `docs/permissions.md` (between its markers) equal to the policies:
  `--write` rewrites it, otherwise a difference fails;
- with `--seen FILE` (after the whole test command): fails on every refused call, naming the
  function, the action and the resource; and on every grant no call was seen to use, unless
  `docs/permissions.md` lists it under "Granted without being seen" with its reason. A reason
  for a grant the policies no longer make fails too.

    check_policies.py --policies FILE [--doc docs/permissions.md] [--seen FILE] [--write]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "<!-- grants: written by tests/template/check_policies.py --write from the template -->"
END = "<!-- end of grants -->"
KEPT_HEADING = "## Granted without being seen"
# A kept grant: - `Function` `action` `resource`: reason
KEPT_LINE = re.compile(r"^- `([A-Za-z]+)` `([^`]+)` `([^`]+)`: (.+)$")


def grants(policies: dict) -> dict[str, list[tuple[str, str, str]]]:
    """Per function logical id: (action, resource, condition) of every allowed pair."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for binary, function in sorted(policies["functions"].items()):
        pairs = []
        for statement in function["statements"]:
            # The event source mappings' managed policies: attached by the transform for
            # Lambda's poller, enforced, not required to be used by the code.
            if statement["effect"] != "Allow" or statement["id"].startswith("managed:"):
                continue
            condition = json.dumps(statement["condition"], sort_keys=True) if statement["condition"] else ""
            for action in statement["actions"]:
                for resource in statement["resources"]:
                    pairs.append((action, resource, condition))
        out[function["logicalId"]] = pairs
    return dict(sorted(out.items()))


def grants_table(policies: dict) -> str:
    lines = [BEGIN, ""]
    for function, pairs in grants(policies).items():
        lines.append(f"### {function}")
        lines.append("")
        lines.append("| Action | Resource | Condition |")
        lines.append("|---|---|---|")
        for action, resource, condition in pairs:
            shown = f"`{condition}`" if condition else ""
            lines.append(f"| `{action}` | `{resource}` | {shown} |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def kept_reasons(doc: str) -> dict[tuple[str, str, str], str]:
    reasons = {}
    section = doc.split(KEPT_HEADING, 1)[1] if KEPT_HEADING in doc else ""
    section = section.split("\n## ", 1)[0]
    for line in section.splitlines():
        match = KEPT_LINE.match(line.strip())
        if match:
            function, action, resource, reason = match.groups()
            reasons[(function, action, resource)] = reason
    return reasons


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", type=Path, required=True)
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "permissions.md")
    parser.add_argument("--seen", type=Path)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    policies = json.loads(args.policies.read_text(encoding="utf-8"))
    doc = args.doc.read_text(encoding="utf-8")
    if BEGIN not in doc or END not in doc:
        print(f"{args.doc}: the grants markers are missing")
        return 1
    before, rest = doc.split(BEGIN, 1)
    current, after = rest.split(END, 1)
    table = grants_table(policies)
    problems = []
    if BEGIN + current + END != table:
        if args.write:
            doc = before + table + after
            args.doc.write_text(doc, encoding="utf-8")
            print(f"{args.doc}: grants table written")
        else:
            problems.append(
                f"{args.doc}: the grants table is not the template's: run "
                "tests/template/check_policies.py --policies FILE --write"
            )
    if args.seen:
        used: dict[str, set[tuple[str, str]]] = defaultdict(set)
        refused = set()
        calls = 0
        for line in args.seen.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            calls += 1
            if entry.get("refused"):
                refused.add((entry["function"], entry["action"], entry["resource"]))
            else:
                used[entry["function"]].add((entry["action"], entry["resource"]))
        for function, action, resource in sorted(refused):
            problems.append(f"{function} called {action} on {resource}, which its policy does not allow")
        reasons = kept_reasons(doc)
        granted = set()
        for function, pairs in grants(policies).items():
            for action, resource, _ in pairs:
                granted.add((function, action, resource))
                if (action, resource) not in used[function] and (function, action, resource) not in reasons:
                    problems.append(
                        f"{function} is granted {action} on {resource}, which no call used: narrow "
                        f"the policy, or give the reason under '{KEPT_HEADING}' in {args.doc.name}"
                    )
        for key in sorted(set(reasons) - granted):
            problems.append(f"{args.doc.name} gives a reason for {' '.join(key)}, which the policies do not grant")
        print(
            f"{sum(len(v) for v in used.values())} grants used by the functions' calls, "
            f"{len(refused)} calls refused, {len(granted)} grants in the policies"
        )
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
