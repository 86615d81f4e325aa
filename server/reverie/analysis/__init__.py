"""Offline per-session analysis: one forward pass over a session's messages → ``SessionAnalysis``.

The offline notes writer, the offline dream and the sleep cycle build on these facts (requests,
standing rules with subjects, decisions, project commands, errors linked to fixes, files, end
state) instead of re-reading conversations. See ``analyser`` for how the pass stays linear.
"""

from reverie.analysis.analyser import SessionAnalyser, analyse_session
from reverie.analysis.commands import CommandCategory, CommandInfo, analyse_command
from reverie.analysis.models import (
    Change,
    Commit,
    Decision,
    EndState,
    ErrorFix,
    Evidence,
    FileActivity,
    ProjectCommand,
    Request,
    Rule,
    SessionAnalysis,
    Summarised,
    WorkStep,
)
from reverie.analysis.statements import StatementKind
from reverie.analysis.working import Limits

__all__ = [
    "Change",
    "CommandCategory",
    "CommandInfo",
    "Commit",
    "Decision",
    "EndState",
    "ErrorFix",
    "Evidence",
    "FileActivity",
    "Limits",
    "ProjectCommand",
    "Request",
    "Rule",
    "SessionAnalyser",
    "SessionAnalysis",
    "StatementKind",
    "Summarised",
    "WorkStep",
    "analyse_command",
    "analyse_session",
]
