"""A real VS Code (code-server 4.100.3) with the packaged extension, driven by Debian's chromium.

Follows the real-client feasibility note: code-server from ``.ci/vscode-setup.sh``'s cache, the
.vsix installed with ``--install-extension``, code-server in its own session so its process group
(server, extension host, language server) is killed at teardown, and every XDG dir and TMPDIR in
a scratch folder. Missing tooling skips, unless ``REVERIE_REQUIRE_REAL_EDITORS`` is set.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
CLIENT = REPO / "vscode-client"
ARTIFACTS = REPO / "tests" / "artifacts" / "vscode"
CHROMIUM = Path("/usr/bin/chromium")
CODE_SERVER_VERSION = "4.100.3"



@dataclass(frozen=True)
class Tools:
    code_server: Path
    vsix: Path
    chromium: Path
    #: an extensions dir with the .vsix installed, installed once per test process: each
    #: code-server gets its own copy (``launched_code_server``)
    installed: Path




@pytest.fixture(scope="session")
def tools(editors: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Tools:
    cache = Path(os.environ.get("REVERIE_EDITORS_CACHE", REPO / ".ci-cache" / "editors"))
    code_server = cache / "node_modules" / ".bin" / "code-server"
    if not code_server.exists():
        editors.missing_tool(f"code-server {CODE_SERVER_VERSION} is not installed in {cache}")
    if not CHROMIUM.exists():
        editors.missing_tool("Debian's chromium (/usr/bin/chromium) is not installed")
    if importlib.util.find_spec("playwright") is None:
        editors.missing_tool("the Python playwright package is not installed")
    version = json.loads((CLIENT / "package.json").read_text())["version"]
    # REVERIE_E2E_VSIX: another build, e.g. the universal one (with REVERIE_E2E_PYTHON, an
    # interpreter that has the compiled packages itself)
    vsix = Path(os.environ.get("REVERIE_E2E_VSIX") or CLIENT / f"reverie-{version}.vsix")
    if not vsix.exists():
        editors.missing_tool(
            f"{vsix.name} is not built (cd vscode-client && npm ci && npm run package)"
        )
    return Tools(code_server, vsix, CHROMIUM,
                 _install_extension(code_server, vsix, editors,
                                    tmp_path_factory.mktemp("vscode-extension")))


def _install_extension(code_server: Path, vsix: Path, editors: ModuleType, root: Path) -> Path:
    """``code-server --install-extension`` into ``root / "extensions"``, once: the install
    unpacks ~2,000 files (about 5 s, 3-4 s of CPU), the same for every code-server."""
    extensions = root / "extensions"
    (root / "home").mkdir()
    with editors.scratch_env(root) as scratch:
        env = {
            **{k: v for k, v in os.environ.items()
               if not k.startswith(("REVERIE_", "VSCODE_", "OPENAI_", "ANTHROPIC_"))},
            **scratch,
            "HOME": str(root / "home"),
        }
        install = subprocess.run(
            [str(code_server), "--user-data-dir", str(root / "user-data"),
             "--extensions-dir", str(extensions), "--install-extension", str(vsix)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert install.returncode == 0, install.stdout + install.stderr
    assert list(extensions.glob("reverie.reverie-*")), install.stdout + install.stderr
    return extensions


def _copy_extensions(installed: Path, extensions: Path) -> None:
    """A copy of the installed extensions dir; ``extensions.json`` names each extension's
    folder by its absolute path (and file URI), so those are moved to the copy."""
    shutil.copytree(installed, extensions)
    index = extensions / "extensions.json"
    text = index.read_text(encoding="utf-8")
    moved = text.replace(json.dumps(str(installed))[1:-1], json.dumps(str(extensions))[1:-1])
    assert moved != text, text[:500]
    index.write_text(moved, encoding="utf-8")


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def user_python() -> str:
    """The user's ``reverie.server.python``: the base interpreter, as the bundled server needs no
    reverie and no venv packages (REVERIE_E2E_PYTHON: another one, e.g. for a universal vsix)."""
    return (
        os.environ.get("REVERIE_E2E_PYTHON")
        or getattr(sys, "_base_executable", None)
        or shutil.which("python3")
        or sys.executable
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"code-server exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1) as resp:
                if b"status" in resp.read():  # "alive" or "expired" (no client yet)
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"code-server not healthy after {timeout} s:\n{log.read_text()[-3000:]}")


@dataclass
class CodeServer:
    url: str
    workspace: Any  # editor_workspace.AgentWorkspace
    user_data: Path
    log: Path
    #: process group of code-server and everything it starts (extension host, language server)
    pgid: int
    #: XDG dirs and TMPDIR of the scratch folder (the browser gets them too)
    scratch: dict[str, str]

    def exthost_logs(self) -> str:
        """The extension host logs (the Reverie output channel included), for failure messages."""
        chunks = []
        for path in sorted(self.user_data.glob("logs/**/*.log")):
            if "Reverie" in path.name or path.name == "exthost.log":
                tail = path.read_text(errors="replace")[-3000:]
                chunks.append(f"--- {path.relative_to(self.user_data)}\n{tail}")
        return "\n".join(chunks)


@contextmanager
def launched_code_server(
    tools: Tools, editors: ModuleType, ws: Any, *, trust: bool = False
) -> Iterator[CodeServer]:
    """code-server on a free port with the .vsix installed, opening ``ws.workspace``.

    ``trust=False`` (the main suite) switches Workspace Trust off, so every folder is trusted;
    ``trust=True`` keeps it on as a user has it, so a folder nobody trusted yet opens with the
    trust prompt and can be browsed in Restricted Mode.

    Its scratch dirs (short ones, see ``scratch_env``) go once code-server and all it started
    are gone; a browser opened on it (``opened_workbench``) is closed before that.
    """
    with editors.scratch_env(ws.root) as scratch, _code_server(tools, ws, scratch, trust) as cs:
        yield cs


@contextmanager
def _code_server(
    tools: Tools, ws: Any, scratch: dict[str, str], trust: bool
) -> Iterator[CodeServer]:
    root = ws.root
    user_data, extensions = root / "user-data", root / "extensions"
    (user_data / "User").mkdir(parents=True)
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("REVERIE_", "VSCODE_", "OPENAI_", "ANTHROPIC_"))
        },
        **scratch,
        **ws.env(),
        "HOME": str(root / "home"),
        # only read when a test points reverie.provider at the fake LLM server (never real)
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
    }
    (root / "home").mkdir()
    # the session socket (code-server's own: another launch on it opens its folder in this
    # one) goes with the short TMPDIR, not the user-data dir under pytest's long temp path
    session_socket = Path(scratch["TMPDIR"]) / "code-server-ipc.sock"
    common = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions),
              "--session-socket", str(session_socket)]
    _copy_extensions(tools.installed, extensions)
    assert list(extensions.glob("reverie.reverie-*"))
    settings = {
        "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": trust,
        "update.mode": "none",
        "extensions.autoUpdate": False,
        "extensions.autoCheckUpdates": False,
        "telemetry.telemetryLevel": "off",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "git.enabled": False,
        "remote.autoForwardPorts": False,
        "reverie.server.python": user_python(),
        "reverie.logLevel": "debug",
    }
    if trust:
        # the prompt on the first opening of an untrusted folder, and the banner while it stays
        # untrusted, as VS Code ships them (the banner pinned, so it is in every screenshot)
        settings |= {
            "security.workspace.trust.startupPrompt": "once",
            "security.workspace.trust.banner": "always",
        }
    (user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))
    port = _free_port()
    log = root / "code-server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(tools.code_server),
                "--bind-addr",
                f"127.0.0.1:{port}",
                "--auth",
                "none",
                "--disable-telemetry",
                "--disable-update-check",
                *([] if trust else ["--disable-workspace-trust"]),
                "--disable-getting-started-override",
                *common,
                str(ws.workspace),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        yield CodeServer(url, ws, user_data, log, proc.pid, scratch)
    finally:
        # code-server forks the real server, one extension host per connection and the language
        # server under it; all of them share the launcher's process group.
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def code_server(
    tools: Tools, editors: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CodeServer]:
    ws = editors.make_agent_workspace(tmp_path_factory.mktemp("vscode"))
    with launched_code_server(tools, editors, ws) as server:
        yield server


@contextmanager
def opened_workbench(
    code_server: CodeServer, tools: Tools, profile: Path
) -> Iterator[Any]:
    """Chromium (fresh profile) showing the workbench of ``code_server``'s folder."""
    from playwright.sync_api import sync_playwright

    # The Playwright driver and chromium write temp files and crash dumps: keep them in scratch.
    with pytest.MonkeyPatch.context() as mp:
        for key, value in code_server.scratch.items():
            mp.setenv(key, value)
        pw = sync_playwright().start()
    try:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(tools.chromium),
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
            viewport={"width": 1400, "height": 900},
            env={**os.environ, **code_server.scratch},
        )
        try:
            pg = context.pages[0] if context.pages else context.new_page()
            pg.set_default_timeout(30_000)
            pg.goto(f"{code_server.url}/?folder={code_server.workspace.workspace}")
            pg.wait_for_selector(".monaco-workbench", timeout=60_000)
            pg.wait_for_selector(".statusbar", timeout=60_000)
            yield pg
        finally:
            context.close()
    finally:
        pw.stop()


