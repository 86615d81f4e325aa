"""A Kilo Code session database for tests, built by Kilo's own schema and written as Kilo writes.

The tables are the SQL drizzle generates from Kilo-Org/kilocode
``packages/opencode/src/session/session.sql.ts`` (``session``, ``message``, ``part``, with the
columns, NOT NULLs, foreign keys and indexes declared there), ``project/project.sql.ts``
(``project``) and ``storage/schema.sql.ts`` (``time_created`` / ``time_updated`` on every
table). The connection is set up the way ``storage/database.ts`` sets up Kilo's:
``busy_timeout = 5000``, ``journal_mode = WAL``, ``synchronous = NORMAL``, ``foreign_keys = ON``.
``data`` columns hold the message or part JSON without its ids, as ``session/message-v2.ts``
stores them. Ids ascend the way Kilo's ``MessageID.ascending`` / ``PartID.ascending`` do.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE `project` (
\t`id` text PRIMARY KEY,
\t`worktree` text NOT NULL,
\t`vcs` text,
\t`name` text,
\t`icon_url` text,
\t`icon_color` text,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL,
\t`time_initialized` integer,
\t`sandboxes` text NOT NULL,
\t`commands` text
);
CREATE TABLE `session` (
\t`id` text PRIMARY KEY,
\t`project_id` text NOT NULL,
\t`workspace_id` text,
\t`parent_id` text,
\t`slug` text NOT NULL,
\t`directory` text NOT NULL,
\t`title` text NOT NULL,
\t`version` text NOT NULL,
\t`share_url` text,
\t`summary_additions` integer,
\t`summary_deletions` integer,
\t`summary_files` integer,
\t`summary_diffs` text,
\t`revert` text,
\t`permission` text,
\t`current_state` text,
\t`recent_progress` text,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL,
\t`time_compacting` integer,
\t`time_archived` integer,
\tCONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`)
\t\tREFERENCES `project`(`id`) ON DELETE CASCADE
);
CREATE TABLE `message` (
\t`id` text PRIMARY KEY,
\t`session_id` text NOT NULL,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL,
\t`data` text NOT NULL,
\tCONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`)
\t\tREFERENCES `session`(`id`) ON DELETE CASCADE
);
CREATE TABLE `part` (
\t`id` text PRIMARY KEY,
\t`message_id` text NOT NULL,
\t`session_id` text NOT NULL,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL,
\t`data` text NOT NULL,
\tCONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`)
\t\tREFERENCES `message`(`id`) ON DELETE CASCADE
);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_workspace_idx` ON `session` (`workspace_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
"""



