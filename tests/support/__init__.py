"""Test support, importable from any test (``pythonpath`` in ``pyproject.toml``): the fake LLM
server, fake agent CLIs, a fake clock, planted secrets, and what a child process needs to find
them. Not part of the ``reverie`` package: nothing here ships in the wheel or the extension."""
