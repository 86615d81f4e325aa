"""Which one-line messages reach the user as a popup (``window/showMessage``).

Every message is logged; a popup is shown only when the ``reverie.showNotifications`` policy lets
its severity through (or it is ``force``d: a configuration problem the user must see unless the
policy is ``off``), and the same text at most once per ``POPUP_REPEAT_SECONDS``: a failure that
repeats every few minutes is one popup, not a stream of them.
"""

from __future__ import annotations

import logging
import time
from typing import Literal

from lsprotocol import types

Severity = Literal["error", "warning", "info"]

#: which popups each ``reverie.showNotifications`` value lets through
POPUP_LEVELS: dict[str, frozenset[str]] = {
    "off": frozenset(),
    "onError": frozenset({"error"}),
    "onWarning": frozenset({"error", "warning"}),
    "always": frozenset({"error", "warning", "info"}),
}
MESSAGE_TYPES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
}
LOG_LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO}
POPUP_REPEAT_SECONDS = 600.0


class Popups:
    """The popup filter of one server: the policy, and when each text was last shown."""

    def __init__(self, repeat_seconds: float = POPUP_REPEAT_SECONDS) -> None:
        self.repeat_seconds = repeat_seconds
        #: popup text -> when it was last shown (``time.monotonic``)
        self._shown: dict[str, float] = {}

    def admit(
        self,
        severity: Severity,
        message: str,
        policy: str,
        *,
        force: bool = False,
        now: float | None = None,
    ) -> bool:
        """True when ``message`` should be shown now (and remember that it was)."""
        allowed = POPUP_LEVELS.get(policy, POPUP_LEVELS["onError"])
        if not (severity in allowed or (force and policy != "off")):
            return False
        now = time.monotonic() if now is None else now
        if now - self._shown.get(message, -self.repeat_seconds) < self.repeat_seconds:
            return False
        self._shown[message] = now
        return True
