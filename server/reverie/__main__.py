"""``python -m reverie`` is the same as the ``reverie`` console script.

The prompt-time recall hook runs before every prompt an agent sends, so it is recognised here,
before the CLI (argparse, every sub-command's arguments) is built: see
``reverie.commands.prompt_hook``.
"""

import sys

if __name__ == "__main__" and sys.argv[1:3] == ["hook", "user-prompt-submit"]:
    from reverie.commands.prompt_hook import main as prompt_hook

    raise SystemExit(prompt_hook(sys.argv[3:]))

from reverie.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
