"""The language-server layer: the only package that imports pygls and lsprotocol."""
