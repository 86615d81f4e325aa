"""What a user's request says beyond the task: standing rules, decisions, renames, corrections.

A standing rule is general and about how to work ("always run the linter", "from now on use
pnpm", "note: this repo uses Postgres 16", "please don't add comments", "no, use pnpm not npm");
a one-off request is about a specific change ("fix the bug in X and make the tests pass") and is
never a rule. Every statement gets a normalised *subject* (``package manager``, ``database``…)
so that a later statement on the same subject can supersede it, within a session or across them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from reverie.hazards import hazard_of, own_words


class StatementKind(StrEnum):
    #: an explicit always / never / from-now-on / please-don't instruction
    RULE = "rule"
    #: "I prefer …", "use X not Y"
    PREFERENCE = "preference"
    #: "note: this repo uses …", "important: …"
    NOTE = "note"
    #: a correction of the agent that states how to work ("no, use pnpm not npm")
    CORRECTION = "correction"
    #: a choice made, possibly reversing an earlier one ("change of plan: drop X, move to Y")
    DECISION = "decision"
    #: "rename X to Y"
    RENAME = "rename"


@dataclass(frozen=True, slots=True)
class Statement:
    kind: StatementKind
    #: the sentence, as said (already redacted by the caller)
    text: str
    #: normalised subject key: what a later statement must share to supersede this one
    subject: str
    #: what it replaces (a decision's or a correction's old choice, a rename's old name)
    replaces: str | None = None
    #: the new choice or name, when the statement names one
    chosen: str | None = None

    @property
    def statement(self) -> str:
        """The sentence without its chat framing ("note:", "from now on,", "no,", "please")."""
        return plain_statement(self.text)


_SUBJECTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("package-manager", ("pnpm", "npm", "yarn", "bun", "pip", "uv", "poetry", "pipenv", "conda",
                         "lockfile", "package manager")),
    ("test-runner", ("pytest", "jest", "vitest", "mocha", "unittest", "playwright", "cypress")),
    ("formatter", ("prettier", "black", "gofmt", "rustfmt", "formatter", "formatting")),
    ("linter", ("eslint", "ruff", "flake8", "pylint", "linter", "lint")),
    ("type-checking", ("mypy", "pyright", "type hints", "typecheck", "type check", "any type")),
    ("database", ("postgres", "postgresql", "mysql", "mariadb", "sqlite", "mongodb", "mongo",
                  "dynamodb", "database", "db")),
    ("migrations", ("migration", "migrations", "alembic", "flyway")),
    ("orm", ("prisma", "sqlalchemy", "drizzle", "typeorm", "sequelize", "orm")),
    ("background-jobs", ("celery", "rq", "sidekiq", "bullmq", "broker", "task queue",
                         "job queue", "background jobs", "background job", "worker queue")),
    ("data-fetching", ("swr", "tanstack query", "tanstack", "react-query", "react query",
                       "axios", "apollo", "data fetching")),
    ("cache", ("redis", "memcached", "cache")),
    ("git-workflow", ("commit", "commits", "push", "branch", "rebase", "merge", "pull request",
                      "main branch", "force-push", "git")),
    ("docs-site", ("docs", "documentation", "readme", "mkdocs", "docusaurus", "sphinx")),
    ("money-rules", ("money", "cents", "currency", "decimal", "billing", "price", "prices")),
    ("dates-and-time-zones", ("utc", "timezone", "time zone", "timestamps", "dates")),
    ("logging", ("logging", "logger", "console.log", "print statements")),
    ("code-style", ("tabs", "spaces", "indentation", "semicolons", "quotes", "naming",
                    "comments", "docstrings", "line length")),
    ("language", ("typescript", "javascript", "python version", "node version")),
    ("frontend-framework", ("react", "vue", "svelte", "angular", "next.js", "nextjs", "tailwind")),
    ("backend-framework", ("django", "flask", "fastapi", "express", "phoenix", "rails")),
    ("api-style", ("graphql", "rest api", "grpc", "trpc")),
    ("ci", ("ci", "github actions", "pipeline")),
    ("deployment", ("deploy", "deployment", "vercel", "netlify", "heroku", "fly.io", "docker")),
    ("secrets-and-env", (".env", "secrets", "api key", "env vars", "environment variables")),
    ("tests", ("tests", "test", "testing", "coverage", "mocks", "mock", "fixtures")),
    ("dependencies", ("dependency", "dependencies", "library", "libraries", "packages")),
)
_NEGATION_BEFORE = re.compile(
    r"(?:never|not|no|don'?t(?: use)?|do not(?: use)?|instead of|rather than|drop|avoid|without)"
    r"\W*(?:use\W+)?(?:the\W+)?(?:[\w.@/-]+\W*(?:,|or|nor|and)\W*)*$"
)
_SUBJECT_PATTERNS = tuple(
    (subject, re.compile(r"(?<![\w.-])(?:" + "|".join(re.escape(t) for t in terms) + r")(?![\w-])"))
    for subject, terms in _SUBJECTS
)

_KNOWN = frozenset(subject for subject, _terms in _SUBJECTS)
#: the subjects ``subject_of`` knows by name (everything else is a slug of content words)
KNOWN_SUBJECTS = _KNOWN
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
#: a "sentence" ending in one of these goes on in the next one ("e.g. `uv run pytest`")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|resp|no)\.|\(e\.g\.)$", re.I)
_IMPERATIVE_VERBS = (
    r"use|run|write|commit|push|add|put|call|keep|do|make|include|prefix|test|ask|create|touch|"
    r"modify|edit|change|delete|remove|mock|import|return|wrap|log|print|store|check|format|"
    r"lint|install|update|rename|name|start|end|leave|skip|merge|rebase|rely|hardcode|hard-code|"
    r"expose|send|pin|bump|reformat|generate|document|comment|prefer|go|be|say|reply|answer|"
    r"respond|mention|work|read|follow|place|open|close|let|force|rewrite|refactor|depend"
)
_RULE = re.compile(
    r"^(?:please\s+|and\s+|also\s+|so\s+)?(?:always|never|don'?t|do not|avoid|stop|no more)\b"
    r"|\b(?:from now on|going forward|in the future|from here on|every time|each time|whenever)\b"
    r"|\b(?:you|we|agents?)\s+(?:should|must|need to|have to)?\s*(?:always|never)\b"
    rf"|\b(?:always|never)\s+(?:{_IMPERATIVE_VERBS})\b"
    r"|\bplease\s+(?:don'?t|do not|never|always|stop|avoid)\b"
    r"|\bmake sure (?:to|you|that you)?\s*(?:always|never)\b"
    r"|\bremember (?:to|that)\b|\bdon'?t ever\b|\bunder no circumstances\b|\bat all times\b"
    r"|\b(?:must|should)\s+(?:always|never)\b|\bis (?:forbidden|not allowed|mandatory)\b"
    r"|^(?:and\s+|also\s*:?\s*|then\s+)?(?:run|use|check)\b.{0,120}\bbefore (?:you |every |each |"
    r"any )?(?:finish|commit|push|tell|say|claim|report|declare|mark|merg|open|call it|are done|"
    r"hand)",
)
_NOTE = re.compile(
    r"^(?:note|important|fyi|heads up|reminder|remember|keep in mind|n\.?b\.?|rule|convention|"
    r"policy|warning)\s*[:\-—!]"
    r"|\b(?:this|the|our)\s+(?:repo|repository|project|codebase|team|app|monorepo)\s+"
    r"(?:uses|use|is using|runs on|relies on|requires|needs|is on)\b"
    r"|\bwe (?:always )?(?:use|are using|'re using|deploy (?:to|with|on))\b",
)
#: how the toolchain here must be: "python3 should point to python 3.11", "node must be 20"
_TOOLCHAIN = re.compile(
    r"\b(?:python3?|node(?:js)?|java|ruby|go|php|dotnet|deno|bun|rustc|npm|pnpm)\s+"
    r"(?:should|must|needs? to)\s+(?:point to|be|resolve to|run|use)\s+"
    r"(?:python3?|node|java|ruby|go|php|version)?\s*v?\d+(?:\.\d+)+\b")
_PREFERENCE = re.compile(
    r"\b(?:make|set)\s+(?:your|the|my)\s+default\s+(?:folder|directory|dir|branch|shell|"
    r"workspace|editor|model)\b"
    r"|\bi (?:prefer|like|want (?:you )?to always|'d rather|would rather|always want)\b"
    r"|\bprefer\s+\S+\s+(?:over|to)\b"
    r"|\buse\s+[\w.@/-]+\s*(?:,\s*)?(?:not|instead of|rather than|over)\s+[\w.@/-]+",
)
_CORRECTION_START = re.compile(
    r"^\s*(?:no\b|nope\b|wrong\b|not like that\b|not that\b|that'?s (?:not|wrong)\b|"
    r"that is (?:not|wrong)\b|actually\b|you (?:should|shouldn'?t|forgot|missed|broke)\b|"
    r"stop\b|why did you\b|i said\b|i told you\b)",
)
_CORRECTION_GENERAL = re.compile(
    r"\b(?:use|prefer|always|never|don'?t|do not|stop)\b"
)
_DECISION = re.compile(
    r"\bchange of plans?\b|\bdecision\s*:|\bwe(?:'ve| have)? decided\b|\bi(?:'ve| have)? decided\b"
    r"|\blet'?s (?:go with|use|switch to|move to|migrate to|drop|stick with|keep)\b"
    r"|\bwe(?:'ll| will| are going to|'re going to) (?:go with|use|switch to|move to|migrate to|"
    r"drop|stick with)\b"
    r"|\b(?:switch(?:ing)?|mov(?:e|ing)|migrat(?:e|ing)) (?:over )?(?:from [\w.@/-]+ )?to\b"
    r"|\bdrop(?:ping)? (?:the )?[\w.@/-]+,? (?:and|we|in favou?r of)\b|\bin favou?r of\b"
    r"|\bno longer use\b|\breplace [\w.@/-]+ with\b|\binstead of [\w.@/-]+,? (?:we|use|go)\b"
    r"|^\s*(?:actually|no|wait)\b.{0,20}\bmake it\b",
)
_NOUNS = (r"(?:hook|function|method|class|component|module|file|folder|directory|page|section|"
          r"variable|field|column|table|endpoint|route|type|package|command|flag|option|script|"
          r"job|task|service|model|view|crate)")
_NAME = r"[`'\"]?([\w./@:-]+?)(?:\(\))?[`'\"]?"
_RENAME = re.compile(
    # "rename the Guide section to How-to" (name, then what it is) is tried first
    rf"\brenam(?:e|ed|ing)\s+(?:the\s+|our\s+|my\s+)?{_NAME}\s+{_NOUNS}\s+(?:to|as|into)\s+{_NAME}"
    rf"(?=[.,;:!?)]*(?:\s|$))"
    rf"|\brenam(?:e|ed|ing)\s+(?:the\s+|our\s+|my\s+)?(?:{_NOUNS}\s+)?{_NAME}\s+(?:to|as|into)\s+"
    rf"{_NAME}(?=[.,;:!?)]*(?:\s|$))"
    rf"|{_NAME} is now (?:called|named)\s+{_NAME}(?=[.,;:!?)]*(?:\s|$))",
    re.IGNORECASE,
)
_PRONOUNS = frozenset({"it", "this", "that", "them", "these", "those", "everything"})
_REPLACED = re.compile(
    r"\b(?:drop(?:ping)?|instead of|no longer use|replace|from|not|rather than|over)\s+"
    r"(?:the\s+|using\s+)?[`'\"]?([\w.@/-]+)",
    re.IGNORECASE,
)
_CHOSEN = re.compile(
    r"\b(?:to|use|with|go with|stick with|in favou?r of|make it)\s+(?:use\s+|the\s+|using\s+)*"
    r"[`'\"]?([\w.@/-]+(?:\s+\d[\w.]*)?)",
    re.IGNORECASE,
)
_RULE_LIKE = frozenset({StatementKind.RULE, StatementKind.NOTE, StatementKind.PREFERENCE})
_TASK_WORDS = re.compile(
    r"\b(?:fix|add|implement|make|update|create|write|build|change|refactor|rename|remove|"
    r"delete|migrate|debug|investigate|look|check|run|test|please|can you|could you|now|"
    r"let'?s|need|want|help|show|explain|find|move|switch|set|get|start|do|finish|install|"
    r"deploy|try)\b",
)
_TASK_START = re.compile(
    r"^(?:please\s+|now\s*[:,]?\s*|then\s+|and\s+|also\s+)?(?:fix|add|implement|make|update|"
    r"create|write|build|change|refactor|rename|remove|delete|migrate|debug|investigate|look|"
    r"check|run|test|show|explain|find|move|switch|set|get|start|do|finish|install|deploy|try|"
    r"mock|pass|print|call|catch|raise|import|return|handle|replace|wrap|patch|"
    r"can you|could you|let'?s)\b",
)
_AVOIDED = re.compile(
    r"\b(?:never|not|instead of|rather than|don'?t use|do not use|no)\s+(?:use\s+|the\s+)?"
    r"[`'\"]?([\w.@/-]+)",
    re.IGNORECASE,
)
_AVOIDED_ALL = re.compile(
    r"\b(?:never|not|instead of|rather than|don'?t use|do not use)\s+(?:use\s+|the\s+)?"
    r"[`'\"]?([\w.@/-]+)[`'\"]?(?:\s*(?:,|or|nor|and)\s+[`'\"]?([\w.@/-]+))?",
    re.IGNORECASE,
)
_STOP = frozenset(
    "a an the to of in on for and or but is are be it this that these those we you i me my our "
    "your please always never dont don't do not from now on going forward note important use "
    "using make sure should must any all with by at as when whenever every each so just also "
    "can could would will it's its there here then than into via about over under no yes ok "
    "okay remember rule fyi heads up".split()
)
_WORD = re.compile(r"[a-z][\w.+-]*")
_MAX_SENTENCE = 300
# The patterns without a capture group are matched case-sensitively against lower-cased text
# (several times faster than IGNORECASE on long alternations): keep their literals lower-case.

#: a word every statement pattern needs (a superset: a hit only means "look closer")
_TRIGGER = re.compile(
    r"always|never|don'?t|do not|avoid|stop|no more|from now|going forward|in the future|"
    r"from here|every time|each time|whenever|please|make sure|remember|keep in mind|ever\b|"
    r"circumstances|"
    r"at all times|must|should|forbidden|not allowed|mandatory|note|important|fyi|heads up|"
    r"reminder|n\.?b\.?|rule|convention|policy|warning|repo|project|codebase|team|app\b|"
    r"we |we'|prefer|like|rather|use|instead|over\b|^\s*(?:no|nope|wrong|not|that|actually|"
    r"you|why|i said|i told)\b|plan|decision|decided|let'?s|switch|mov(?:e|ing)|migrat|drop|"
    r"favou?r|longer|replace|renam|now (?:called|named)|before|make it|default",
)


_PATTERN_OF = dict(_SUBJECT_PATTERNS)


def subject_of(text: str) -> str:
    """A normalised subject key for ``text``: a known topic when it names one, else its first
    three content words."""
    lowered = text.lower()
    best: tuple[int, str] | None = None
    for subject, pattern in _SUBJECT_PATTERNS:
        match = pattern.search(lowered)
        if match is not None and (best is None or match.start() < best[0]):
            best = (match.start(), subject)
    if best is not None:
        return best[1]
    words = [w.rstrip(".") for w in _WORD.findall(lowered) if w not in _STOP and len(w) > 2]
    return "-".join(words[:3]) or "general"


def choice_of(text: str, subject: str) -> str | None:
    """The first term of ``subject``'s lexicon that ``text`` names without negating it
    ("Use pnpm, never npm" → "pnpm" for ``package-manager``)."""
    pattern = _PATTERN_OF.get(subject)
    if pattern is None:
        return None
    lowered = text.lower()
    for match in pattern.finditer(lowered):
        if not _NEGATION_BEFORE.search(lowered[max(0, match.start() - 40):match.start()]):
            return match.group(0)
    return None


def _known_subject(word: str | None) -> str | None:
    """The lexicon subject ``word`` belongs to, if any."""
    if not word:
        return None
    found = subject_of(word)
    return found if found in _KNOWN else None


def _sentences(text: str) -> list[str]:
    parts: list[str] = []
    for raw in _SENTENCE_END.split(text[:4000]):
        part = " ".join(raw.split())
        previous = parts[-1] if parts else ""
        if parts and (_ABBREVIATION.search(previous) or previous.count("`") % 2
                      or previous.count("(") > previous.count(")")):
            parts[-1] = f"{parts[-1]} {part}"
        else:
            parts.append(part)
    out: list[str] = []
    for part in parts:
        part = part.strip(" -*•>")
        if part:
            out.append(part if len(part) <= _MAX_SENTENCE else part[: _MAX_SENTENCE - 1] + "…")
        if len(out) >= 40:
            break
    return out


def _word_after(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return match.group(1).strip("`'\".,;:") if match else None


def _chosen(text: str) -> str | None:
    """The choice a sentence makes: the first "use X" / "to X" not negated ("don't use npm
    here — use pnpm" → pnpm)."""
    for match in _CHOSEN.finditer(text):
        before = text[max(0, match.start() - 12):match.start()].lower()
        if re.search(r"(?:n't|not|never|no)\s*$", before):
            continue
        return match.group(1).strip("`'\".,;:")
    return None


def _the_users_own(found: Statement, sentence: str, own: str) -> bool:
    """Whether ``sentence`` may be a statement of the user's: said in their own words (not a
    quoted line, a fence, a quoted span or reported speech, ``reverie.hazards.own_words``), and,
    for a standing rule, not one that needs a person's approval (``hazard_of``: remote code,
    deleting outside the project, moving credentials, a URL)."""
    if sentence.rstrip("…") not in own:
        return False
    return found.kind not in _RULE_LIKE or hazard_of(sentence) is None


def statements_in(request: str) -> list[Statement]:
    """The rules, preferences, notes, corrections, decisions and renames ``request`` states."""
    return split_request(request)[0]


def split_request(request: str) -> tuple[list[Statement], str]:
    """``request``'s statements, and the rest of it: the task (sentences that state nothing
    general), as one string."""
    out: list[Statement] = []
    if not _TRIGGER.search(request[:4000].lower()):
        return out, request  # most requests state nothing general: one cheap scan decides
    sentences = _sentences(request)
    task: list[str] = []
    previous: Statement | None = None
    own = " ".join(own_words(request[:4000]).split())
    for position, sentence in enumerate(sentences):
        found = _statement(sentence, position)
        if found is not None and not _the_users_own(found, sentence, own):
            found = None  # quoted, fenced, reported or dangerous: part of the task, not a rule
        low = sentence.lower()
        goes_on = (found is None and previous is not None and not _TASK_WORDS.search(low)
                   and not sentence.endswith("?"))
        if previous is not None and previous.kind is StatementKind.CORRECTION \
                and found is None and not _TASK_START.match(low):
            continue  # "No, use pnpm. npm just created a lockfile we don't want.": the why
        if goes_on and previous is not None and previous.kind in _RULE_LIKE:
            # "Money is integer cents. Decimal only at the API boundary." : the second
            # sentence goes on with the first one's rule
            found = Statement(StatementKind.NOTE, sentence, previous.subject)
        if found is None or found.kind is StatementKind.RENAME:
            task.append(sentence)  # a rename is also the task of the moment
        if found is not None:
            out.append(found)
        previous = found
    return _standing_only(out, task)


#: what makes an instruction standing rather than a step of the task at hand
_STANDING = re.compile(
    r"\b(?:always|never|from now on|going forward|in the future|from here on|every time|"
    r"each time|whenever|remember|at all times|under no circumstances|ever|no more|any more|"
    r"anymore|in (?:this|the|our) (?:repo|repository|project|codebase)|as a rule|in general)\b")
#: a sentence that leans on the conversation for what it is about ("It's just separate
#: phase1.", "Put them into the existing one.")
_ANAPHORA = re.compile(r"^(?:(?:and|but|so|also|then|no|ok|okay)[,\s]+)?"
                       r"(?:it|it'?s|this|that|that'?s|they|them|these|those|there)\b", re.I)
#: "those tests", "these files", "that function": what it is about is in the chat
_DEMONSTRATIVE = re.compile(r"\b(?:those|these|that|this)\s+(?:new\s+)?(?:tests?|files?|functions?|"
                            r"methods?|changes?|ones?|lines?|classes?|calls?|parts?|bits?)\b", re.I)
#: "don't modify `send_with_retries`": leave one named thing alone, for the task at hand
_HANDS_OFF = re.compile(r"\b(?:don'?t|do not|never)\s+(?:modify|change|touch|edit|remove|delete|"
                        r"rename|replace|move|refactor)\b.*(?:`[^`]+`|\w/\w|\w\.\w{1,4}\b)", re.I)


def _standing_only(statements: list[Statement], task: list[str]) -> tuple[list[Statement], str]:
    """Keep the statements that stand on their own as rules. A bare "don't …" said next to a
    task ("add the tree context cache. don't replace the tree cache.") constrains that task;
    a sentence that starts with a pronoun needs the chat around it. Both go back to the task."""
    has_task = any(len(t.split()) >= 3 for t in task)
    kept: list[Statement] = []
    for statement in statements:
        low = statement.text.lower()
        weak = statement.kind in (StatementKind.RULE, StatementKind.CORRECTION) \
            and not _STANDING.search(low)
        leaning = statement.kind in (*_RULE_LIKE, StatementKind.CORRECTION) and (
            _ANAPHORA.match(low) is not None or _DEMONSTRATIVE.search(low) is not None)
        hands_off = weak and _HANDS_OFF.search(statement.text) is not None
        if (weak and has_task) or leaning or hands_off:
            task.append(statement.text)
            continue
        kept.append(statement)
    return kept, " ".join(task)


#: a literal each pattern's every match contains (a substring test is far cheaper than a
#: pattern whose alternatives are tried at every position)
_DECISION_KEYS = ("plan", "decision", "decided", "let", "we'll", "we will", "going to", "switch",
                  "mov", "migrat", "drop", "favor", "favour", "longer", "replace", "instead",
                  "make it")
_RULE_KEYS = ("always", "never", "don", "do not", "avoid", "stop", "no more", "from now",
              "forward", "future", "from here", "every time", "each time", "whenever", "please",
              "make sure", "remember", "ever", "circumstances", "at all times", "must",
              "should", "forbidden", "not allowed", "mandatory", "before")
_NOTE_KEYS = ("note", "important", "fyi", "heads up", "reminder", "remember", "keep in mind",
              "n.b", "nb", "rule",
              "convention", "policy", "warning", "repo", "project", "codebase", "team", "app",
              "we ")


_KEY_PATTERNS: dict[tuple[str, ...], re.Pattern[str]] = {
    keys: re.compile("|".join(re.escape(k) for k in keys))
    for keys in (_DECISION_KEYS, _RULE_KEYS, _NOTE_KEYS)
}


def _may(low: str, keys: tuple[str, ...]) -> bool:
    return _KEY_PATTERNS[keys].search(low) is not None


def _statement(sentence: str, position: int) -> Statement | None:
    low = sentence.lower()
    if not _TRIGGER.search(low):
        return None  # no word any statement needs: skip the patterns
    if sentence.endswith("?") and not (_may(low, _NOTE_KEYS) and _NOTE.search(low)):
        return None  # a question is not an instruction
    renaming = "renam" in low or "now called" in low or "now named" in low
    rename = _RENAME.search(sentence) if renaming else None
    if rename is not None:
        names = [g for g in rename.groups() if g]
        old, new = names[0], names[1]
        if old.lower() not in _PRONOUNS:
            return Statement(StatementKind.RENAME, sentence, f"name-of-{old}", old, new)
    if _may(low, _DECISION_KEYS) and _DECISION.search(low):
        replaced = _word_after(_REPLACED, sentence)
        chosen = _chosen(sentence)
        named = subject_of(sentence)
        subject = (named if named in _KNOWN else None) or _known_subject(chosen) \
            or _known_subject(replaced) or named
        return Statement(StatementKind.DECISION, sentence, subject, replaced, chosen)
    if position == 0 and _CORRECTION_START.match(low):
        if _CORRECTION_GENERAL.search(low):
            return Statement(StatementKind.CORRECTION, sentence, subject_of(sentence),
                             _word_after(_REPLACED, sentence), _chosen(sentence))
        return None
    if _may(low, _NOTE_KEYS) and _NOTE.search(low):
        # the subject of what is noted, not of the framing ("keep in mind: the API ...")
        return Statement(StatementKind.NOTE, sentence, subject_of(plain_statement(sentence)),
                         _word_after(_AVOIDED, sentence))
    if "should" in low or "must" in low or "needs" in low:
        if _TOOLCHAIN.search(low):
            return Statement(StatementKind.NOTE, sentence, subject_of(sentence))
    if _may(low, _RULE_KEYS) and _RULE.search(low):
        return Statement(StatementKind.RULE, sentence, subject_of(sentence),
                         _word_after(_AVOIDED, sentence))
    if _PREFERENCE.search(low):
        return Statement(StatementKind.PREFERENCE, sentence, subject_of(sentence),
                         _word_after(_REPLACED, sentence), _chosen(sentence))
    return None


def avoided(text: str) -> list[str]:
    """What a rule says not to use: "never npm or yarn" → ["npm", "yarn"]."""
    words: list[str] = []
    for match in _AVOIDED_ALL.finditer(text):
        for group in match.groups():
            if group and group.lower() not in _STOP:
                words.append(group.strip("`'\".,;:").lower())
    return list(dict.fromkeys(w for w in words if w))


_FRAMING = re.compile(
    r"^(?:(?:note|important|fyi|heads up|reminder|remember|keep in mind|n\.?b\.?|rule|"
    r"convention|policy|warning)\s*[:\-—!]\s*|(?:no(?!\s+(?:longer|more|need|matter|way|such|other|one)\b)|nope|wrong"
    r"|actually|ok(?:ay)?|so|also|and|now)\b[,.!:]?\s*|"
    r"(?:from now on|going forward|in the future|from here on)\b[,]?\s*|please\s+)+",
    re.IGNORECASE,
)


def plain_statement(text: str, capitalise: bool = True) -> str:
    """``text`` as a plain statement: chat framing dropped, first letter upper-case (unless
    not ``capitalise``). A leading "no" is framing ("no, use pnpm") unless it negates what
    follows ("no longer use gh-deploy" keeps its meaning)."""
    core = _FRAMING.sub("", text.strip()).strip()
    if not core:
        return text.strip()
    return core[0].upper() + core[1:] if capitalise else core


def is_correction(request: str) -> bool:
    """The request pushes back on what the agent did ("no, …", "that's wrong", "I said …")."""
    return bool(_CORRECTION_START.match(request[:400].lower()))
