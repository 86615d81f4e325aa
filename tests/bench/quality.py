"""What the offline engine remembers, measured on the labelled evaluation set (tests/eval).

For every project in ``tests/fixtures/eval`` and every engine path (per-session ``notes``,
``dream`` after each session, nightly ``sleep``), runs the real CLI in temp dirs and scores the
output against the project's labels: recall of durable facts, precision (share of useful
lines), wrong claims, leaked secrets, index lines over 150 characters, lines, seconds.

Run:
  .venv/bin/python tests/bench/quality.py                 # the table
  .venv/bin/python tests/bench/quality.py --details       # + missed facts and bad lines
  .venv/bin/python tests/bench/quality.py --json          # everything as JSON
  .venv/bin/python tests/bench/quality.py --project acme-web --path dream --keep /tmp/q
  .venv/bin/python tests/bench/quality.py --llm           # + the model-backed paths (fake LLM)
  .venv/bin/python tests/bench/quality.py --real          # the real-session rubric grades
  .venv/bin/python tests/bench/quality.py --real --details
  .venv/bin/python tests/bench/quality.py --real --project m-gemini
  .venv/bin/python tests/bench/quality.py --real --llm    # with the endpoint in REVERIE_* env
(``--keep DIR`` leaves the agent homes, notes and memory dirs there to read.)

``--llm`` also runs notes / dream / sleep with ``REVERIE_PROVIDER=openai`` against the fake LLM
server and prints what the prompts carry and what survives validation (``tests/eval/eval_llm.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:
    # run by hand (tests/bench/quality.py): tests/ replaces this folder on sys.path, as
    # under pytest (pythonpath in pyproject.toml), so `support` and `bench` import alike
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from eval.eval_harness import PATHS, REAL_FIXTURES, PathResult, pool, project_names, run_all


def _pct(value: float | None) -> str:
    return "   -" if value is None else f"{value * 100:4.0f}%"


def table(results: Sequence[PathResult]) -> str:
    head = (f"{'path':<6} {'project':<12} {'recall':>6} {'prec':>5} {'wrong':>5} {'leaks':>5} "
            f"{'>150':>4} {'hand':>4} {'chat':>4} {'lines':>5} {'entries':>7} {'runs':>4} "
            f"{'seconds':>7} {'s/sess':>6} {'job/sess':>8}")
    rows = [head, "-" * len(head)]
    ordered = sorted(results, key=lambda r: (PATHS.index(r.path), r.project))
    combined = pool(list(results))
    heldout = pool(list(results), heldout=True)
    for result in [*ordered, *(combined[p] for p in PATHS if p in combined),
                   *(heldout[p] for p in PATHS if p in heldout)]:
        s = result.score
        per = f"{result.seconds / result.sessions:6.3f}" if result.sessions else "     -"
        job = (f"{result.engine_seconds / result.sessions:8.3f}"
               if result.sessions and result.engine_seconds else "       -")
        hand = (f"{len(s.hand_kept)}/{len(s.hand_expected)}" if s.hand_expected else "-")
        rows.append(
            f"{result.path:<6} {result.project:<12} {_pct(s.recall):>6} {_pct(s.precision):>5} "
            f"{s.wrong:>5} {s.leaks:>5} {s.long_index_lines:>4} {hand:>4} "
            f"{s.chatty if result.path != 'notes' else '-':>4} {s.lines:>5} "
            f"{result.entries if result.path != 'notes' else '-':>7} {result.runs:>4} "
            f"{result.seconds:7.2f} {per} {job}")
    return "\n".join(rows)


def details(results: Sequence[PathResult]) -> str:
    out = []
    for result in results:
        data = result.score.as_json()
        out.append(f"\n== {result.path} / {result.project}")
        if result.errors:
            out.append("  errors: " + "; ".join(result.errors))
        out.append("  missed: " + (", ".join(data["missed"]) or "-"))
        if data["hand_lost"]:
            out.append("  hand-written lines lost: " + ", ".join(data["hand_lost"]))
        for bad in data["bad_lines"]:
            out.append(f"  {bad['label']:<5} {bad['by'] or '':<24} {bad['file']}: "
                       f"{bad['text'][:160]}")
    return "\n".join(out)


def as_json(results: Sequence[PathResult]) -> dict[str, Any]:
    combined = pool(list(results))
    heldout = pool(list(results), heldout=True)
    return {"results": [r.as_json() for r in results],
            "totals": {p: combined[p].as_json() for p in PATHS if p in combined},
            "heldout": {p: heldout[p].as_json() for p in PATHS if p in heldout}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", action="append",
                        choices=sorted({*project_names(), *project_names(REAL_FIXTURES)}),
                        help="a synthetic project, or with --real a real one")
    parser.add_argument("--path", action="append", choices=PATHS)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--details", action="store_true")
    parser.add_argument("--subprocess", action="store_true",
                        help="run each command as `python -m reverie` (slower, same result)")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR")
    parser.add_argument("--llm", action="store_true",
                        help="also run the model-backed paths against the fake LLM server")
    parser.add_argument("--real", action="store_true",
                        help="grade the real public sessions (tests/fixtures/real) by the rubric")
    args = parser.parse_args(argv)
    keep = args.keep.resolve() if args.keep else None
    known = project_names(REAL_FIXTURES) if args.real else project_names()
    if args.project and set(args.project) - set(known):
        parser.error(f"--project: not a {'real' if args.real else 'synthetic'} project: "
                     + ", ".join(sorted(set(args.project) - set(known))))
    if args.real:
        return _real(args, keep)
    results = run_all(args.project, paths=tuple(args.path or PATHS), subprocess=args.subprocess,
                      keep=keep)
    llm = []
    if args.llm:
        from eval.eval_llm import llm_table, run_llm_all

        llm = run_llm_all(args.project or project_names(), keep=keep)
    if args.json:
        report = as_json(results)
        if args.llm:
            report["llm"] = [r.summary() for r in llm]
        print(json.dumps(report, indent=2))
        return 0
    print(table(results))
    if args.details:
        print(details(results))
    if args.llm:
        print()
        print(llm_table(llm))
    return 0


def _real(args: argparse.Namespace, keep: Path | None) -> int:
    import os

    from eval.real_eval import grade_all, means, real_table

    extra: dict[str, str] | None = None
    if args.llm:
        # the real endpoint the user configured (docs/llm.md), never the fake one
        extra = {k: v for k, v in os.environ.items() if k.startswith("REVERIE_")
                 and k not in ("REVERIE_AGENT_HOME", "REVERIE_DATA_DIR", "REVERIE_CONFIG_DIR")}
        if not extra.get("REVERIE_PROVIDER") or extra["REVERIE_PROVIDER"] == "offline":
            print("--real --llm: no model endpoint is set (REVERIE_PROVIDER, REVERIE_MODEL, "
                  "REVERIE_BASE_URL, REVERIE_API_KEY; docs/llm.md): nothing run")
            return 2
    grades = grade_all(args.project, keep=keep, extra_env=extra)
    if args.json:
        notes, memory = means(grades)
        print(json.dumps({"notes_mean": notes, "memory_mean": memory,
                          "projects": [{"project": g.project, "notes": g.notes,
                                        "memory": g.memory, "wrong": g.wrong,
                                        "errors": g.errors} for g in grades]}, indent=2))
        return 0
    print(real_table(grades, details=args.details))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
