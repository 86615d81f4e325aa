"""The redaction rules (data): what a secret looks like, and what replaces it.

Two kinds of rule, run in order by ``reverie.redact.scan``:

- regex rules anchored on a literal: vendor tokens by their documented prefix (``ghp_``,
  ``sk-ant-``...), PEM blocks, ``<private>``, ``Authorization`` headers, URL passwords,
  ``curl -u``, ``mysql -p``. Every pattern *starts with a literal*, so the engine's prefix
  search jumps between occurrences of it, and a token must start a run of token characters
  (a look-behind placed after the literal) scanned possessively, so runs are scanned once;
- finder rules (``Rule.finder``): credentials by the structure around a name
  (``reverie.redact.structure``) and long random values in an assignment, header, URL or flag
  position (``reverie.redact.entropy``), which look at the text with Python where a keyword or
  a position marks it.

Replacements look like ``[REDACTED:kind]``; no rule matches a replacement (values may not start
with ``[``), so ``redact(redact(x)[0]) == (redact(x)[0], 0)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from reverie.redact import entropy, structure

__all__ = ["MARKER_PREFIX", "RULES", "Rule", "apply_rule", "kinds", "redaction_marker"]

MARKER_PREFIX = structure.MARKER_PREFIX


def redaction_marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"{MARKER_PREFIX}{kind}]"


Replace = Callable[[re.Match[str]], "str | None"]


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    #: Returns the replacement, or ``None`` to leave the match alone (not a secret after all).
    replace: Replace
    #: literals one of which every text the rule matches contains: see ``_HitScan``
    needles: tuple[str, ...]
    #: other kinds the rule reports (``sk-ant-`` under the ``sk-`` scan)
    also: tuple[str, ...] = ()
    #: its matches can span lines (a PEM block, ``<private>...</private>``): see ``_redact``
    multiline: bool = False
    #: its literal is a word code is full of (``token``, ``api_key``): in a longer text it is
    #: nearly always there, so the rule scans the text without being looked for first
    common: bool = False
    #: a rule that finds its spans itself (``pattern`` and ``replace`` unused): it has no
    #: literal to be looked for, so it runs on every text
    finder: Callable[[str], list[structure.Span]] | None = None
    #: a token may be wrapped over several lines: its continuation lines are replaced too
    wraps: bool = False


def _whole(kind: str) -> Replace:
    marker = redaction_marker(kind)
    return lambda _match: marker


def _keep_prefix(kind: str) -> Replace:
    """Keep group ``prefix`` (a header name, ``Bearer``, ``user:``) and replace group ``secret``."""
    marker = redaction_marker(kind)

    def replace(match: re.Match[str]) -> str | None:
        if match.group("secret").startswith(MARKER_PREFIX):
            return None
        return match.group("prefix") + marker

    return replace


#: characters of a token's body; a token must not be glued to more of them on its left
_TOKEN_CHARS = "A-Za-z0-9_-"
_TOKEN_TAIL = rf"(?![{_TOKEN_CHARS}])"


def _starts_run(literal: str, chars: str = _TOKEN_CHARS) -> str:
    """``literal``, then a look-behind that the character before it is not one of ``chars``.

    The look-behind comes after the literal so the engine's prefix search still applies."""
    return rf"{re.escape(literal)}(?<![{chars}][\s\S]{{{len(literal)}}})"


@dataclass(frozen=True, slots=True)
class _Token:
    """A vendor token: ``literal`` at the start of a token run, then ``body``.

    Tokens are not scanned one by one: those whose literals share a first character become one
    pattern (``_merge_tokens``), because each scan of a long text costs about the same whatever
    it looks for, and the first character is where the engine's prefix search stops."""

    kind: str
    literal: str
    body: str
    tail: str = _TOKEN_TAIL
    chars: str = _TOKEN_CHARS
    #: other kinds sharing the literal, by longer prefix (``sk-ant-`` under ``sk-``)
    by_prefix: tuple[tuple[str, str], ...] = ()
    #: the literals to look for, when more specific than ``literal`` (``ghp_`` for ``gh``)
    needles: tuple[str, ...] = ()

    def regex_after_first(self) -> str:
        """The token's regex without its first character (the merged pattern's prefix)."""
        rest = re.escape(self.literal[1:])
        behind = rf"(?<![{self.chars}][\s\S]{{{len(self.literal)}}})"
        return rest + behind + self.body + self.tail

    def marker(self, found: str) -> str:
        kind = next((k for p, k in self.by_prefix if found.startswith(p)), self.kind)
        return redaction_marker(kind)


