"""Shell commands: what kind of project command a line is, and which check it runs on what.

Memory keeps the commands that build, test, run, lint… a project, in the form that worked, and
never the exploration around them (``ls``, ``cat``, ``sed -n``, ``grep``, one-off ``rm``, reading
``/tmp``). Failure → fix linking needs a *target key* (the tool and subcommand, ``pytest`` or
``npm run build``) and a *scope* (the paths and selectors it was narrowed to), so that a pass of
the same or a broader check of the same target can be found with one dictionary lookup.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from enum import StrEnum


class CommandCategory(StrEnum):
    BUILD = "build"
    TEST = "test"
    RUN = "run"
    LINT = "lint"
    FORMAT = "format"
    TYPECHECK = "typecheck"
    INSTALL = "install"
    DEPLOY = "deploy"
    MIGRATE = "migrate"
    #: code generators (``sqlc generate``, ``go generate``, ``make codegen``): a successful run
    #: changes code, so it can be what fixed a failure
    GENERATE = "generate"
    #: version control (``git push``, ``git commit``): failures matter, not a fact to keep
    VCS = "vcs"
    #: looking around: never a fact
    EXPLORE = "explore"
    #: anything else (a project's own tool, a script)
    OTHER = "other"


#: categories worth remembering as "how to work on this project"
PROJECT_CATEGORIES = frozenset({
    CommandCategory.BUILD, CommandCategory.TEST, CommandCategory.RUN, CommandCategory.LINT,
    CommandCategory.FORMAT, CommandCategory.TYPECHECK, CommandCategory.INSTALL,
    CommandCategory.DEPLOY, CommandCategory.MIGRATE, CommandCategory.GENERATE,
})
#: categories whose scope (paths, selectors) narrows what they check
_SCOPED = frozenset({CommandCategory.TEST, CommandCategory.LINT, CommandCategory.TYPECHECK,
                     CommandCategory.FORMAT, CommandCategory.BUILD})


@dataclass(frozen=True, slots=True)
class CommandInfo:
    """What one shell command line is (computed once per call)."""

    #: the main command of the line, without ``cd x &&``, env assignments and filters
    main: str
    category: CommandCategory
    #: the tool and subcommand: what a pass must share with a failure to resolve it
    key: str
    #: paths and selectors the run was narrowed to (empty: the whole target)
    scope: frozenset[str]
    #: what a pass must share with a failure to resolve it: the key, or for checks (tests,
    #: lint, types, format, build) the kind of check and the ecosystem, so that ``pnpm test``
    #: covers ``vitest run src/x.test.ts -t y`` and ``pytest`` covers ``python -m pytest -k z``
    check_key: str = ""
    #: the other real commands of a chain (``ruff check . && mypy billing``: mypy's info)
    chain: tuple[CommandInfo, ...] = ()
    #: it adds a dependency (``uv add psycopg``, ``pnpm add swr``): a one-off, not a project
    #: command, but a change to the project that can be what fixed a failure
    adds_dependency: bool = False

    @property
    def changes_the_project(self) -> bool:
        """A successful run changes code or dependencies: a generator, or adding a package."""
        return self.adds_dependency or self.category is CommandCategory.GENERATE

    @property
    def is_project(self) -> bool:
        return self.category in PROJECT_CATEGORIES

    @property
    def project_wide(self) -> bool:
        """A project entry point run whole (``make test``): it covers every check of its kind."""
        return self.check_key.endswith(":" + PROJECT) and not self.scope

    @property
    def ecosystem(self) -> str | None:
        """The ecosystem the check runs in (``pnpm test`` and ``npx vitest run``: js), when it
        can be told (``make test``: not)."""
        _, _, ecosystem = self.check_key.partition(":")
        if ecosystem != PROJECT:
            return ecosystem or None
        return _ENTRY_ECOSYSTEMS.get(self.key.split(" ", 1)[0])

    def same_goal(self, other: CommandInfo) -> bool:
        """A different command checking what ``other`` checked, the whole of it (``npx vitest
        run`` after ``npm test``; ``uv run pytest`` after ``tox``): when it works, the failure
        of ``other`` is superseded rather than still failing."""
        return (self.category is other.category and self.category in _SCOPED
                and not self.scope and self.key != other.key
                and self.ecosystem is not None and self.ecosystem == other.ecosystem)

    def covers(self, other: CommandInfo) -> bool:
        """This run checks at least what ``other`` checked (same key, same or broader scope)."""
        if self.project_wide and self.category is other.category:
            return True
        if (self.check_key or self.key) != (other.check_key or other.key):
            return False
        if self.category not in _SCOPED or not self.scope or self.scope <= other.scope:
            return True
        for item in self.scope - other.scope:  # a directory or file that contains other's
            prefixes = (item.rstrip("/") + "/", item + "::")
            if not any(narrower.startswith(prefixes) for narrower in other.scope):
                return False
        return True


_EXPLORE = frozenset({
    "ls", "ll", "la", "cat", "bat", "less", "more", "head", "tail", "find", "fd", "grep", "egrep",
    "fgrep", "rg", "ag", "ack", "pwd", "wc", "tree", "echo", "printf", "which", "whereis", "type",
    "file", "stat", "du", "df", "env", "printenv", "whoami", "date", "uname", "hostname", "id",
    "rm", "rmdir", "mkdir", "cp", "mv", "touch", "chmod", "chown", "ln", "cd", "sleep", "kill",
    "pkill", "ps", "top", "jq", "yq", "diff", "cmp", "sort", "uniq", "cut", "tr", "xargs", "open",
    "xdg-open", "clear", "history", "true", "false", "test", "[", "realpath", "dirname",
    "basename", "readlink", "md5sum", "sha256sum", "base64", "od", "xxd", "hexdump", "lsof",
    "netstat", "ss", "free", "uptime", "nproc", "source", ".", "export", "set", "unset", "tee",
    "awk", "sed", "nl", "column", "strings", "man", "help",
})
#: arguments that make a command print about itself instead of doing its work
_INFO_ONLY = frozenset({"--version", "--help", "--collect-only", "--co", "-V"})
_GIT_EXPLORE = frozenset({"status", "log", "diff", "show", "branch", "remote", "rev-parse",
                          "ls-files", "blame", "stash", "fetch", "config", "describe", "reflog",
                          "shortlog", "grep", "tag", "worktree"})
_WRAPPERS = frozenset({"sudo", "time", "nice", "nohup", "env", "command", "exec", "timeout",
                       "xvfb-run", "caffeinate", "stdbuf"})
_RUNNERS = {("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("pdm", "run"),
            ("hatch", "run"), ("rye", "run"), ("bundle", "exec"), ("pnpm", "exec"),
            ("yarn", "exec"), ("npm", "exec"), ("conda", "run")}
_DIRECT_RUNNERS = frozenset({"npx", "bunx", "pnpx", "uvx"})
_TEMP = re.compile(r"(?:^|[\s='\"])(?:/tmp/|/var/folders/|/private/tmp/|\$TMPDIR|%TEMP%)")
_TEMP_PATH = re.compile(r"^(?:/tmp/|/private/tmp/|/var/folders/|/private/var/folders/)")


def is_temp_path(path: str) -> bool:
    """A scratch path (``/tmp/x``): what is built or written there is not the project's."""
    return _TEMP_PATH.match(path) is not None


