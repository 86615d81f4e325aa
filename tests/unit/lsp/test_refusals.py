"""Only what a person must fix (``UserError``) becomes a one-line ``RequestFailed`` refusal;
a defect (a ``KeyError``, a pydantic ``ValidationError``, an ``OSError`` nobody explained)
propagates, so pygls logs its traceback and answers ``InternalError``."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from reverie.errors import ReverieError, UserError
from reverie.lsp.handlers import RequestFailed, _call
from reverie.memory.history import HistoryError
from reverie.memory.lock import LockBusy


async def _raise(exc: BaseException) -> None:
    raise exc


@pytest.mark.parametrize("exc", [UserError("fix this"), HistoryError("no run abc"),
                                 LockBusy("busy")])
async def test_user_errors_become_one_line_refusals(exc: UserError) -> None:
    with pytest.raises(RequestFailed) as info:
        await _call(_raise(exc))
    assert info.value.message == str(exc)
    assert info.value.__cause__ is None and info.value.__suppress_context__


class _Model(BaseModel):
    n: int


def _validation_error() -> Exception:
    try:
        _Model.model_validate({"n": "x"})
    except ValueError as exc:
        return exc
    raise AssertionError("no error")


@pytest.mark.parametrize("exc", [KeyError("k"), IndexError("i"), ValueError("v"),
                                 _validation_error(), ReverieError("internal"),
                                 PermissionError("p")])
async def test_anything_else_is_not_dressed_up_as_a_refusal(exc: Exception) -> None:
    with pytest.raises(type(exc)):
        await _call(_raise(exc))