def _token(kind: str, literal: str, body: str, *, tail: str = _TOKEN_TAIL,
           chars: str = _TOKEN_CHARS, by_prefix: dict[str, str] | None = None,
           needles: tuple[str, ...] = ()) -> _Token:
    return _Token(kind, literal, body, tail, chars, tuple((by_prefix or {}).items()), needles)


def _merge_tokens(tokens: list[_Token]) -> Rule:
    """One rule for tokens whose literals start with the same character; each alternative is a
    named group, and the group that matched says which token it was."""
    first = tokens[0].literal[0]
    alternatives = "|".join(f"(?P<t{i}>{t.regex_after_first()})" for i, t in enumerate(tokens))
    # a class test of the second character rejects most occurrences of a common first letter
    # in one step, before the alternatives are tried one by one
    seconds = {t.literal[1] for t in tokens if len(t.literal) > 1}
    check = ""
    if len(tokens) > 1 and all(len(t.literal) > 1 for t in tokens):
        check = "(?=[" + "".join(re.escape(c) for c in sorted(seconds)) + "])"
    pattern = re.compile(f"{re.escape(first)}{check}(?:{alternatives})")

    def replace(match: re.Match[str]) -> str | None:
        token = tokens[int((match.lastgroup or "t0")[1:])]
        return token.marker(match.group(0))

    kinds = sorted({t.kind for t in tokens} | {k for t in tokens for _, k in t.by_prefix})
    needles = tuple(n for t in tokens for n in (t.needles or (t.literal,)))
    return Rule(kinds[0], pattern, replace, needles, tuple(kinds[1:]), wraps=True)


def _build(entries: tuple[Rule | _Token, ...]) -> tuple[Rule, ...]:
    """The rules in order, tokens merged by first character at the place of the first one."""
    groups: dict[str, list[_Token]] = {}
    for entry in entries:
        if isinstance(entry, _Token):
            groups.setdefault(entry.literal[0], []).append(entry)
    rules: list[Rule] = []
    for entry in entries:
        if isinstance(entry, Rule):
            rules.append(entry)
        elif entry is groups[entry.literal[0]][0]:
            rules.append(_merge_tokens(groups[entry.literal[0]]))
    return tuple(rules)


# Placeholders, not secrets: ``Bearer REDACTED_TOKEN``, ``YOUR_KEY_HERE``, ``****``.
_PLACEHOLDER_SHAPE = re.compile(r".*REDACTED.*|\*+|x{3,}|X{3,}|\.{3,}|<[^>]*>")


def _placeholder(secret: str) -> bool:
    """``YOUR_TOKEN``, ``****``, ``<password>``; an UPPER_SNAKE value only when it reads as a
    name (``structure.constant_name``: ``AAAAAAAAAAAAAA_A`` is a password)."""
    return _PLACEHOLDER_SHAPE.fullmatch(secret) is not None or structure.constant_name(secret)
#: a quote closing a name (``"Authorization": ``), JSON-escaped once or twice in raw JSONL text
_NAME_QUOTE = r"(?:\\{0,3}[\"'])?"
#: the pattern of a finder rule (never used)
_NEVER = re.compile(r"(?!)")


# --- credentials inside a command line or URL ---------------------------------------------------


def _url_password(match: re.Match[str]) -> str | None:
    secret = match.group("secret")
    if MARKER_PREFIX in match.group("prefix"):
        return None
    if secret.startswith(MARKER_PREFIX) or secret.startswith("$") or _placeholder(secret):
        return None
    return match.group("prefix") + redaction_marker("url_password") + "@"


def _command_password(kind: str) -> Replace:
    marker = redaction_marker(kind)

    def replace(match: re.Match[str]) -> str | None:
        secret = match.group("secret")
        if secret.startswith(("$", MARKER_PREFIX)) or _placeholder(secret):
            return None
        user = match.groupdict().get("user") or ""
        if user.isdigit() and secret.isdigit():  # -u 1000:1000 is a uid:gid
            return None
        quote = match.group("quote")
        return match.group("prefix") + quote + user + (":" if user else "") + marker + quote

    return replace