_REDIRECT = re.compile(r"\d?>>?&?\s*\S+")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

_TOOLS: dict[str, CommandCategory] = {
    "pytest": CommandCategory.TEST, "py.test": CommandCategory.TEST,
    "jest": CommandCategory.TEST, "vitest": CommandCategory.TEST, "mocha": CommandCategory.TEST,
    "tox": CommandCategory.TEST, "nox": CommandCategory.TEST, "rspec": CommandCategory.TEST,
    "phpunit": CommandCategory.TEST, "ctest": CommandCategory.TEST, "ava": CommandCategory.TEST,
    "playwright": CommandCategory.TEST, "cypress": CommandCategory.TEST,
    "ruff": CommandCategory.LINT, "eslint": CommandCategory.LINT, "flake8": CommandCategory.LINT,
    "pylint": CommandCategory.LINT, "golangci-lint": CommandCategory.LINT,
    "shellcheck": CommandCategory.LINT, "rubocop": CommandCategory.LINT,
    "stylelint": CommandCategory.LINT, "hadolint": CommandCategory.LINT,
    "markdownlint": CommandCategory.LINT, "biome": CommandCategory.LINT,
    "black": CommandCategory.FORMAT, "prettier": CommandCategory.FORMAT,
    "isort": CommandCategory.FORMAT, "gofmt": CommandCategory.FORMAT,
    "rustfmt": CommandCategory.FORMAT, "clang-format": CommandCategory.FORMAT,
    "mypy": CommandCategory.TYPECHECK, "pyright": CommandCategory.TYPECHECK,
    "vue-tsc": CommandCategory.TYPECHECK, "basedpyright": CommandCategory.TYPECHECK,
    "tsc": CommandCategory.BUILD, "webpack": CommandCategory.BUILD,
    "sphinx-build": CommandCategory.BUILD,
    "esbuild": CommandCategory.BUILD, "rollup": CommandCategory.BUILD,
    "cmake": CommandCategory.BUILD, "ninja": CommandCategory.BUILD, "gcc": CommandCategory.BUILD,
    "uvicorn": CommandCategory.RUN, "gunicorn": CommandCategory.RUN,
    "flask": CommandCategory.RUN, "streamlit": CommandCategory.RUN,
    "alembic": CommandCategory.MIGRATE, "flyway": CommandCategory.MIGRATE,
    "goose": CommandCategory.MIGRATE, "dbmate": CommandCategory.MIGRATE,
    "vercel": CommandCategory.DEPLOY, "netlify": CommandCategory.DEPLOY,
    "fly": CommandCategory.DEPLOY, "flyctl": CommandCategory.DEPLOY,
    "wrangler": CommandCategory.DEPLOY, "terraform": CommandCategory.DEPLOY,
    "kubectl": CommandCategory.DEPLOY, "helm": CommandCategory.DEPLOY,
    "serverless": CommandCategory.DEPLOY, "twine": CommandCategory.DEPLOY,
    "git": CommandCategory.VCS, "gh": CommandCategory.VCS,
    "protoc": CommandCategory.GENERATE, "mockgen": CommandCategory.GENERATE,
    "oapi-codegen": CommandCategory.GENERATE, "gqlgen": CommandCategory.GENERATE,
    "graphql-codegen": CommandCategory.GENERATE, "openapi-generator": CommandCategory.GENERATE,
    "openapi-generator-cli": CommandCategory.GENERATE, "stringer": CommandCategory.GENERATE,
}
#: package managers and build tools whose subcommand decides the category
_SUBCOMMANDS: dict[str, CommandCategory] = {
    "test": CommandCategory.TEST, "tests": CommandCategory.TEST, "check": CommandCategory.TEST,
    "build": CommandCategory.BUILD, "compile": CommandCategory.BUILD,
    "package": CommandCategory.BUILD, "assemble": CommandCategory.BUILD,
    "dist": CommandCategory.BUILD, "bundle": CommandCategory.BUILD,
    "run": CommandCategory.RUN, "start": CommandCategory.RUN, "dev": CommandCategory.RUN,
    "serve": CommandCategory.RUN, "server": CommandCategory.RUN, "preview": CommandCategory.RUN,
    "up": CommandCategory.RUN, "watch": CommandCategory.RUN,
    "lint": CommandCategory.LINT, "clippy": CommandCategory.LINT, "vet": CommandCategory.LINT,
    "credo": CommandCategory.LINT,
    "fmt": CommandCategory.FORMAT, "format": CommandCategory.FORMAT,
    "typecheck": CommandCategory.TYPECHECK, "type-check": CommandCategory.TYPECHECK,
    "types": CommandCategory.TYPECHECK, "tsc": CommandCategory.TYPECHECK,
    "dialyzer": CommandCategory.TYPECHECK,
    "install": CommandCategory.INSTALL, "i": CommandCategory.INSTALL,
    "ci": CommandCategory.INSTALL, "add": CommandCategory.INSTALL,
    "sync": CommandCategory.INSTALL, "get": CommandCategory.INSTALL,
    "deps.get": CommandCategory.INSTALL, "tidy": CommandCategory.INSTALL,
    "download": CommandCategory.INSTALL, "restore": CommandCategory.INSTALL,
    "deploy": CommandCategory.DEPLOY, "publish": CommandCategory.DEPLOY,
    "release": CommandCategory.DEPLOY,
    "migrate": CommandCategory.MIGRATE, "makemigrations": CommandCategory.MIGRATE,
    "db:migrate": CommandCategory.MIGRATE, "ecto.migrate": CommandCategory.MIGRATE,
    "migration": CommandCategory.MIGRATE, "migrations": CommandCategory.MIGRATE,
    "phx.server": CommandCategory.RUN, "runserver": CommandCategory.RUN,
    "gh-deploy": CommandCategory.DEPLOY,
    "generate": CommandCategory.GENERATE, "gen": CommandCategory.GENERATE,
    "codegen": CommandCategory.GENERATE,
}
_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun", "cargo", "go", "mix", "make", "just",
                       "task", "gradle", "./gradlew", "gradlew", "mvn", "./mvnw", "dotnet",
                       "deno", "poetry", "uv", "pip", "pip3", "bundle", "rake", "rails",
                       "composer", "swift", "zig", "dune", "stack", "cabal", "lein", "sbt",
                       "docker", "docker-compose", "prisma", "django-admin", "hatch", "pdm",
                       "nx", "turbo", "lerna", "sequelize", "knex", "diesel", "supabase",
                       "firebase", "heroku", "gcloud", "aws", "npx", "mkdocs", "hugo", "jekyll",
                       "zola", "docusaurus", "astro", "next", "vite", "nuxt", "sqlc", "buf",
                       "ent"})
