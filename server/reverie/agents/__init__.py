"""Connecting coding agents to Reverie: managed blocks in their instruction files, hooks."""
