"""Where the editor's own agents keep their sessions, on Linux, macOS and Windows.

VS Code and its relatives keep a *user-data dir* whose ``User`` folder holds
``workspaceStorage/<hash>/`` (one per opened folder or workspace, named by a hash the editor
computes; ``workspace.json`` in it names the folder as a URI) and ``globalStorage/`` (one folder
per extension id, lower case). GitHub Copilot Chat's sessions are VS Code's own
(``workspaceStorage/<hash>/chatSessions/``, empty windows in
``globalStorage/emptyWindowChatSessions/``); Cline, Roo Code and Kilo Code keep task folders
in their extension's global storage (``globalStorage/<publisher.name>/tasks/<id>/``); Continue
keeps ``~/.continue/sessions/`` (``CONTINUE_GLOBAL_DIR`` moves it); Kilo Code rebuilt on
OpenCode keeps every session in its CLI's SQLite database (``<xdg data>/kilo/kilo.db``).
Sources are cited in docs/formats.md.

``EditorPlaces`` is what discovery and the watcher look at; it is a frozen, picklable value so
it crosses into the parse worker process. ``EditorPlaces.detect`` finds the user-data dirs of
every VS Code flavour under an agent home (``REVERIE_VSCODE_USER_DIR`` overrides);
``with_editor_storage`` adds the exact folders the running editor reported (its extension's
``storageUri`` / ``globalStorageUri``), so the current workspace's storage is known without
reading any ``workspace.json``.
"""

from __future__ import annotations

import os
import sys
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PureWindowsPath

from reverie.transcripts.detect import TASK_EXTENSIONS
from reverie.transcripts.document import load_jsonc
from reverie.transcripts.kilo_db import is_db_name
from reverie.transcripts.model import AgentName

#: VS Code flavours: the product folder under the per-OS application-data dir
VSCODE_PRODUCTS = ("Code", "Code - Insiders", "VSCodium", "VSCodium - Insiders", "Code - OSS")
#: extension id -> the VS Code setting that moves its task folders (RooCodeInc/Roo-Code
#: ``src/utils/storage.ts``: ``getStorageBasePath`` reads ``<package name>.customStoragePath``,
#: tasks go to ``<it>/tasks/<id>/``; Kilo Code's Roo-based versions inherit it as
#: ``kilo-code.customStoragePath``, Kilo-Org/kilocode ``src/utils/storage.ts``)
CUSTOM_STORAGE_SETTINGS: dict[str, str] = {
    "rooveterinaryinc.roo-cline": "roo-cline.customStoragePath",
    "kilocode.kilo-code": "kilo-code.customStoragePath",
}
#: a ``settings.json`` bigger than this is not read
_SETTINGS_LIMIT = 4 * 1024 * 1024
#: the variable that points Reverie at VS Code ``User`` folders (``os.pathsep``-separated)
USER_DIR_ENV = "REVERIE_VSCODE_USER_DIR"