_SCRIPT_RUNNERS = frozenset({"python", "python3", "node", "ruby", "perl", "php", "bash", "sh",
                             "deno", "bun", "tsx", "ts-node"})
_SELECTOR_FLAGS = frozenset({"-k", "-t", "-m", "--grep", "-g", "-run", "--filter",
                             "--testNamePattern", "--test", "-p", "--package", "--lib", "--bin",
                             "--deselect", "--select", "--testPathPattern"})
_NARROWING_WORDS = frozenset({"--lf", "--last-failed", "--only-failures", "--failed"})


#: the project's own entry points (``make test``, ``pnpm test``, ``just lint``): run without a
#: narrowing scope they check the whole project, whatever runs underneath
_ENTRY_POINTS = frozenset({"make", "just", "task", "npm", "pnpm", "yarn", "bun", "tox", "nox",
                           "rake", "./gradlew", "gradlew", "./mvnw"})
PROJECT = "project"
_ENTRY_ECOSYSTEMS = {**dict.fromkeys(("npm", "pnpm", "yarn", "bun"), "js"),
                     **dict.fromkeys(("tox", "nox"), "python"), "rake": "ruby",
                     **dict.fromkeys(("./gradlew", "gradlew", "./mvnw"), "jvm")}

#: the ecosystem a check tool belongs to (a failure in one is not resolved by a pass in another)
_ECOSYSTEMS: dict[str, str] = {
    **dict.fromkeys(("npm", "pnpm", "yarn", "bun", "npx", "node", "vitest", "jest", "mocha",
                     "eslint", "prettier", "tsc", "vue-tsc", "playwright", "cypress", "biome",
                     "deno", "webpack", "esbuild", "rollup", "ava", "stylelint"), "js"),
    **dict.fromkeys(("pytest", "py.test", "python", "python3", "tox", "nox", "ruff", "mypy",
                     "pyright", "basedpyright", "black", "isort", "flake8", "pylint", "uv",
                     "poetry", "hatch", "pdm", "mkdocs", "sphinx-build"), "python"),
    **dict.fromkeys(("cargo", "rustfmt"), "rust"),
    **dict.fromkeys(("go", "gofmt", "golangci-lint"), "go"),
    **dict.fromkeys(("mix",), "elixir"),
    **dict.fromkeys(("bundle", "rake", "rails", "rspec", "rubocop"), "ruby"),
    **dict.fromkeys(("gradle", "./gradlew", "gradlew", "mvn", "./mvnw"), "jvm"),
    **dict.fromkeys(("dotnet",), "dotnet"),
}


