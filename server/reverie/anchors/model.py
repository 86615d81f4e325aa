"""The anchor of a fact and the outcome of checking one."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

AnchorKind = Literal["path", "symbol", "script", "target", "dep", "config", "bin"]
Status = Literal["valid", "stale", "unverifiable"]
ANCHOR_KINDS: tuple[str, ...] = ("path", "symbol", "script", "target", "dep", "config", "bin")


class Anchor(BaseModel):
    """One checkable dependency of a fact: ``kind`` names what ``value`` is, ``where`` the file
    it lives in (the manifest of a script or dependency, the file a symbol was defined in)."""

    model_config = {"frozen": True}

    kind: AnchorKind
    value: str
    where: str | None = None

    def to_yaml(self) -> dict[str, str]:
        """The compact front-matter form: ``{script: build, in: package.json}``."""
        out: dict[str, str] = {self.kind: self.value}
        if self.where:
            out["in"] = self.where
        return out

    @classmethod
    def from_yaml(cls, raw: Any) -> Anchor | None:
        """The front-matter form read back; anything else (a hand edit gone wrong) is None."""
        if not isinstance(raw, dict):
            return None
        kinds = [k for k in raw if k in ANCHOR_KINDS]
        if len(kinds) != 1 or not isinstance(raw[kinds[0]], str | int | float):
            return None
        where = raw.get("in")
        # checked above, field by field: built without pydantic's validation (every fact's
        # anchors are read back on every check)
        return cls.model_construct(
            kind=kinds[0], value=str(raw[kinds[0]]),
            where=str(where) if isinstance(where, str | int) and where else None)

    def describe(self) -> str:
        where = f" in {self.where}" if self.where else ""
        return {
            "path": f"`{self.value}`",
            "symbol": f"`{self.value}`{where}",
            "script": f"script `{self.value}`{where}",
            "target": f"target `{self.value}`{where}",
            "dep": f"dependency `{self.value}`{where}",
            "config": f"`{self.value.replace('=', ': ', 1)}`{where}",
            "bin": f"`{self.value}` on PATH",
        }[self.kind]


class AnchorCheck(BaseModel):
    """One anchor checked against the working tree."""

    anchor: Anchor
    status: Status
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.anchor.kind, "value": self.anchor.value, "where": self.anchor.where,
                "status": self.status, "reason": self.reason}


def combine(checks: list[AnchorCheck]) -> tuple[Status, str]:
    """A fact's status from its anchors: stale when one anchor is established stale, valid
    when at least one holds and none is stale, else unverifiable (never stale for lack of
    anchors, nor for an anchor the check could not establish)."""
    if not checks:
        return "unverifiable", "no checkable anchor (a rule or preference)"
    stale = [c for c in checks if c.status == "stale"]
    if stale:
        return "stale", "; ".join(c.reason for c in stale)
    if any(c.status == "valid" for c in checks):
        return "valid", ""
    return "unverifiable", "; ".join(dict.fromkeys(c.reason for c in checks if c.reason))