@dataclass(frozen=True)
class EditorPlaces:
    """The folders the editor's agents write to, for one agent home."""

    #: VS Code-family ``User`` folders (each holds ``workspaceStorage`` and ``globalStorage``)
    user_dirs: tuple[Path, ...] = ()
    #: exact ``workspaceStorage/<hash>`` folders of the current window, as the editor said
    workspace_storage: tuple[Path, ...] = ()
    #: Continue's global folder (``~/.continue``)
    continue_dir: Path | None = None
    #: Cline's own data folder (``~/.cline/data``): its CLI's task folders, and since Cline 4
    #: (its SDK) every session's, in VS Code too, under ``sessions/``
    cline_data_dir: Path | None = None
    #: Cline 4's sessions folder when ``CLINE_SESSION_DATA_DIR`` moves it (else under the data)
    cline_sessions: Path | None = None
    #: Kilo Code's data folders (``<xdg data>/kilo``): its CLI's session database in each
    kilo_data_dirs: tuple[Path, ...] = ()
    #: the database ``KILO_DB`` names, when it is set
    kilo_db: Path | None = None
    #: reasons why an editor-reported location was not used (for logs and ``--verbose``)
    notes: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def detect(cls, agent_home: Path, env: Mapping[str, str] | None = None,
               platform: str | None = None) -> EditorPlaces:
        """The places under ``agent_home`` on this OS; ``REVERIE_VSCODE_USER_DIR`` replaces the
        VS Code ``User`` folders. The OS's own variables (``APPDATA``, ``XDG_CONFIG_HOME``,
        ``CONTINUE_GLOBAL_DIR``) apply only when ``agent_home`` is the user's real home (as for
        the terminal agents: an explicit agent home means "look exactly here")."""
        environ = os.environ if env is None else env
        home = Path(agent_home).expanduser()
        real = _is_real_home(home)
        override = environ.get(USER_DIR_ENV, "")
        if override.strip():
            users = tuple(_user_dir(Path(p).expanduser())
                          for p in override.split(os.pathsep) if p.strip())
        else:
            users = tuple(d for d in _default_user_dirs(home, environ, real,
                                                        platform or sys.platform))
        continue_dir = home / ".continue"
        if real:
            configured = environ.get("CONTINUE_GLOBAL_DIR", "").strip()
            if configured and Path(configured).expanduser().is_absolute():
                continue_dir = Path(configured).expanduser()
        # cline/cline sdk/packages/shared/src/storage/paths.ts: CLINE_DATA_DIR, else
        # $CLINE_DIR/data, else ~/.cline/data; CLINE_SESSION_DATA_DIR, else <data>/sessions
        cline_data = home / ".cline" / "data"
        cline_sessions: Path | None = None
        if real:
            configured = environ.get("CLINE_DATA_DIR", "").strip()
            base = environ.get("CLINE_DIR", "").strip()
            if configured and Path(configured).expanduser().is_absolute():
                cline_data = Path(configured).expanduser()
            elif base and Path(base).expanduser().is_absolute():
                cline_data = Path(base).expanduser() / "data"
            sessions = environ.get("CLINE_SESSION_DATA_DIR", "").strip()
            if sessions and Path(sessions).expanduser().is_absolute():
                cline_sessions = Path(sessions).expanduser()
        # Kilo-Org/kilocode packages/opencode/src/global/index.ts: xdg-basedir's data folder
        # (``$XDG_DATA_HOME``, else ``~/.local/share``, on every OS) + ``kilo``;
        # storage/database.ts: ``KILO_DB`` (absolute, or relative to that folder)
        share = environ.get("XDG_DATA_HOME", "").strip() if real else ""
        kilo_dir = (Path(share) if share and Path(share).is_absolute()
                    else home / ".local" / "share") / "kilo"
        kilo_db: Path | None = None
        named = environ.get("KILO_DB", "").strip() if real else ""
        if named and named != ":memory:":
            kilo_db = Path(named).expanduser()
            kilo_db = kilo_db if kilo_db.is_absolute() else kilo_dir / kilo_db
        return cls(user_dirs=tuple(dict.fromkeys(users)), continue_dir=continue_dir,
                   cline_data_dir=cline_data, cline_sessions=cline_sessions,
                   kilo_data_dirs=(kilo_dir,), kilo_db=kilo_db)

    def with_editor_storage(self, storage_uri: str | None,
                            global_storage_uri: str | None) -> EditorPlaces:
        """Add what the running editor reported: its extension's ``storageUri``
        (``.../User/workspaceStorage/<hash>/<ext>``) and ``globalStorageUri``
        (``.../User/globalStorage/<ext>``). A URI that is not a local file is noted, not used."""
        notes = list(self.notes)
        users = list(self.user_dirs)
        exact = list(self.workspace_storage)
        if global_storage_uri:
            path, why = local_path_of_uri(global_storage_uri)
            if path is None:
                notes.append(f"editor globalStorageUri {global_storage_uri!r} not used: {why}")
            else:
                user = _user_of_global_storage(Path(path))
                if user is not None and user not in users:
                    users.insert(0, user)
        if storage_uri:
            path, why = local_path_of_uri(storage_uri)
            if path is None:
                notes.append(f"editor storageUri {storage_uri!r} not used: {why}")
            else:
                folder = Path(path).parent  # workspaceStorage/<hash>/<ext> -> <hash>
                if folder.parent.name == "workspaceStorage":
                    if folder not in exact:
                        exact.insert(0, folder)
                    user = folder.parent.parent
                    if user not in users:
                        users.insert(0, user)
                else:
                    notes.append(f"editor storageUri {storage_uri!r} not used: not under a "
                                 "workspaceStorage folder")
        return replace(self, user_dirs=tuple(users), workspace_storage=tuple(exact),
                       notes=tuple(notes))

    # -- derived folders -----------------------------------------------------------------------
    def workspace_storage_roots(self) -> list[Path]:
        return [u / "workspaceStorage" for u in self.user_dirs]

    def empty_window_chats(self) -> list[Path]:
        return [u / "globalStorage" / "emptyWindowChatSessions" for u in self.user_dirs]

    def task_roots(self) -> list[tuple[str, Path]]:
        """``(agent, tasks folder)`` of every Cline-family extension in every user dir, and the
        folders the user moved Roo's (or Kilo's) tasks to (``custom_task_roots``)."""
        out = [(agent, u / "globalStorage" / ext / "tasks")
               for u in self.user_dirs for ext, agent in TASK_EXTENSIONS.items()]
        if self.cline_data_dir is not None:
            out.append(("cline", self.cline_data_dir / "tasks"))
        for agent, root, _user, _ext in self.custom_task_roots():
            if (agent, root) not in out:
                out.append((agent, root))
        return out

    def custom_task_roots(self) -> list[tuple[str, Path, Path, str]]:
        """``(agent, tasks folder, user dir, extension id)`` for each custom storage path set
        in a user dir's ``settings.json`` (or a profile's): ``<path>/tasks``. A path that is
        not absolute on this OS is not used (Roo asks for an absolute one)."""
        out: list[tuple[str, Path, Path, str]] = []
        for user in self.user_dirs:
            try:
                profiles = sorted((user / "profiles").glob("*/settings.json"))
            except OSError:
                profiles = []
            for settings in (user / "settings.json", *profiles):
                values = _read_settings(settings)
                for ext, key in CUSTOM_STORAGE_SETTINGS.items():
                    value = values.get(key)
                    if not isinstance(value, str) or not value.strip():
                        continue
                    base = Path(value.strip())
                    entry = (TASK_EXTENSIONS[ext], base / "tasks", user, ext)
                    if base.is_absolute() and entry not in out:
                        out.append(entry)
        return out

    def moved_task_agent(self, path: Path) -> AgentName | None:
        """The agent whose tasks a custom storage path moved to a folder holding ``path`` (None:
        not in such a folder). A moved folder's name no longer says which extension wrote it, so
        whoever reads it passes this on (discovery's ``SessionRef.agent``, the live reader's
        tails); ``detect.cline_task_agent`` alone would say Cline."""
        for agent, root, _user, _ext in self.custom_task_roots():
            if path.is_relative_to(root):
                return agent  # type: ignore[return-value]
        return None

    def cline_sessions_dir(self) -> Path | None:
        """Cline 4's ``sessions`` folder (``<id>/<id>.messages.json`` in it)."""
        if self.cline_sessions is not None:
            return self.cline_sessions
        return None if self.cline_data_dir is None else self.cline_data_dir / "sessions"

    def continue_sessions(self) -> Path | None:
        return None if self.continue_dir is None else self.continue_dir / "sessions"

    def kilo_db_files(self) -> list[Path]:
        """Kilo's session databases that exist: ``KILO_DB``'s, ``kilo.db`` and the channels'
        ``kilo-<channel>.db`` in its data folders."""
        out: list[Path] = []
        if self.kilo_db is not None and self.kilo_db.is_file():
            out.append(self.kilo_db)
        for folder in self.kilo_data_dirs:
            try:
                out.extend(sorted(p for p in folder.iterdir()
                                  if is_db_name(p.name) and p.is_file()))
            except OSError:
                continue
        return list(dict.fromkeys(out))

    def kilo_watch_dirs(self) -> list[Path]:
        """The folders holding Kilo's databases, watched without recursion (its data folder
        also holds snapshots and logs that change all the time)."""
        dirs = list(self.kilo_data_dirs)
        if self.kilo_db is not None and self.kilo_db.parent not in dirs:
            dirs.append(self.kilo_db.parent)
        return dirs