_SEPARATORS = re.compile(r"&&|\|\||;|\n")


def _segments(text: str) -> list[str]:
    """``text`` split at ``&&``, ``||``, ``;`` and newlines outside quotes; each segment cut at
    its first unquoted pipe (what follows a pipe filters the command's output)."""
    if "'" not in text and '"' not in text:  # nothing quoted: split without a char loop
        parts = (part.split("|", 1)[0].strip() for part in _SEPARATORS.split(text))
        return [part for part in parts if part]
    segments: list[str] = []
    current: list[str] = []
    quote = ""
    piped = False
    index = 0
    while index < len(text):
        char = text[index]
        pair = text[index:index + 2]
        if quote:
            if char == quote:
                quote = ""
            if not piped:
                current.append(char)
        elif char in "'\"":
            quote = char
            if not piped:
                current.append(char)
        elif pair in ("&&", "||") or char in ";\n":
            segments.append("".join(current).strip())
            current, piped = [], False
            index += 2 if pair in ("&&", "||") else 1
            continue
        elif char == "|":
            piped = True
        elif not piped:
            current.append(char)
        index += 1
    segments.append("".join(current).strip())
    return [s for s in segments if s]


def _tokens(segment: str) -> list[str]:
    if not any(c in segment for c in "'\"\\"):
        return segment.split()  # nothing to unquote: shlex's tokenizer is ~20x slower
    try:
        return shlex.split(segment, posix=True)
    except ValueError:
        return segment.split()