def _authorization(match: re.Match[str]) -> str | None:
    """With a scheme (``Basic abc...``) any literal counts; without one, only token-shaped text."""
    secret = match.group("secret")
    if _placeholder(secret) or secret.startswith(MARKER_PREFIX):
        return None
    if not match.group("scheme") and (len(secret) < 16 or not any(c.isdigit() for c in secret)):
        return None
    return match.group("prefix") + redaction_marker("authorization")


def _authorization_rule(literal: str, first: str) -> Rule:
    pattern = re.compile(
        rf"(?P<prefix>{literal}(?<={first}{literal}){_NAME_QUOTE}[ \t]*+[:=][ \t]*+{_NAME_QUOTE}"
        r"(?P<scheme>(?i:basic|bearer|token|digest|negotiate|apikey|ntlm)[ \t]++)?)"
        r"(?P<secret>[A-Za-z0-9._~+/=-]{8,4096}+)(?![$])"
    )
    return Rule("authorization", pattern, _authorization, (literal,), wraps=True)


_COMMAND_WORDS = r"(?:[ \t]++[^\s|;&]{1,256}+){0,12}?"

RULES: tuple[Rule, ...] = _build((
    # <private>...</private>: everything inside, tags included. An unclosed tag hides the rest.
    Rule(
        "private",
        re.compile(r"<(?:private|Private|PRIVATE)>.*?(?:</(?:private|Private|PRIVATE)>|\Z)",
                   re.DOTALL),
        _whole("private"),
        ("<private>", "<Private>", "<PRIVATE>"),
        multiline=True,
    ),
    # PEM private keys. A bare BEGIN line without a key body (code that looks for the header)
    # is left alone. The body never crosses another ``-----`` run, so a missing END or a run
    # of headers costs one pass.
    Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?:[^-]|-(?!----)){0,16000}+-----END (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY"
            r"(?: BLOCK)?-----"
            r"|(?:\\n|\s)*+[A-Za-z0-9+/=]{40,}+(?:(?:\\n|\s)++[A-Za-z0-9+/=]{4,}+){0,400}+)"
        ),
        _whole("private_key"),
        ("-----BEGIN ",),
        multiline=True,
    ),
    # Authorization headers with a literal credential (``Bearer $TOKEN`` is a variable: kept).
    _authorization_rule("uthorization", "[Aa]"),
    _authorization_rule("UTHORIZATION", "A"),
    Rule(
        "bearer",
        re.compile(
            r"(?P<prefix>Bearer(?<![A-Za-z0-9_]Bearer)[ \t]++)"
            r"(?P<secret>(?=[A-Za-z._~+/=-]{0,4096}+[0-9])"
            r"[A-Za-z0-9._~+/=-]{16,4096}+)(?![$])"
        ),
        _keep_prefix("bearer"),
        ("Bearer",),
        wraps=True,
    ),
    # vendor tokens, each anchored on its documented prefix
    # sk-ant-... (Anthropic) and sk-... / sk-proj-... (OpenAI): one scan, the kind by prefix
    _token("openai", "sk-", r"(?=[A-Za-z_-]{0,512}+[0-9])[A-Za-z0-9_-]{20,512}+",
           by_prefix={"sk-ant-": "anthropic"}),
    _token("github", "gh", r"[pousr]_[A-Za-z0-9]{36,255}+",
           needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _token("github", "github_pat_", r"[A-Za-z0-9_]{22,255}+"),
    _token("gitlab", "gl",
           r"(?:(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent|ffct)-[A-Za-z0-9_.-]{20,300}+"
           r"|c_[A-Za-z0-9+/]{32,400}+={0,3}|sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})",
           by_prefix={"glc_": "grafana", "glsa_": "grafana"},
           needles=("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glsoat-", "glft-",
                    "glimt-", "glagent-", "glffct-", "glc_", "glsa_")),
    _token("gitlab", "GR1348941", r"[A-Za-z0-9_-]{20,64}+"),
    _token("aws", "A", r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}+",
           needles=("AKIA", "ASIA", "ABIA", "ACCA", "A3T")),
    _token("slack", "xox", r"[abposre]-[A-Za-z0-9-]{10,255}+"),
    _token("slack", "xapp-", r"[0-9]-[A-Za-z0-9-]{10,255}+"),
    _token("slack", "hooks.slack.com/", r"(?:services|workflows|triggers)/[A-Za-z0-9/_+-]{20,200}+",
           chars="A-Za-z0-9_.-"),
    _token("discord", "discord", r"(?:app)?\.com/api/webhooks/[0-9]{5,30}+/[A-Za-z0-9_-]{20,200}+",
           chars="A-Za-z0-9_-"),
    _token("google", "AIza", r"[0-9A-Za-z_-]{35}"),
    _token("google", "GOCSPX-", r"[A-Za-z0-9_-]{20,64}+"),
    _token("google", "ya29.", r"[A-Za-z0-9_-]{30,2048}+"),
    _token("stripe", "sk_", r"(?:live|test|prod)_[0-9A-Za-z]{10,255}+"),
    _token("stripe", "rk_", r"(?:live|test|prod)_[0-9A-Za-z]{10,255}+"),
    _token("stripe", "whsec_", r"[0-9A-Za-z]{20,255}+"),
    _token("huggingface", "hf_", r"[A-Za-z0-9]{30,64}+"),
    _token("npm", "npm_", r"[A-Za-z0-9]{36}"),
    _token("pypi", "pypi-AgEIcHlwaS5vcmc", r"[A-Za-z0-9_-]{50,1000}+"),
    _token("rubygems", "rubygems_", r"[a-f0-9]{48}"),
    _token("sendgrid", "SG.", r"[A-Za-z0-9_-]{16,32}+\.[A-Za-z0-9_-]{16,64}+"),
    _token("sendinblue", "xkeysib-", r"[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _token("twilio", "SK", r"[0-9a-fA-F]{32}"),
    _token("age", "AGE-SECRET-KEY-1", r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    Rule(  # 123456789:AA... (the bot id before the colon is public, the rest is the secret)
        "telegram",
        re.compile(r"(?P<prefix>:)(?<=[0-9]{5}:)(?P<secret>AA[A-Za-z0-9_-]{30,40}+)" + _TOKEN_TAIL),
        _keep_prefix("telegram"),
        (":AA",)
    ),
    _token("databricks", "dapi", r"[a-f0-9]{32}(?:-[0-9])?"),
    _token("digitalocean", "do", r"[opr]_v1_[a-f0-9]{64}",
           needles=("doo_v1_", "dop_v1_", "dor_v1_")),
    _token("shopify", "shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
           needles=("shpat_", "shpca_", "shppa_", "shpss_")),
    _token("vault", "hv", r"[sb]\.[A-Za-z0-9_-]{24,300}+", chars="A-Za-z0-9_.-",
           needles=("hvs.", "hvb.")),
    _token("doppler", "dp.pt.", r"[A-Za-z0-9]{40,48}+", chars="A-Za-z0-9_.-"),
    _token("linear", "lin_api_", r"[A-Za-z0-9]{40}"),
    _token("postman", "PMAK-", r"[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    _token("pulumi", "pul-", r"[a-f0-9]{40}"),
    _token("perplexity", "pplx-", r"[A-Za-z0-9]{40,64}+"),
    _token("groq", "gsk_", r"[A-Za-z0-9]{40,64}+"),
    _token("sentry", "sntry", r"[su]_[A-Za-z0-9+/=_]{40,400}+"),
    _token("heroku", "HRKU-AA", r"[0-9a-zA-Z_-]{58}"),
    _token("atlassian", "ATATT3", r"[A-Za-z0-9_=-]{150,300}+"),
    _token("artifactory", "AKCp", r"[A-Za-z0-9]{69}"),
    _token("dynatrace", "dt0c01.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    _token("alibaba", "LTAI", r"[A-Za-z0-9]{20}"),
    _token("flyio", "fo1_", r"[A-Za-z0-9_-]{43}"),
    _token("flyio", "fm2_", r"[A-Za-z0-9+/]{100,}+={0,3}"),
    _token("onepassword", "ops_eyJ", r"[A-Za-z0-9+/]{250,}+={0,3}"),
    _token("planetscale", "pscale_", r"(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}+"),
    _token("notion", "ntn_", r"[0-9]{11}[A-Za-z0-9]{35}"),
    _token("newrelic", "NRAK-", r"[A-Za-z0-9]{27}"),
    _token("square", "sq0", r"(?:atp|csp)-[A-Za-z0-9_-]{22,60}+", needles=("sq0atp-", "sq0csp-")),
    _token("openshift", "sha256~", r"[A-Za-z0-9_-]{43}"),
    _token("easypost", "EZ", r"[AT]K[A-Za-z0-9]{54}", needles=("EZAK", "EZTK")),
    _token("flutterwave", "FLWSECK", r"(?:_TEST)?-[a-hA-H0-9]{32}-X"),
    _token("jwt", "eyJ", r"[A-Za-z0-9_-]{8,4096}+\.eyJ[A-Za-z0-9_-]{8,8192}+"
                         r"\.[A-Za-z0-9_-]{8,2048}+",
           tail=r"(?![A-Za-z0-9_.-])"),
    # Azure storage / service bus connection strings: AccountKey=..., SharedAccessKey=...
    Rule("azure",
          re.compile(r"(?P<prefix>Key=(?:(?<=AccountKey=)|(?<=SharedAccessKey=)))"
                     r"(?P<secret>[A-Za-z0-9+/]{20,}+={0,2})"),
          _keep_prefix("azure"), ("AccountKey=", "SharedAccessKey=")),
    # scheme://user:PASSWORD@host (databases, brokers, git remotes, proxies). The password may
    # itself hold an ``@``: the last one before the host ends it.
    Rule(
        "url_password",
        re.compile(
            r"(?P<prefix>://[^\s:/@\"'`<>\\]{0,128}+:)"
            r"(?P<secret>[^\s/\"'`<>\\]{1,256})@(?=[^\s@/\"'`<>\\]{0,253}+(?:[/?#\s\"'`<>\\]|$))"
        ),
        _url_password,
        # looked for by its ``@``: rarer in transcripts than ``://``, and every match has one
        ("@",)
    ),
    # curl -u user:password / --user user:password
    Rule(
        "basic_auth",
        re.compile(
            r"(?P<prefix>curl(?<![A-Za-z0-9_-]curl)" + _COMMAND_WORDS
            + r"[ \t]++(?:-u|--user)(?:[ \t]++|=))"
            r"(?P<quote>[\"']?)(?P<user>[^\s:\"'@]{0,64}+):(?P<secret>[^\s\"']{1,256}+)(?P=quote)"
        ),
        _command_password("basic_auth"),
        ("curl",)
    ),
    # mysql -pPASSWORD (the password glued to -p; ``-p`` alone prompts)
    Rule(
        "mysql_password",
        re.compile(
            r"(?P<prefix>mysql(?<![A-Za-z0-9_-]mysql)[a-z]*+" + _COMMAND_WORDS + r"[ \t]++-p)"
            r"(?P<quote>[\"']?)(?P<secret>[^\s\"'-][^\s\"']{0,255}+)(?P=quote)"
        ),
        _command_password("mysql_password"),
        ("mysql",)
    ),
    # after a credential-like name, in any structure: the value to the end of its token
    Rule("env", _NEVER, _whole("env"), (), structure.KINDS, finder=structure.find),
    # second layer: a long random value in an assignment, header, URL or flag position
    Rule(entropy.KIND, _NEVER, _whole(entropy.KIND), (), finder=entropy.find),
))


def kinds() -> list[str]:
    """The kinds of secret the rules know, sorted (for documentation and tests)."""
    return sorted({kind for rule in RULES for kind in (rule.kind, *rule.also)})


def apply_rule(rule: Rule, text: str) -> tuple[str, int]:
    """``text`` with every match of ``rule`` replaced, and how many were."""
    if rule.finder is not None:
        spans = rule.finder(text)
        if not spans:
            return text, 0
        pieces: list[str] = []
        done = 0
        for span in spans:
            pieces += (text[done:span.start], redaction_marker(span.kind))
            done = span.end
        pieces.append(text[done:])
        return "".join(pieces), len(spans)
    # a search is cheaper than ``sub`` when nothing matches (most texts); when something does,
    # the matches are walked from there and the text rebuilt only if one is replaced (most
    # matches are code, not secrets)
    first = rule.pattern.search(text)
    if first is None:
        return text, 0
    parts: list[str] = []
    done = 0
    for match in rule.pattern.finditer(text, first.start()):
        if match.start() < done:
            continue  # inside the continuation lines of the previous token
        replacement = rule.replace(match)
        if replacement is not None:
            end = match.end()
            if rule.wraps:
                found = match.groupdict().get("secret") or match.group(0)
                end = structure.wrapped_end(text, end, found)
            parts += (text[done:match.start()], replacement)
            done = end
    if not parts:
        return text, 0
    parts.append(text[done:])
    return "".join(parts), len(parts) // 2
