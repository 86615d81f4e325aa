"""Write the evaluation sessions into ``tests/fixtures/eval/<project>/`` in each agent's layout.

``home/`` mirrors an agent home (``.claude/projects/<slug>/<id>.jsonl``,
``.codex/sessions/YYYY/MM/DD/rollout-….jsonl``, ``.gemini/tmp/<sha256>/chats/session-….json``)
and ``home/repo/.aider.chat.history.md`` is the repository's Aider history. ``sessions.json``
lists the sessions in the order they happened. The labels (``labels.toml``) are hand-written.

Run: ``.venv/bin/python tests/eval/generate.py`` (``--check`` fails when the committed files
differ from what the scenarios produce).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    # run by hand (tests/eval/generate.py): tests/ replaces this folder on sys.path, as
    # under pytest (pythonpath in pyproject.toml), so `support` and `eval` import alike
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from eval.eval_projects import Project, all_projects
from eval.eval_scenario import iter_rendered

HERE = Path(__file__).resolve().parent

FIXTURES = HERE.parent / "fixtures" / "eval"


def project_files(project: Project) -> dict[str, str]:
    """Relative path -> content for one project (the manifest included)."""
    files: dict[str, str] = {}
    manifest = []
    for session, rel, content in iter_rendered(project.sessions, project.workspace):
        path = f"home/{rel}"
        files[path] = files.get(path, "") + content  # Aider runs share one file
        manifest.append({"key": session.key, "agent": session.agent,
                         "session_id": session.session_id, "path": path,
                         "start": session.start, "end": session.ended().isoformat()})
    files["sessions.json"] = json.dumps({"project": project.name,
                                         "workspace": project.workspace,
                                         "summary": project.summary,
                                         "sessions": manifest}, indent=2) + "\n"
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    stale = []
    for project in all_projects():
        root = FIXTURES / project.name
        files = project_files(project)
        if args.check:
            for rel, content in files.items():
                path = root / rel
                if not path.is_file() or path.read_text("utf-8") != content:
                    stale.append(str(path))
            continue
        if (root / "home").exists():
            shutil.rmtree(root / "home")
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, "utf-8")
        print(f"{project.name}: {len(project.sessions)} sessions -> {root}")
    if stale:
        print("stale fixtures (run tests/eval/generate.py):\n  " + "\n  ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