def _strip_prefixes(words: list[str]) -> list[str]:
    """Drop env assignments, wrappers (``sudo``, ``timeout 60``) and runners (``uv run``)."""
    out = list(words)
    changed = True
    while out and changed:
        changed = False
        while out and _ENV_ASSIGN.match(out[0]):
            out.pop(0)
            changed = True
        if out and out[0] in _WRAPPERS:
            out.pop(0)
            while out and (out[0].startswith("-") or out[0][:1].isdigit()):
                out.pop(0)  # ``timeout 60``, ``nice -n 19``
            changed = True
        if len(out) >= 2 and (out[0], out[1]) in _RUNNERS:
            out = out[2:]
            changed = True
        if len(out) >= 2 and out[0] in ("pnpm", "yarn", "bun") and out[1] in _TOOLS:
            out = out[1:]  # ``pnpm vitest run`` runs vitest
            changed = True
        if out and out[0] in _DIRECT_RUNNERS and len(out) >= 2:
            out = out[1:]
            while out and out[0].startswith("-"):
                out.pop(0)
            changed = True
    return out


def _python_module(words: list[str]) -> list[str]:
    """``python -m pytest x`` → ``pytest x``."""
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1].startswith("python") and words[1] == "-m":
        return words[2:]
    return words


def _category_of(words: list[str]) -> tuple[CommandCategory, str, int]:
    """Category, key and the index where the command's own arguments start."""
    tool = words[0].rsplit("/", 1)[-1] if not words[0].startswith("./") else words[0]
    rest = words[1:]
    if _INFO_ONLY.intersection(rest) and tool != "git":
        # ``pytest --version``, ``pytest --collect-only``, ``pnpm build --help``: it answers a
        # question about the tool and runs nothing: its passing is not the check passing
        return CommandCategory.EXPLORE, tool, 1
    if tool == "git" and rest:
        sub = rest[0]
        if sub in _GIT_EXPLORE:
            return CommandCategory.EXPLORE, f"git {sub}", 2
        if sub == "mv":
            return CommandCategory.OTHER, "git mv", 2
        return CommandCategory.VCS, f"git {sub}", 2
    if tool in _EXPLORE:
        return CommandCategory.EXPLORE, tool, 1
    if tool in ("tsc",) and ("--noEmit" in rest or "--noemit" in rest):
        return CommandCategory.TYPECHECK, "tsc --noEmit", 1
    if tool == "ruff":
        sub = rest[0] if rest and not rest[0].startswith("-") else "check"
        category = CommandCategory.FORMAT if sub == "format" else CommandCategory.LINT
        return category, f"ruff {sub}", 2 if rest and rest[0] == sub else 1
    if tool == "biome" and rest:
        category = CommandCategory.FORMAT if rest[0] == "format" else CommandCategory.LINT
        return category, f"biome {rest[0]}", 2
    if tool in _TOOLS:
        category = _TOOLS[tool]
        if tool == "alembic" or tool == "terraform" or tool == "kubectl" or tool == "helm":
            sub = rest[0] if rest else ""
            return category, f"{tool} {sub}".strip(), 2
        return category, tool, 1
    if tool in _MANAGERS:
        subs = [w for w in rest if not w.startswith("-")]
        if not subs:
            if tool == "make":
                return CommandCategory.BUILD, "make", 1
            if tool in ("yarn", "bun", "pnpm", "npm", "bundle", "composer"):
                return CommandCategory.INSTALL, f"{tool} install", 1
            return CommandCategory.OTHER, tool, 1
        sub = subs[0]
        index = rest.index(sub) + 2
        scripted = tool in ("npm", "pnpm", "yarn", "bun") and sub in ("run", "run-script")
        if scripted and len(subs) > 1:
            script = subs[1]
            return _script_category(script), f"{tool} run {script}", index + 1
        if tool == "docker" and sub == "compose" and len(subs) > 1:
            category = _SUBCOMMANDS.get(subs[1], CommandCategory.OTHER)
            return category, f"docker compose {subs[1]}", index + 1
        if tool in ("make", "just", "task"):
            return _script_category(sub), f"{tool} {sub}", index
        if tool == "prisma" and sub in ("migrate", "db"):
            return CommandCategory.MIGRATE, f"prisma {sub}", index
        if tool == "go" and sub == "run":
            return CommandCategory.RUN, "go run", index
        if tool in ("pip", "pip3") and sub != "install":
            return CommandCategory.EXPLORE, f"{tool} {sub}", index
        category = _SUBCOMMANDS.get(sub, CommandCategory.RUN if tool in ("yarn", "pnpm", "bun")
                                    else CommandCategory.OTHER)
        return category, f"{tool} {sub}", index
    if tool.rsplit("/", 1)[-1] in _SCRIPT_RUNNERS:
        script = next((w for w in rest if not w.startswith("-")), "")
        if not script or rest[:1] in (["-c"], ["-e"]) or "-" in rest or script.startswith("<"):
            # ``python -c …``, ``python - <<'EOF'``: a one-off script, not the project's
            return CommandCategory.EXPLORE, tool, 1
        name = script.rsplit("/", 1)[-1]
        if name == "manage.py":
            sub = next((w for w in rest[rest.index(script) + 1:] if not w.startswith("-")), "")
            return (_SUBCOMMANDS.get(sub, CommandCategory.OTHER),
                    f"manage.py {sub}".strip(), rest.index(script) + 3)
        return _script_category(name.rsplit(".", 1)[0]), f"{tool} {script}", rest.index(script) + 2
    if tool.startswith("./") or tool.endswith(".sh"):
        return _script_category(tool.rsplit("/", 1)[-1].rsplit(".", 1)[0]), tool, 1
    return CommandCategory.OTHER, tool, 1


