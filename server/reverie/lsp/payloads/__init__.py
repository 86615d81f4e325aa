"""The payload models of the wire contract, one module per kind of message.

``wire`` (the camelCase base models), ``arguments`` (command arguments, client -> server),
``results`` (command results), ``notifications`` (server -> client) and ``client`` (what the
client sends unasked: pushed chat messages, ``initializationOptions.editorStorage``).
Import them from ``reverie.lsp.protocol``, the contract's one entry point.
"""
