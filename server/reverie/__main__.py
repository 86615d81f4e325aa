"""``python -m reverie`` is the same as the ``reverie`` console script.

The prompt-time recall hook runs before every prompt an agent sends, and the session-start hook
holds the agent up after every compaction and resume, so both are recognised here, before the
CLI (argparse, every sub-command's arguments, the settings stack) is built: see
``reverie.commands.prompt_hook`` and ``reverie.commands.session_hook``.
"""

import sys

if __name__ == "__main__" and sys.argv[1:3] == ["hook", "user-prompt-submit"]:
    from reverie.commands.prompt_hook import main as prompt_hook

    raise SystemExit(prompt_hook(sys.argv[3:]))

if __name__ == "__main__" and sys.argv[1:3] == ["hook", "session-start"]:
    from reverie.commands.session_hook import lean_arguments
    from reverie.commands.session_hook import main as session_hook

    if lean_arguments(sys.argv[3:]):
        raise SystemExit(session_hook(sys.argv[3:]))

from reverie.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
