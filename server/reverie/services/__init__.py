"""Use cases shared by the front ends (CLI, language server, MCP)."""
