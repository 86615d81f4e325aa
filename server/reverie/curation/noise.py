"""What never belongs in memory, whoever wrote it: the offline engine never produces these, and
lines a model writes are checked against the same classes before they are applied.

- the agent's own tool-protocol slips ("File has not been read yet", ``InputValidationError``);
- agent wrappers (``<command-name>``, ``<local-command-stdout>``, task notifications, IDE
  context, "Please continue.");
- a line that is only an exploration command (``ls``, ``cat``, ``head``, ``tail``, ``sed -n``,
  ``find``, ``grep``, ``pwd``, ``wc``) with a few words around it: how the agent looked around,
  not how the project works.
"""

from __future__ import annotations

import re

_SLIP = re.compile(
    r"File has not been read yet|InputValidationError|tool_use_error|String to replace not "
    r"found|required parameter [`'\"]?\w+[`'\"]? is missing|File does not exist\. Current "
    r"working directory", re.IGNORECASE)
_WRAPPER = re.compile(
    r"<command-(?:name|message|args)>|<local-command-stdout>|<local-command-caveat>|"
    r"<task-notification>|<ide_opened_file>|<ide_selection>|^\s*[-*]?\s*Please continue\.?\s*$",
    re.IGNORECASE)
_EXPLORATION = re.compile(
    r"^\s*(?:[-*]\s+)?(?:\*\*[^*]{0,40}\*\*:?\s*)?`(?:ls|ll|tree|pwd|cat|head|tail|sed -n|find|"
    r"grep|rg|wc|which|echo|lsof)\b[^`]*`(?P<rest>.*)$")
#: an exploration command with more than this many words of explanation is kept
_EXPLANATION_WORDS = 8


def noise_class(line: str) -> str | None:
    """Which never-keep class ``line`` belongs to, or None when it may stay."""
    if _SLIP.search(line):
        return "tool-slip"
    if _WRAPPER.search(line):
        return "wrapper"
    found = _EXPLORATION.match(line)
    if found is not None:
        rest = re.sub(r"_\([^)]*\)_", "", found.group("rest"))  # provenance marks
        if len(re.findall(r"[A-Za-z]{2,}", rest)) <= _EXPLANATION_WORDS:
            return "exploration"
    return None
