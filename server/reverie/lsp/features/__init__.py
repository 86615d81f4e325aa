"""The language server's features: one module per concern, each working against the narrow
contexts of ``reverie.lsp.context`` (never the server or tracker classes)."""
