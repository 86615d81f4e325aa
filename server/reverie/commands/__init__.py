"""One module per ``reverie`` sub-command: ``add_arguments(parser)`` and ``run(args) -> int``."""
