"""The per-project search index over memory, notes and past sessions (SQLite FTS5).

``documents`` (what is indexed), ``query`` (a person's words → a safe FTS5 expression),
``index`` (the database and the ranking), ``update`` (incremental indexing), ``recall``
(the prompt-time lookup the agents' hooks run, kept light to import).
"""