def _script_category(name: str) -> CommandCategory:
    lowered = name.lower()
    # what a compound name checks decides, not its first word (``check-types`` is a type
    # check, ``check:lint`` a lint, ``test:types`` a type check)
    for part, category in (("type", CommandCategory.TYPECHECK), ("tsc", CommandCategory.TYPECHECK),
                           ("lint", CommandCategory.LINT), ("format", CommandCategory.FORMAT),
                           ("fmt", CommandCategory.FORMAT), ("prettier", CommandCategory.FORMAT)):
        if part in lowered and lowered != part:
            return category
    for prefix, category in (
        ("test", CommandCategory.TEST), ("spec", CommandCategory.TEST),
        ("e2e", CommandCategory.TEST), ("check", CommandCategory.TEST),
        ("typecheck", CommandCategory.TYPECHECK), ("type-check", CommandCategory.TYPECHECK),
        ("types", CommandCategory.TYPECHECK), ("tsc", CommandCategory.TYPECHECK),
        ("lint", CommandCategory.LINT), ("fmt", CommandCategory.FORMAT),
        ("format", CommandCategory.FORMAT), ("prettier", CommandCategory.FORMAT),
        ("build", CommandCategory.BUILD), ("compile", CommandCategory.BUILD),
        ("bundle", CommandCategory.BUILD), ("dist", CommandCategory.BUILD),
        ("deploy", CommandCategory.DEPLOY), ("publish", CommandCategory.DEPLOY),
        ("release", CommandCategory.DEPLOY), ("migrat", CommandCategory.MIGRATE),
        ("gen", CommandCategory.GENERATE), ("codegen", CommandCategory.GENERATE),
        ("db:", CommandCategory.MIGRATE), ("install", CommandCategory.INSTALL),
        ("setup", CommandCategory.INSTALL), ("bootstrap", CommandCategory.INSTALL),
        ("start", CommandCategory.RUN), ("dev", CommandCategory.RUN),
        ("serve", CommandCategory.RUN), ("run", CommandCategory.RUN),
    ):
        if lowered.startswith(prefix):
            return category
    return CommandCategory.OTHER