def _read_settings(path: Path) -> dict[str, object]:
    """A VS Code ``settings.json`` (JSON with comments); empty when missing or unreadable."""
    try:
        if path.stat().st_size > _SETTINGS_LIMIT:
            return {}
        data = path.read_bytes()
    except OSError:
        return {}
    value, _why = load_jsonc(data)
    return value if isinstance(value, dict) else {}


def _is_real_home(home: Path) -> bool:
    try:
        return home.resolve() == Path.home().resolve()
    except (OSError, RuntimeError):
        return False


def _user_dir(path: Path) -> Path:
    """``REVERIE_VSCODE_USER_DIR`` may name the ``User`` folder or the product folder above it."""
    if path.name != "User" and (path / "User").is_dir():
        return path / "User"
    return path


def _default_user_dirs(home: Path, environ: Mapping[str, str], real: bool,
                       platform: str) -> list[Path]:
    """Every VS Code flavour's ``User`` folder for ``home`` on ``platform``: the desktop
    products, code-server, and the VS Code Server of a remote host."""
    if platform == "darwin":
        bases = [home / "Library" / "Application Support"]
    elif platform.startswith("win"):
        appdata = environ.get("APPDATA", "").strip() if real else ""
        bases = [Path(appdata) if appdata else home / "AppData" / "Roaming"]
    else:
        xdg = environ.get("XDG_CONFIG_HOME", "").strip() if real else ""
        bases = [Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"]
    out = [base / product / "User" for base in bases for product in VSCODE_PRODUCTS]
    if not platform.startswith("win"):
        share = environ.get("XDG_DATA_HOME", "").strip() if real else ""
        data_home = (Path(share) if share and Path(share).is_absolute()
                     else home / ".local" / "share")
        out.append(data_home / "code-server" / "User")
    out += [home / ".vscode-server" / "data" / "User",
            home / ".vscode-server-insiders" / "data" / "User",
            home / ".vscode-remote" / "data" / "User"]
    return out


def _user_of_global_storage(path: Path) -> Path | None:
    """``User/globalStorage/<ext>`` (or ``User/profiles/<id>/globalStorage/<ext>``) -> ``User``."""
    storage = path.parent
    if storage.name != "globalStorage":
        return None
    above = storage.parent
    if above.parent.name == "profiles":
        return above.parent.parent
    return above


def local_path_of_uri(uri: str) -> tuple[str | None, str]:
    """The local file-system path of a ``file:`` URI as VS Code writes it, else ``(None, why)``.

    ``file:///home/me/proj`` -> ``/home/me/proj``; ``file:///c%3A/Users/me`` -> ``c:\\Users\\me``
    on Windows; ``file://server/share/x`` -> ``\\\\server\\share\\x``. Percent-escapes that are
    not UTF-8 decode the way the OS would (``os.fsdecode``); a remote (``vscode-remote:``),
    virtual (``vscode-vfs:``) or other scheme is not a local path.
    """
    if not isinstance(uri, str) or not uri:
        return None, "empty"
    parsed = urllib.parse.urlsplit(uri)
    scheme = parsed.scheme.lower()
    if scheme != "file":
        if scheme in ("vscode-remote", "vscode-vfs", "vscode-userdata", "untitled"):
            return None, f"a {scheme}: URI is not a folder on this machine"
        return None, f"scheme {scheme or '(none)'!r} is not a local file"
    raw = urllib.parse.unquote_to_bytes(parsed.path)
    try:
        path = raw.decode("utf-8")
    except UnicodeDecodeError:
        path = os.fsdecode(raw)  # undecodable bytes stay as surrogate escapes, like the OS's
    if "\x00" in path:
        return None, "the path has a NUL character"
    host = parsed.netloc
    if len(path) >= 3 and path[0] == "/" and path[2] == ":" and path[1].isalpha():
        return str(PureWindowsPath(path[1:])), ""  # /c:/Users/me -> c:\Users\me
    if host and host.lower() != "localhost":
        return str(PureWindowsPath(f"//{host}{path}")), ""  # a UNC path
    return path, ""
