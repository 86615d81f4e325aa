"""Value types shared across layers: the agents' names and token usage.

Here because more than one layer speaks of them (transcripts record usage, model clients
report it; sessions and connections name agents) and none of those layers should import
another for a name.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

#: an agent whose conversations Reverie reads: its name on the wire, in session rows and in
#: transcripts (``generic``: chats pushed by an editor, or in Reverie's own JSONL)
AgentName = Literal[
    "claude-code", "codex", "gemini-cli", "aider", "generic",
    # the editor's own agents (issue 25): VS Code's chat, the Cline family, Continue
    "copilot-chat", "cline", "roo-code", "kilo-code", "continue",
]
#: agents whose sessions live in the editor's storage, not under the agent home
EDITOR_AGENTS: tuple[AgentName, ...] = (
    "copilot-chat", "cline", "roo-code", "kilo-code", "continue",
)
#: an agent Reverie can connect (``reverie connect NAME``, the connections ledger): the
#: spelling users type, where Gemini CLI is ``gemini``. A contract kept as it shipped.
ConnectableAgent = Literal["claude-code", "codex", "gemini", "aider",
                           "copilot-chat", "cline", "roo-code", "kilo-code", "continue"]
CONNECTABLE_AGENTS: tuple[ConnectableAgent, ...] = ("claude-code", "codex", "gemini", "aider",
                                                    "copilot-chat", "cline", "roo-code",
                                                    "kilo-code", "continue")


def connectable_name(agent: str) -> str:
    """The ``reverie connect`` spelling of an agent name (``gemini-cli`` is ``gemini``)."""
    return "gemini" if agent == "gemini-cli" else agent


class Usage(BaseModel):
    """Token usage of one API message as recorded on one line (see ``Message.usage``)."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        """The conversation's context size at this message, as the spec counts it."""
        return (
            self.input_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
            + self.output_tokens
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )
