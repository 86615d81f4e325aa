"""Curated memory: durable facts with evidence, merged across sessions and runs.

``facts`` holds the fact model and the book that merges candidates (recurrence, supersession,
rank); ``subjects`` decides which topic file a fact belongs in; ``topics`` reads facts back from
topic files (hand-written lines included) and renders topic files and ``MEMORY.md`` lines within
the index limits; ``candidates`` turns one session's analysis into facts. The offline dream and
the sleep cycle's offline REM both write memory through here.
"""
