"""What a project's manifests define: scripts, make / just targets, dependencies, config keys.

Each reader takes a file's text and returns names, so the same function answers "is it there
now" (the working tree) and "was it there then" (a blob from git history). Parsers are the
standard library's (``json``, ``tomllib``) and PyYAML for YAML; Makefiles and justfiles are read
for their rule lines. A file that does not parse defines nothing (the check then says it could
not tell, never that something was removed).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable
from typing import Any

import yaml  # type: ignore[import-untyped]

PACKAGE_JSON = "package.json"
PYPROJECT = "pyproject.toml"
MAKEFILES = ("Makefile", "makefile", "GNUmakefile")
JUSTFILES = ("justfile", "Justfile", ".justfile")
REQUIREMENTS = ("requirements.txt", "requirements-dev.txt", "requirements_dev.txt",
                "dev-requirements.txt", "requirements/base.txt", "requirements/dev.txt",
                "docs/requirements.txt")
DEP_MANIFESTS = (PACKAGE_JSON, PYPROJECT, *REQUIREMENTS, "go.mod", "Cargo.toml", "Gemfile",
                 "Pipfile", "setup.cfg")
COMPOSE_FILES = ("compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml")
#: lockfile of each package manager: a rule that picks the manager depends on it
LOCKFILES = {
    "pnpm": ("pnpm-lock.yaml",), "yarn": ("yarn.lock",), "npm": ("package-lock.json",),
    "bun": ("bun.lockb", "bun.lock"), "uv": ("uv.lock",), "poetry": ("poetry.lock",),
    "pipenv": ("Pipfile.lock",), "cargo": ("Cargo.lock",),
}
STRUCTURED_SUFFIXES = (".json", ".toml", ".yaml", ".yml")

_MAKE_RULE = re.compile(r"^(?P<targets>[A-Za-z0-9_./%-][A-Za-z0-9_./% -]*?)\s*:(?![=:])",
                        re.MULTILINE)
_JUST_RECIPE = re.compile(
    r"^@?(?P<name>[A-Za-z_][A-Za-z0-9_-]*)(?:\s+[^:=\n]*)?:(?!=)", re.MULTILINE)
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([a-z0-9.-]+\.[a-z]{2,}/[^\s]+)\s+v\d", re.MULTILINE)
_GEM = re.compile(r"""^\s*gem\s+['"]([^'"]+)['"]""", re.MULTILINE)


def normalise_dep(name: str) -> str:
    """One spelling per package: PEP 503 for Python names, extras and versions dropped."""
    name = name.strip().strip("'\"`")
    name = re.split(r"[\[<>=!~;\s]", name, maxsplit=1)[0] if not name.startswith("@") else \
        re.split(r"[<>=!~;\s]", name, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name.lower()) if "/" not in name else name.lower()


def package_scripts(text: str) -> set[str]:
    data = _json(text)
    scripts = data.get("scripts") if isinstance(data, dict) else None
    return {str(k) for k in scripts} if isinstance(scripts, dict) else set()


def make_targets(text: str) -> set[str]:
    found: set[str] = set()
    for match in _MAKE_RULE.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if text[line_start:match.start()].strip():
            continue
        for target in match["targets"].split():
            if not target.startswith(".") and "%" not in target:
                found.add(target)
    return found


def just_recipes(text: str) -> set[str]:
    return {m["name"] for m in _JUST_RECIPE.finditer(text)
            if m["name"] not in ("set", "export", "import", "mod", "alias")}


def pyproject_scripts(text: str) -> set[str]:
    data = _toml(text)
    out: set[str] = set()
    project = data.get("project", {})
    if isinstance(project, dict):
        for key in ("scripts", "gui-scripts"):
            if isinstance(project.get(key), dict):
                out |= set(project[key])
    poetry = _dig(data, "tool", "poetry", "scripts")
    if isinstance(poetry, dict):
        out |= set(poetry)
    return {str(name) for name in out}


def dependencies(name: str, text: str) -> set[str]:
    """Normalised dependency names a manifest declares."""
    base = name.rsplit("/", 1)[-1]
    if base == PACKAGE_JSON:
        data = _json(text)
        out: set[str] = set()
        if isinstance(data, dict):
            for key in ("dependencies", "devDependencies", "peerDependencies",
                        "optionalDependencies"):
                if isinstance(data.get(key), dict):
                    out |= {normalise_dep(str(dep)) for dep in data[key]}
        return out
    if base == PYPROJECT:
        return _pyproject_deps(_toml(text))
    if base == "Cargo.toml":
        data = _toml(text)
        out = set()
        for key in ("dependencies", "dev-dependencies", "build-dependencies"):
            if isinstance(data.get(key), dict):
                out |= {normalise_dep(str(dep)) for dep in data[key]}
        return out
    if base == "Pipfile":
        data = _toml(text)
        return {normalise_dep(str(dep)) for key in ("packages", "dev-packages")
                if isinstance(data.get(key), dict) for dep in data[key]}
    if base == "go.mod":
        return {m.group(1).lower() for m in _GO_REQUIRE.finditer(text)}
    if base == "Gemfile":
        return {normalise_dep(m.group(1)) for m in _GEM.finditer(text)}
    if base == "setup.cfg":
        block = re.search(r"install_requires\s*=\s*((?:\n[ \t]+.*)+)", text)
        return _requirement_names(block.group(1).splitlines()) if block else set()
    return _requirement_names(text.splitlines())


def _requirement_names(lines: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith(("-", "git+", "http")):
            continue
        match = _REQ_NAME.match(line)
        if match:
            out.add(normalise_dep(match.group(1)))
    return out


def _pyproject_deps(data: dict[str, Any]) -> set[str]:
    specs: list[str] = []
    project = data.get("project", {})
    if isinstance(project, dict):
        specs += [s for s in project.get("dependencies", []) if isinstance(s, str)]
        optional = project.get("optional-dependencies", {})
        if isinstance(optional, dict):
            for group in optional.values():
                specs += [s for s in group if isinstance(s, str)] if isinstance(group, list) \
                    else []
    groups = data.get("dependency-groups", {})
    if isinstance(groups, dict):
        for group in groups.values():
            specs += [s for s in group if isinstance(s, str)] if isinstance(group, list) else []
    uv_dev = _dig(data, "tool", "uv", "dev-dependencies")
    if isinstance(uv_dev, list):
        specs += [s for s in uv_dev if isinstance(s, str)]
    out = _requirement_names(specs)
    poetry = _dig(data, "tool", "poetry")
    if isinstance(poetry, dict):
        tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
        poetry_groups = poetry.get("group", {})
        if isinstance(poetry_groups, dict):
            tables += [g.get("dependencies") for g in poetry_groups.values() if isinstance(g, dict)]
        for table in tables:
            if isinstance(table, dict):
                out |= {normalise_dep(str(dep)) for dep in table if dep != "python"}
    return out


def config_keys(name: str, text: str) -> set[str] | None:
    """Every dotted key path a structured config file holds (None when it does not parse or is
    not a format we read structurally)."""
    lowered = name.lower()
    data: Any
    if lowered.endswith(".json"):
        data = _json(text, strip_comments=True)
    elif lowered.endswith(".toml"):
        data = _toml(text)
    elif lowered.endswith((".yaml", ".yml")):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
    else:
        return None
    if not isinstance(data, dict):
        return None if data is None else set()
    keys: set[str] = set()
    _flatten(data, "", keys, depth=0)
    return keys


def has_key(keys: set[str], key: str) -> bool:
    """``key`` (dotted) is a whole path, or the tail of one (``port`` of ``server.port``)."""
    return key in keys or any(k.endswith("." + key) for k in keys)


def text_has_key(text: str, key: str) -> bool:
    """A key set in code (``vite.config.ts``): each dotted part appears as ``part:`` /
    ``part =`` / ``"part":``, the last one at least."""
    last = key.rsplit(".", 1)[-1]
    pattern = rf"""(?<![\w$-])['"]?{re.escape(last)}['"]?\s*[:=]"""
    return re.search(pattern, text) is not None


def config_present(where: str, text: str, key_value: str) -> bool:
    key, _, value = key_value.partition("=")
    keys = config_keys(where, text)
    if keys is not None:
        if not has_key(keys, key):
            return False
    elif not text_has_key(text, key):
        return False
    if not value:
        return True
    last = key.rsplit(".", 1)[-1]
    pattern = (rf"""(?<![\w$-])['"]?{re.escape(last)}['"]?\s*[:=]\s*['"]?"""
               rf"""{re.escape(value)}(?![\w.])""")
    return re.search(pattern, text) is not None


def compose_services(text: str) -> set[str]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return set()
    services = data.get("services") if isinstance(data, dict) else None
    return {str(s) for s in services} if isinstance(services, dict) else set()


def _flatten(value: Any, prefix: str, out: set[str], depth: int) -> None:
    if depth > 12 or len(out) > 20_000:
        return
    if isinstance(value, dict):
        for key, child in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            out.add(path)
            _flatten(child, path, out, depth + 1)


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _json(text: str, strip_comments: bool = False) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        if not strip_comments:
            return {}
    # tsconfig.json and friends allow comments and trailing commas
    cleaned = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.DOTALL)
    cleaned = re.sub(r",(\s*[}\]])", r"\1", cleaned)
    try:
        return json.loads(cleaned)
    except ValueError:
        return {}


def _toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return {}


def reader_for(kind: str, where: str) -> Callable[[str], set[str]] | None:
    """The function that lists what ``where`` defines for an anchor ``kind``."""
    base = where.rsplit("/", 1)[-1]
    if kind == "script":
        if base == PACKAGE_JSON:
            return package_scripts
        if base == PYPROJECT:
            return pyproject_scripts
        return None
    if kind == "target":
        if base in MAKEFILES:
            return make_targets
        if base in JUSTFILES:
            return just_recipes
        if base in COMPOSE_FILES:
            return compose_services
        return None
    if kind == "dep":
        return lambda text: dependencies(where, text)
    return None