def _scope(category: CommandCategory, args: list[str]) -> frozenset[str]:
    if category not in _SCOPED:
        return frozenset()
    items: set[str] = set()
    skip = False
    for position, word in enumerate(args):
        if skip:
            skip = False
            continue
        if word in _NARROWING_WORDS:
            items.add(word)
        elif word in _SELECTOR_FLAGS:
            value = args[position + 1] if position + 1 < len(args) else ""
            items.add(f"{word}={value}")
            skip = True
        elif word.startswith(("--grep=", "-k=", "--filter=", "--testNamePattern=", "-t=")):
            items.add(word)
        elif not word.startswith("-") and ("/" in word or "." in word or "::" in word):
            items.add(word.rstrip("/") if word not in ("./", ".") else ".")
    items.discard(".")
    return frozenset(items)


def analyse_command(command: str) -> CommandInfo:
    """Classify one shell command line. A compound line is classified by its first segment
    that does not just look around; its ``main`` form keeps ``cd`` and the other real commands
    (``cd web && pnpm test``, ``ruff check . && mypy billing``) and drops the looking around
    (``rm package-lock.json && pnpm install`` → ``pnpm install``)."""
    text = _without_heredoc_bodies(_CONTINUATION.sub(" ", command.strip()))
    chosen: tuple[str, list[str]] | None = None
    first: tuple[str, list[str]] | None = None
    kept: list[str] = []
    for part in _segments(text[:2_000]):
        words = _filters_last(_python_module(_strip_prefixes(_tokens(part))))
        if not words:
            continue
        if first is None:
            first = (part, words)
        category = _category_of(words)[0]
        if words[0] == "cd" and chosen is None:
            kept.append(part)
        elif category is not CommandCategory.EXPLORE:
            kept.append(part)
            if chosen is None:
                chosen = (part, words)
    picked = chosen or first
    if picked is None:
        return CommandInfo(text, CommandCategory.EXPLORE, "", frozenset())
    segment, words = picked
    main = " && ".join(kept) if chosen is not None else segment
    category, key, start = _category_of(words)
    reads_temp = bool(_TEMP.search(_REDIRECT.sub("", segment)))  # ``> /tmp/log`` only writes
    if reads_temp and category is not CommandCategory.VCS:
        category = CommandCategory.EXPLORE  # a script or output under /tmp: a one-off look
    check_key = key
    if category in _SCOPED:
        tool = words[0].rsplit("/", 1)[-1]
        ecosystem = PROJECT if tool in _ENTRY_POINTS else _ECOSYSTEMS.get(tool, key)
        check_key = f"{category.value}:{ecosystem}"
    chain = tuple(analyse_command(part) for part in kept
                  if part != segment and not part.startswith("cd ")) if len(kept) > 1 else ()
    adds = category is CommandCategory.INSTALL and _adds_a_package(key, words[start:])
    if adds:
        category = CommandCategory.OTHER  # ``pnpm add swr``: a one-off dependency change
    return CommandInfo(main, category, key, _scope(category, words[start:]), check_key, chain,
                       adds)


