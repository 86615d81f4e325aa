"""A thread that swaps a directory for a symlink and back, as fast as it can: the local
attacker racing the file system in ``tests/hostile``."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path


class Swapper:
    """Swaps ``directory`` between itself and a symlink to ``target``. (A writer may re-create
    the directory while it is parked: that copy is dropped again.)"""

    def __init__(self, directory: Path, target: Path) -> None:
        self.real = directory
        self.parked = directory.with_name(f".{directory.name}-parked")
        self.target = target
        self.stop = threading.Event()
        self.swaps = 0
        #: pause between swaps (the apply phase slows down so that some applies get through)
        self.interval = 0.0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                os.rename(self.real, self.parked)
            except OSError:
                time.sleep(0.0005)
                continue
            try:
                os.symlink(self.target, self.real)
                time.sleep(0.0002)
                os.unlink(self.real)
            except FileExistsError:
                pass
            while self.parked.exists():
                if self.real.is_dir() and not self.real.is_symlink():
                    shutil.rmtree(self.real, ignore_errors=True)
                try:
                    os.rename(self.parked, self.real)
                except OSError:
                    continue
            self.swaps += 1
            if self.interval:
                time.sleep(self.interval)

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
