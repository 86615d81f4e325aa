"""LSP work-done progress for one job: create the token, begin / report / end, and cancel the
job when the client cancels the progress."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

logger = logging.getLogger(__name__)


class JobProgress:
    """Progress of one job. Does nothing when the client does not support work-done progress.

    ``begin`` must be awaited before ``report``/``end``; reports are sent only after a begin and
    nothing is sent after the end, so the client always sees begin, report*, end in order.
    """

    def __init__(
        self,
        server: LanguageServer,
        token: str,
        title: str,
        on_cancel: Callable[[], object],
    ) -> None:
        self._server = server
        self.token = token
        self.title = title
        self._on_cancel = on_cancel
        self._state = "new"  # new -> begun -> ended (or "off")
        self._end_message = ""

    @staticmethod
    def supported(server: LanguageServer) -> bool:
        window = server.client_capabilities.window
        return bool(window and window.work_done_progress)

    async def begin(self, message: str = "") -> None:
        if self._state != "new":  # already begun, ended before it began, or unsupported
            return
        if not self.supported(self._server):
            self._state = "off"
            return
        progress = self._server.work_done_progress
        try:
            await progress.create_async(self.token)
        except Exception as exc:  # the client refused the token: run without progress
            logger.debug("work-done progress %s not created: %s", self.token, exc)
            self._state = "off"
            return
        future: Future[object] | None = progress.tokens.get(self.token)
        if future is not None:
            future.add_done_callback(self._cancelled_by_client)
        progress.begin(
            self.token,
            types.WorkDoneProgressBegin(
                title=self.title, message=message or None, cancellable=True
            ),
        )
        ended_meanwhile = self._state == "ended"
        self._state = "begun"
        if ended_meanwhile:  # the job finished while the client created the token
            self.end(self._end_message)

    def report(self, message: str, percentage: int | None = None) -> None:
        if self._state != "begun":
            return
        self._server.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )

    def end(self, message: str = "") -> None:
        if self._state != "begun":
            self._end_message = message
            self._state = "ended"
            return
        self._state = "ended"
        progress = self._server.work_done_progress
        progress.end(self.token, types.WorkDoneProgressEnd(message=message or None))
        progress.tokens.pop(self.token, None)

    def _cancelled_by_client(self, future: Future[object]) -> None:
        if future.cancelled() and self._state == "begun":
            logger.info("client cancelled %s", self.title)
            self._on_cancel()