_CONTINUATION = re.compile(r"[ \t]*\\\r?\n[ \t]*")
_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)([A-Za-z_][\w-]*)\1")


def _without_heredoc_bodies(text: str) -> str:
    """``text`` with the bodies of its heredocs removed (``python - <<'EOF'`` … ``EOF``): their
    lines are input, not commands."""
    if "<<" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    ending: list[str] = []
    for line in lines:
        if ending:
            if line.strip() == ending[0]:
                ending.pop(0)
            continue
        out.append(line)
        ending = [m.group(2) for m in _HEREDOC.finditer(line)]
    return "\n".join(out)


#: a JS package manager's workspace selection (``pnpm --filter web lint``, ``pnpm -F api test``,
#: ``npm -w web run build``): it says where, not what, so it goes after the script
_FILTER_FLAGS = frozenset({"--filter", "-F", "--workspace", "-w", "--dir", "-C", "--prefix",
                           "--cwd"})


def _filters_last(words: list[str]) -> list[str]:
    if len(words) < 3 or words[0] not in ("pnpm", "npm", "yarn", "bun"):
        return words
    head, moved = [words[0]], []
    index = 1
    while index < len(words):
        word = words[index]
        if word in _FILTER_FLAGS and index + 1 < len(words):
            moved += ["--filter", words[index + 1]] if word in ("-F", "--filter") \
                else [word, words[index + 1]]
            index += 2
            continue
        if word.startswith(("--filter=", "--workspace=")):
            moved.append(word)
            index += 1
            continue
        head.append(word)
        index += 1
    return head + moved if moved else words


def _adds_a_package(key: str, args: list[str]) -> bool:
    """``pnpm add x`` / ``pip install x`` name packages; ``pnpm install`` / ``pip install -e .``
    / ``pip install -r requirements.txt`` set the project up."""
    if key.endswith((" add", " get")) or key == "cargo add":
        return True
    names = [a for a in args if not a.startswith("-")]
    flags = {a for a in args if a.startswith("-")}
    if flags & {"-e", "--editable", "-r", "--requirement", "--frozen-lockfile", "--ci"}:
        return False
    return any(not a.startswith((".", "/")) and "requirements" not in a for a in names)