@pytest.fixture(scope="module")
def page(
    code_server: CodeServer, tools: Tools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    with opened_workbench(code_server, tools, tmp_path_factory.mktemp("chromium-profile")) as pg:
        yield pg


@pytest.fixture(scope="session")
def server_python() -> str:
    """The interpreter the user's settings give the extension (``reverie.server.python``)."""
    return user_python()


@pytest.fixture(scope="module")
def untrusted_workspace(editors: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A fresh folder (with an agent session) that nobody has trusted; a test module overrides
    this fixture to put a hostile repository's files into it before code-server opens it."""
    return editors.make_agent_workspace(
        tmp_path_factory.mktemp("vscode-untrusted"), name="untrusted-repo"
    )


@pytest.fixture(scope="module")
def trusting_code_server(
    tools: Tools, editors: ModuleType, untrusted_workspace: Any
) -> Iterator[CodeServer]:
    """code-server with Workspace Trust on (as users have it), opening ``untrusted_workspace``."""
    with launched_code_server(tools, editors, untrusted_workspace, trust=True) as server:
        yield server


@pytest.fixture(scope="module")
def trusting_page(
    trusting_code_server: CodeServer, tools: Tools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    profile = tmp_path_factory.mktemp("chromium-profile-trust")
    with opened_workbench(trusting_code_server, tools, profile) as pg:
        yield pg
