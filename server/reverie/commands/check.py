"""Check every memory fact against the working tree: valid, stale (and why) or unverifiable.

``reverie check [--workspace DIR] [--json]``. ``--json`` prints ``{"facts": [{"topic", "text",
"status", "reason", "anchors", "verified"}], "stale", "valid", "unverifiable"}``. Exit 0 whatever
the statuses: it is a report (a dream retires what is stale).
"""

from __future__ import annotations

import argparse
import json

from reverie.cli import add_workspace_argument, load_settings, resolve_workspace

_ORDER = {"stale": 0, "unverifiable": 1, "valid": 2}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from reverie.services.check import check_workspace

    settings = load_settings()
    workspace = resolve_workspace(args)
    report = check_workspace(settings, workspace)
    if args.json:
        print(json.dumps(report.as_json(), indent=2, ensure_ascii=False))
        return 0
    total = len(report.facts)
    print(f"memory: {report.memory_dir}")
    print(f"{total} fact{'s' if total != 1 else ''}: {report.count('valid')} valid, "
          f"{report.count('stale')} stale, {report.count('unverifiable')} unverifiable")
    for fact in sorted(report.facts, key=lambda f: (_ORDER[f.status], f.fact.topic,
                                                    f.fact.line)):
        print()
        where = f"{fact.fact.topic}:{fact.fact.line + 1}"
        print(f"{fact.status.upper():<13} {where}")
        print(f"  {fact.fact.text}")
        if fact.status == "valid":
            checked = ", ".join(c.anchor.describe() for c in fact.checks)
            print(f"  verified {fact.verified.isoformat() if fact.verified else 'now'}"
                  + (f" against {checked}" if checked else ""))
        elif fact.reason:
            print(f"  {fact.reason}")
        if fact.aging:
            print(f"  aging: not confirmed since {fact.fact.confirmed}")
    return 0