class KiloDb:
    """Writes a Kilo database as the CLI does: one short transaction per change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.exists()
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=5)
        for pragma in ("busy_timeout = 5000", "journal_mode = WAL", "synchronous = NORMAL",
                       "foreign_keys = ON"):
            self.conn.execute(f"PRAGMA {pragma}")
        if fresh:
            self.conn.executescript(SCHEMA)
        self.clock = int(time.time() * 1000)  # Kilo stamps rows with ``Date.now()``
        self._next = 0

    def close(self) -> None:
        self.conn.close()

    def tick(self) -> int:
        """Now (in ms), strictly after the last stamp: every change moves the time on."""
        self.clock = max(int(time.time() * 1000), self.clock + 1)
        return self.clock

    def _id(self, prefix: str) -> str:
        self._next += 1
        return f"{prefix}_{self._next:012d}"

    def project(self, worktree: str, pid: str = "prj_1") -> str:
        now = self.tick()
        self.conn.execute("INSERT OR IGNORE INTO project (id, worktree, vcs, time_created, "
                          "time_updated, sandboxes) VALUES (?, ?, 'git', ?, ?, '[]')",
                          (pid, worktree, now, now))
        return pid

    def session(self, directory: str, title: str | None = None, parent: str | None = None,
                sid: str | None = None) -> str:
        pid = self.project(directory)
        sid = sid or self._id("ses")
        now = self.tick()
        title = title or f"New session - 2026-05-29T10:{self._next % 60:02d}:00.000Z"
        self.conn.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, "
            "time_created, time_updated) VALUES (?, ?, ?, 'brave-otter', ?, ?, '7.2.1', ?, ?)",
            (sid, pid, parent, directory, title, now, now))
        return sid

    def touch(self, sid: str) -> None:
        self.conn.execute("UPDATE session SET time_updated = ? WHERE id = ?", (self.tick(), sid))

    def set_title(self, sid: str, title: str) -> None:
        self.conn.execute("UPDATE session SET title = ?, time_updated = ? WHERE id = ?",
                          (title, self.tick(), sid))

    def user(self, sid: str, text: str, *extra: dict[str, Any]) -> str:
        now = self.tick()
        mid = self._id("msg")
        info = {"role": "user", "time": {"created": now}, "agent": "code",
                "model": {"providerID": "kilo", "modelID": "anthropic/claude-sonnet-4.5"}}
        with self.conn:
            self.conn.execute("BEGIN")
            self._message(mid, sid, now, info)
            self.part(sid, mid, {"type": "text", "text": text}, touch=False)
            for part in extra:
                self.part(sid, mid, part, touch=False)
            self.touch(sid)
        return mid

    def assistant(self, sid: str, parent: str, cwd: str, **extra: Any) -> str:
        now = self.tick()
        mid = self._id("msg")
        info = {"role": "assistant", "time": {"created": now}, "parentID": parent,
                "modelID": "anthropic/claude-sonnet-4.5", "providerID": "kilo", "mode": "code",
                "agent": "code", "path": {"cwd": cwd, "root": cwd}, "cost": 0,
                "tokens": {"input": 0, "output": 0, "reasoning": 0,
                           "cache": {"read": 0, "write": 0}}, **extra}
        self._message(mid, sid, now, info)
        self.touch(sid)
        return mid

    def update_message(self, mid: str, sid: str, **fields: Any) -> None:
        raw = self.conn.execute("SELECT data FROM message WHERE id = ?", (mid,)).fetchone()[0]
        info = {**json.loads(raw), **fields}
        self.conn.execute("UPDATE message SET data = ?, time_updated = ? WHERE id = ?",
                          (json.dumps(info), self.tick(), mid))
        self.touch(sid)

    def _message(self, mid: str, sid: str, now: int, info: dict[str, Any]) -> None:
        self.conn.execute("INSERT INTO message (id, session_id, time_created, time_updated, "
                          "data) VALUES (?, ?, ?, ?, ?)", (mid, sid, now, now, json.dumps(info)))

    def part(self, sid: str, mid: str, data: dict[str, Any], pid: str | None = None,
             touch: bool = True) -> str:
        """Insert a part, or (given ``pid``) replace it: Kilo's ``updatePart`` upserts."""
        now = self.tick()
        pid = pid or self._id("prt")
        self.conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET data = excluded.data, "
            "time_updated = excluded.time_updated", (pid, mid, sid, now, now, json.dumps(data)))
        if touch:
            self.touch(sid)
        return pid

    def tool(self, sid: str, mid: str, tool: str, args: dict[str, Any], output: str = "",
             status: str = "completed", pid: str | None = None, **meta: Any) -> str:
        call = f"toolu_{self._next:04d}"
        state: dict[str, Any] = {"status": status, "input": args}
        if status == "completed":
            state |= {"output": output, "title": tool, "metadata": meta,
                      "time": {"start": self.clock, "end": self.clock + 10}}
        elif status == "error":
            state |= {"error": output, "time": {"start": self.clock, "end": self.clock + 10}}
        elif status == "running":
            state |= {"time": {"start": self.clock}}
        else:
            state |= {"raw": json.dumps(args)}
        return self.part(sid, mid, {"type": "tool", "callID": call, "tool": tool,
                                    "state": state}, pid=pid)

    def step(self, sid: str, mid: str, tokens: dict[str, Any]) -> str:
        self.part(sid, mid, {"type": "step-start"})
        return self.part(sid, mid, {"type": "step-finish", "reason": "tool-calls", "cost": 0.01,
                                    "tokens": tokens})
