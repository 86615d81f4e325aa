"""Forget one entry of the memory (a recorded run: ``reverie undo`` brings it back).

``reverie forget ENTRY [--workspace DIR] [--json]``: ENTRY is ``FILE:LINE`` (``MEMORY.md:3``)
or a piece of the entry's text that matches exactly one line. Forgetting an index line also
removes the topic file it links to (unless another index line links it too).
"""

from __future__ import annotations

import argparse

from reverie.commands.curate import add_entry_arguments, run_curation


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_entry_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return run_curation(args, "forget")
