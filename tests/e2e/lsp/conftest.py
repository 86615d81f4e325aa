"""End-to-end fixtures: a real ``python -m reverie serve`` over stdio, driven by pytest-lsp.

Every custom notification is recorded from the moment the client starts (so nothing sent while a
test awaits something else is lost), and ``Session.wait_for`` polls those records with a bounded
timeout.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

NOTIFICATIONS = (
    "reverie/memorySaved",
    "reverie/sessionNotesUpdated",
    "reverie/jobEvent",
    "reverie/lockChanged",
)


def plain(value: Any) -> Any:
    """pygls hands custom payloads over as namedtuples: turn them back into JSON values."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


@dataclass
class Session:
    """One running server plus everything it sent."""

    client: LanguageClient
    workspace: Path
    env: dict[str, str]
    initialize_seconds: float = 0.0
    received: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    closed: bool = False

    async def close(self) -> None:
        """``shutdown`` + ``exit`` and wait for the process (the fixture then does nothing)."""
        if not self.closed:
            self.closed = True
            await asyncio.wait_for(self.client.shutdown_session(), timeout=20)

    async def command(self, name: str, *arguments: Any) -> Any:
        result = await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(arguments))
        )
        return plain(result)

    def events(self, method: str) -> list[dict[str, Any]]:
        return self.received.setdefault(method, [])

    async def wait_for(
        self,
        predicate: Callable[[], Any],
        timeout: float = 15.0,
        what: str = "condition",
    ) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            await asyncio.sleep(0.05)

    async def wait_for_event(
        self,
        method: str,
        match: Callable[[dict[str, Any]], bool] = lambda _: True,
        timeout: float = 15.0,
    ) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            return next((e for e in self.events(method) if match(e)), None)

        return await self.wait_for(find, timeout, what=method)

    async def progress_of(self, job_id: str, timeout: float = 15.0) -> list[Any]:
        """The job's ``$/progress`` values once its ``end`` has arrived."""

        def ended() -> list[Any] | None:
            reports = self.client.progress_reports.get(f"reverie/{job_id}")
            return reports if reports and reports[-1].kind == "end" else None

        return await self.wait_for(ended, timeout, what=f"progress end of {job_id}")

    def job_events(self, job_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events("reverie/jobEvent") if e.get("jobId") == job_id]

    def write_memory(self, relative: str, text: str) -> Path:
        path = self.memory_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    @property
    def data_dir(self) -> Path:
        return Path(self.env["REVERIE_DATA_DIR"])

    @property
    def agent_home(self) -> Path:
        return Path(self.env["REVERIE_AGENT_HOME"])

    @property
    def memory_dir(self) -> Path:
        from reverie.config import ProjectPaths, Settings

        settings = Settings(
            data_dir=self.data_dir, agent_home=self.agent_home, config_dir=self.data_dir
        )
        return ProjectPaths(settings, self.workspace).memory_dir


StartServer = Callable[..., "asyncio.Future[Session]"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def memory_dir(workspace: Path, reverie_env: dict[str, Path]) -> Path:
    """The memory dir the server uses for ``workspace`` (default preset)."""
    from reverie.config import ProjectPaths, Settings

    settings = Settings(data_dir=reverie_env["data"], agent_home=reverie_env["agent_home"])
    return ProjectPaths(settings, workspace).memory_dir


@pytest.fixture
async def start_server(
    workspace: Path, reverie_env: dict[str, Path]
) -> AsyncIterator[Callable[..., Any]]:
    """Start servers on demand: ``await start_server(init_options=..., configuration=...)``."""
    started: list[Session] = []

    async def start(
        init_options: dict[str, Any] | None = None,
        configuration: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        capabilities: types.ClientCapabilities | None = None,
        folders: list[Path] | None = None,
    ) -> Session:
        server_env = dict(os.environ)
        server_env.update(
            {
                "REVERIE_DATA_DIR": str(reverie_env["data"]),
                "REVERIE_CONFIG_DIR": str(reverie_env["config"]),
                "REVERIE_AGENT_HOME": str(reverie_env["agent_home"]),
                "PYTHONUNBUFFERED": "1",
            }
        )
        server_env.update(env or {})
        config = ClientServerConfig(
            server_command=[sys.executable, "-m", "reverie", "serve"], server_env=server_env
        )
        client = await config.start()
        assert isinstance(client, LanguageClient)
        session = Session(client=client, workspace=workspace, env=server_env)
        for method in NOTIFICATIONS:
            client.feature(method)(_recorder(session, method))

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def _register(params: types.RegistrationParams) -> None:
            session.events("client/registerCapability").append(
                {"methods": [r.method for r in params.registrations]}
            )

        if configuration is not None:
            client.set_configuration(configuration, section="reverie")
        caps = capabilities or client_capabilities("visual-studio-code")
        folder_list = folders or [workspace]
        began = time.monotonic()
        await client.initialize_session(
            types.InitializeParams(
                capabilities=caps,
                initialization_options=init_options,
                workspace_folders=[
                    types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folder_list
                ],
                root_uri=folder_list[0].as_uri(),
            )
        )
        session.initialize_seconds = time.monotonic() - began
        started.append(session)
        return session

    yield start

    for session in started:
        try:
            await session.close()
        except Exception:
            pass
        await session.client.stop()


def _recorder(session: Session, method: str) -> Callable[[Any], None]:
    def record(params: Any) -> None:
        session.events(method).append(plain(params))

    return record
