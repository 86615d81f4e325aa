"""Stale memory in the editor: diagnostics on the fact's line in its topic file and on the
topic's index entry, code actions (retire now, keep and re-verify, open the anchor), and the
``reverie.server.checkMemory`` command, which returns ``reverie check --json``.

The check runs off the event loop (``services.check``); a person's decision is a recorded run
through the server's memory writer, so undo reverts it.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

if TYPE_CHECKING:
    from reverie.anchors.memory import FactStatus, MemoryCheck
    from reverie.lsp.context import ServerContext, WorkspaceContext

logger = logging.getLogger(__name__)

SOURCE = "reverie.staleness"
CODE = "stale-fact"


def check(tracker: WorkspaceContext) -> MemoryCheck:
    """The workspace's memory checked now (blocking: call off the event loop)."""
    from reverie.services.check import check_workspace

    return check_workspace(tracker.settings, tracker.paths.workspace)


def _fact_diagnostic(status: FactStatus) -> types.Diagnostic:
    paths = [c.anchor.value if c.anchor.kind == "path" else (c.anchor.where or "")
             for c in status.checks if c.status == "stale"]
    return types.Diagnostic(
        range=types.Range(start=types.Position(line=status.fact.line, character=0),
                          end=types.Position(line=status.fact.end - 1,
                                             character=len(status.fact.lines[-1]))),
        message=f"Stale memory: {status.reason}",
        severity=types.DiagnosticSeverity.Warning,
        code=CODE,
        source=SOURCE,
        data={"topic": status.fact.topic, "line": status.fact.line,
              "anchors": [p for p in dict.fromkeys(paths) if p]},
    )


def diagnostics_by_file(report: MemoryCheck, index_lines: list[str]
                        ) -> dict[Path, list[types.Diagnostic]]:
    """Stale facts on their lines, and one diagnostic per index entry whose topic has any."""
    from reverie.memory.store import INDEX_NAME, parse_index

    out: dict[Path, list[types.Diagnostic]] = {
        report.memory_dir / t.name: [] for t in report.topics}
    stale: dict[str, list[FactStatus]] = {}
    for status in report.facts:
        if status.status == "stale":
            out[report.memory_dir / status.fact.topic].append(_fact_diagnostic(status))
            stale.setdefault(status.fact.topic, []).append(status)
    index: list[types.Diagnostic] = []
    for entry in parse_index("\n".join(index_lines)).entries:
        found = stale.get(entry.target_path)
        if not found:
            continue
        count = f"{len(found)} stale fact{'s' if len(found) != 1 else ''}"
        index.append(types.Diagnostic(
            range=types.Range(start=types.Position(line=entry.line, character=0),
                              end=types.Position(line=entry.line,
                                                 character=len(index_lines[entry.line]))),
            message=f"{count} in {entry.target_path}: " + "; ".join(s.reason for s in found),
            severity=types.DiagnosticSeverity.Warning, code=CODE, source=SOURCE,
            data={"topic": entry.target_path, "line": found[0].fact.line,
                  "anchors": []}))
    out[report.memory_dir / INDEX_NAME] = index
    return out


async def publish(server: ServerContext, tracker: WorkspaceContext) -> MemoryCheck:
    """Check the memory and publish what is stale (and clear what no longer is)."""
    from reverie.memory.store import INDEX_NAME

    report = await asyncio.to_thread(check, tracker)
    index_path = tracker.memory_dir / INDEX_NAME
    text = server.document_text(index_path)
    if text is None:
        try:
            text = await asyncio.to_thread(index_path.read_text, encoding="utf-8",
                                           errors="replace")
        except OSError:
            text = ""
    for path, found in diagnostics_by_file(report, text.splitlines()).items():
        uri = from_fs_path(str(path))
        if uri is not None:
            server.set_diagnostics(uri, SOURCE, found)
    return report


def code_actions(params: types.CodeActionParams) -> list[types.CodeAction]:
    """Retire now / keep and re-verify / open the anchor, for each stale-fact diagnostic."""
    from reverie.lsp.protocol import Commands

    actions: list[types.CodeAction] = []
    for diag in params.context.diagnostics:
        if diag.source != SOURCE or not isinstance(diag.data, dict):
            continue
        topic, line = diag.data.get("topic"), diag.data.get("line")
        if not isinstance(topic, str) or not isinstance(line, int):
            continue
        uri = params.text_document.uri
        folder = Path(to_fs_path(uri) or "").parent
        topic_uri = from_fs_path(str(folder / topic)) or uri
        args = [{"uri": topic_uri, "line": line}]
        actions.append(types.CodeAction(
            title="Retire this fact now (moves it to the topic's Retired section)",
            kind=types.CodeActionKind.QuickFix, diagnostics=[diag], is_preferred=True,
            command=types.Command(title="Retire fact", command=Commands.RETIRE_FACT,
                                  arguments=args)))
        actions.append(types.CodeAction(
            title="Keep this fact and re-verify it (records only the anchors that hold)",
            kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
            command=types.Command(title="Keep fact", command=Commands.KEEP_FACT,
                                  arguments=args)))
        for anchor in diag.data.get("anchors") or []:
            if isinstance(anchor, str) and anchor:
                actions.append(types.CodeAction(
                    title=f"Open {anchor}", kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    command=types.Command(title=f"Open {anchor}", command=Commands.OPEN_ANCHOR,
                                          arguments=[{"uri": topic_uri, "path": anchor}])))
    return actions


async def decide(server: ServerContext, tracker: WorkspaceContext, uri: str, line: int,
                 decision: str) -> dict[str, Any]:
    """Retire or keep the fact on ``line`` of the topic at ``uri``; the run's id and files."""
    from reverie.errors import UserError
    from reverie.services.check import decide_fact

    path = Path(to_fs_path(uri) or "")
    if path.parent.resolve() != tracker.memory_dir.resolve():
        raise UserError(f"{path.name} is not a topic file of this workspace's memory")
    result = await decide_fact(server.memory_writer, tracker.settings, tracker.paths.workspace,
                               path.name, line, "keep" if decision == "keep" else "retire")
    touched = [str(tracker.memory_dir / name) for name in result.changes.touched]
    if touched:
        tracker.memory_written([Path(p) for p in touched])
    tracker.refresh_memory_diagnostics()
    return {"runId": result.record.run_id if result.record else None, "filesTouched": touched,
            "decidedAt": datetime.now(UTC).isoformat()}


def anchor_uri(tracker: WorkspaceContext, path: str) -> str:
    """The URI of an anchor (a path inside the workspace; never outside it)."""
    from reverie.errors import UserError

    workspace = tracker.paths.workspace.resolve()
    target = (workspace / path).resolve()
    if not target.is_relative_to(workspace):
        raise UserError(f"{path} is outside the workspace")
    if not target.exists():
        raise UserError(f"{path} does not exist in the workspace (it is what went stale)")
    uri = from_fs_path(str(target))
    if uri is None:
        raise UserError(f"{path} cannot be opened")
    return uri
