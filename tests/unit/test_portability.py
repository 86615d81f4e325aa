"""The server package must import and run on Windows and macOS, not only on Linux.

Every module under ``server/reverie`` is parsed (never imported, so this runs on any OS) and
checked for what breaks elsewhere:

- a top-level import of a POSIX-only module (``fcntl``, ``termios``, ``resource``, ``pwd``,
  ``grp``, ...): on Windows the import itself fails and takes the whole feature down;
- a POSIX-only ``os`` / ``signal`` name (``os.fork``, ``os.O_NOFOLLOW``, ``signal.SIGKILL``, ...)
  used outside a platform branch;
- ``os.kill(pid, 0)`` anywhere: on Windows it does not probe the process, it terminates it.

A platform branch is code under ``if sys.platform ...`` / ``if os.name ...`` /
``if hasattr(os, ...)`` (either arm), after such an early ``return`` in the same function, or
inside a ``try`` that catches ``ImportError`` / ``AttributeError``; ``getattr(os, "X", d)`` is
portable by construction.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "reverie"

POSIX_ONLY_MODULES = {"fcntl", "termios", "resource", "pwd", "grp", "posix", "tty", "pty",
                      "syslog", "crypt", "spwd", "nis"}
POSIX_ONLY_NAMES = {
    "os": {"fork", "forkpty", "setsid", "getsid", "killpg", "getpgid", "setpgid", "getpgrp",
           "getuid", "geteuid", "getgid", "getegid", "setuid", "setgid", "nice", "getpriority",
           "setpriority", "PRIO_PROCESS", "sched_setscheduler", "sched_getscheduler",
           "sched_param", "SCHED_IDLE", "SCHED_BATCH", "mkfifo", "mknod", "O_NOFOLLOW",
           "O_DIRECTORY", "O_NONBLOCK", "O_CLOEXEC", "O_NOCTTY", "WNOHANG", "wait3", "wait4",
           "getloadavg", "statvfs", "fstatvfs", "chown", "lchown", "fchown", "fchmod",
           "sysconf", "pipe2", "openpty", "ttyname", "get_blocking", "set_blocking",
           "sched_getaffinity", "sched_setaffinity", "getrusage", "posix_spawn",
           "posix_fadvise", "fdatasync", "sync"},
    "signal": {"SIGKILL", "SIGHUP", "SIGSTOP", "SIGCONT", "SIGUSR1", "SIGUSR2", "SIGALRM",
               "SIGCHLD", "SIGQUIT", "SIGPIPE", "SIGTSTP", "SIGTTIN", "SIGTTOU", "alarm",
               "pause", "setitimer", "getitimer", "siginterrupt", "pthread_kill",
               "pthread_sigmask", "sigwait"},
}
PLATFORM_WORDS = ("sys.platform", "os.name", "hasattr(", "platform.system", "IS_WINDOWS",
                  "IS_POSIX", "ON_WINDOWS")
GUARD_EXCEPTIONS = {"ImportError", "ModuleNotFoundError", "AttributeError"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _is_platform_test(node: ast.expr) -> bool:
    text = ast.unparse(node)
    return any(word in text for word in PLATFORM_WORDS)


def _catches_guard(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = [handler.type] if not isinstance(handler.type, ast.Tuple) else handler.type.elts
    return any(isinstance(n, ast.Name) and n.id in GUARD_EXCEPTIONS for n in names)


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return | ast.Raise | ast.Continue)


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.If | ast.IfExp) and child is not parent.test \
                and _is_platform_test(parent.test):
            return True
        if isinstance(parent, ast.BoolOp) and _is_platform_test(parent):
            return True  # `hasattr(os, "nice") and os.nice(...)`
        if isinstance(parent, ast.Try) and child in parent.body \
                and any(_catches_guard(h) for h in parent.handlers):
            return True
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
            body = parent.body
            index = body.index(child) if child in body else len(body)
            for earlier in body[:index]:
                if isinstance(earlier, ast.If) and _is_platform_test(earlier.test) \
                        and _exits(earlier.body):
                    return True
        child, parent = parent, parents.get(parent)
    return False


def _top_level_imports(tree: ast.Module) -> Iterator[tuple[ast.stmt, str]]:
    """Imports executed when the module is imported (module body, and its ifs and trys)."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                yield stmt, alias.name.split(".")[0]
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
            yield stmt, stmt.module.split(".")[0]
        elif isinstance(stmt, ast.If | ast.Try):
            for field in ("body", "orelse", "finalbody"):
                pending.extend(getattr(stmt, field, []))
            for handler in getattr(stmt, "handlers", []):
                pending.extend(handler.body)


def _violations(path: Path, root: Path = PACKAGE.parent) -> list[str]:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    parents = _parents(tree)
    where = path.relative_to(root)
    found: list[str] = []
    for stmt, module in _top_level_imports(tree):
        if module in POSIX_ONLY_MODULES and not _guarded(stmt, parents):
            found.append(f"{where}:{stmt.lineno}: top-level import of POSIX-only `{module}`")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in POSIX_ONLY_NAMES:
            for alias in node.names:
                if alias.name in POSIX_ONLY_NAMES[node.module] and not _guarded(node, parents):
                    found.append(f"{where}:{node.lineno}: `from {node.module} import "
                                 f"{alias.name}` outside a platform branch")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            names = POSIX_ONLY_NAMES.get(node.value.id, set())
            if node.attr in names and not _guarded(node, parents):
                found.append(f"{where}:{node.lineno}: `{node.value.id}.{node.attr}` outside a "
                             "platform branch")
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "os.kill" \
                and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) \
                and node.args[1].value == 0:
            found.append(f"{where}:{node.lineno}: `os.kill(pid, 0)` terminates the process on "
                         "Windows; use psutil")
    return found


def test_no_posix_only_code_outside_platform_branches() -> None:
    problems = [problem for path in _modules() for problem in _violations(path)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("source, expected", [
    ("import fcntl\n", 1),
    ("import sys\nif sys.platform != 'win32':\n    import fcntl\n", 0),
    ("try:\n    import fcntl\nexcept ImportError:\n    fcntl = None\n", 0),
    ("def f():\n    import fcntl\n", 0),  # not at import time
    ("import os\nos.kill(5, 0)\n", 1),
    ("import os\nif os.name == 'posix':\n    os.kill(5, 0)\n", 1),  # forbidden everywhere
    ("import os\nfd = os.open('x', os.O_RDONLY | os.O_NOFOLLOW)\n", 1),
    ("import os\nfd = os.open('x', os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))\n", 0),
    ("import os, sys\ndef f():\n    if sys.platform == 'win32':\n        return\n    os.setsid()\n",
     0),
    ("import os\ndef f():\n    os.setsid()\n", 1),
    ("import os\nx = hasattr(os, 'nice') and os.nice(1)\n", 0),
    ("import signal\nsig = signal.SIGKILL\n", 1),
    ("from os import fork\n", 1),
    ("import signal, sys\nsig = signal.SIGTERM if sys.platform == 'win32' else signal.SIGKILL\n",
     0),
])
def test_checker_itself(tmp_path: Path, source: str, expected: int) -> None:
    """The checker flags what it must and lets platform branches through (so it can fail)."""
    probe = tmp_path / "probe.py"
    probe.write_text(source, encoding="utf-8")
    found = _violations(probe, root=tmp_path)
    assert len(found) == expected, (source, found)
