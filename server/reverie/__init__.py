"""Reverie: background memory for AI coding agents.

The pure core (transcripts, llm, tools, session_memory, memory, dream, sleep) never imports
pygls or lsprotocol; the ``lsp`` package is the only protocol-facing layer.
"""

__version__ = "0.1.0"
