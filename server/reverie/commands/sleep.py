"""Run the nightly sleep cycle now: journal the day's sessions and consolidate memory."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import date

from reverie.cli import add_workspace_argument, fail, load_settings, resolve_workspace
from reverie.sleep.models import SleepReport


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--date", help="review date YYYY-MM-DD (default: today)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def format_report(report: SleepReport) -> str:
    """The human-readable cycle report."""
    lines = [f"Sleep cycle for {report.date.isoformat()} ({report.engine} engine)"]
    if report.skipped_reason:
        lines.append(f"  skipped: {report.skipped_reason}")
    lines.append(f"  light sleep    {report.sessions_found} session(s) to review")
    if not report.skipped_reason:
        lines.append(f"  deep sleep     {report.summaries_ok} summarised, "
                     f"{report.summaries_failed} failed, {report.candidates} memory candidate(s)")
        if report.journal_path:
            lines.append(f"                 journal: {report.journal_path}")
        rem = f"  REM            memory entries {report.entries_before} -> {report.entries_after}"
        if report.run_id:
            rem += f" (run {report.run_id}; undo with `reverie undo {report.run_id}`)"
        lines.append(rem)
        if report.rem_error:
            lines.append(f"                 memory unchanged: {report.rem_error}")
    hk = report.housekeeping
    lines.append(
        f"  housekeeping   {hk.journals_deleted} journal(s), {hk.notes_deleted} notes dir(s), "
        f"{hk.transcripts_deleted} transcript(s) removed; {hk.bytes_reclaimed} bytes reclaimed"
    )
    for error in hk.errors:
        lines.append(f"                 could not remove {error}")
    lines.append(f"  took {report.duration_seconds:.1f}s")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from reverie.llm.errors import LLMError
    from reverie.services.wiring import memory_writer
    from reverie.sleep.cycle import SleepCycle

    workspace = resolve_workspace(args)
    review_date = None
    if args.date:
        try:
            review_date = date.fromisoformat(args.date)
        except ValueError:
            return fail(f"--date must be YYYY-MM-DD, got {args.date!r}")
    settings = load_settings()
    try:
        cycle = SleepCycle(settings, writer=memory_writer())
        report = asyncio.run(cycle.run(workspace, review_date))
    except LLMError as exc:
        return fail(str(exc))
    except OSError as exc:  # a full disk, a read-only data dir: every write is atomic, so the
        # journal, the state and the memory are as they were before the failed write
        where = f" ({exc.filename})" if exc.filename else ""
        return fail(f"sleep cycle stopped: {exc.strerror or exc}{where}; nothing was half-"
                    "written and the next run starts over")
    if args.json:
        print(json.dumps(report.to_json_dict(), indent=2))
    else:
        print(format_report(report))
    return 0
