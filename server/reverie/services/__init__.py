"""Use cases shared by every front end (the CLI, the language server, the MCP server).

A front end parses its input, calls a function here and presents the result; what a person
must fix comes back as a ``reverie.errors.UserError``. One module per topic (``memory``,
``sessions``, ``hooks``, ...); ``wiring`` builds what the lower layers are given (the memory
writer's after-apply hooks). Nothing here imports a front end.
"""
