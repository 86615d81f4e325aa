"""Importable test support (the fake LLM server)."""
