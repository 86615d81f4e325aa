"""The bundled server's lock (``server-requirements.txt``): which pins one vsix target needs for one
CPython version, and a check that a vendored tree holds exactly those, built for that target.

Runs under the interpreter that vendors (``vendor-server.mjs``) with nothing but the standard
library and pip. pip evaluates a requirement's environment marker against the machine it runs on,
never against ``--platform``, so choosing the pins for another platform happens here, with pip's
own copy of ``packaging``; pip then gets marker-free, hash-pinned lines.

    python server_lock.py plan   --lock L --pyproject P --target T --python 3.11 [--python ...]
    python server_lock.py verify --lock L --pyproject P --target T --python 3.11 [...] --libs DIR
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# pip's vendored copy: the vendoring interpreter has pip (it runs it), not necessarily `packaging`
from pip._vendor.packaging.markers import Marker
from pip._vendor.packaging.requirements import InvalidRequirement, Requirement
from pip._vendor.packaging.tags import compatible_tags, cpython_tags, mac_platforms
from pip._vendor.packaging.utils import canonicalize_name
from pip._vendor.packaging.version import Version

# Oldest systems a bundled wheel may need: glibc 2.28 is VS Code's own floor for its Linux builds;
# macOS 11 is the first release on Apple silicon. A wheel built for anything newer is not used.
GLIBC_FLOOR = 28
MACOS_FLOOR = (11, 0)
OPTIONAL_EXTRA = "fast"  # [project.optional-dependencies] bundled where a wheel exists
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


class LockError(Exception):
    """The lock, the target or the vendored tree is not what the bundle needs."""


def _manylinux(arch: str) -> tuple[str, ...]:
    """pip --platform tags for a glibc-2.28 Linux, newest first (pip prefers earlier tags)."""
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(GLIBC_FLOOR, 16, -1)]
    tags.append(f"manylinux2014_{arch}")
    if arch == "x86_64":  # the older aliases exist for x86_64 only
        tags += [f"manylinux_2_{minor}_{arch}" for minor in range(16, 4, -1)]
        tags += ["manylinux2010_x86_64", "manylinux1_x86_64"]
    return tuple(tags)


@dataclass(frozen=True)
class Target:
    """A vsce target: the values its environment markers see and the wheel platforms it runs."""

    name: str
    sys_platform: str
    platform_system: str
    platform_machine: str
    os_name: str
    platforms: tuple[str, ...]

    def environment(self, python: str) -> dict[str, str]:
        """Marker variables for CPython ``python`` (``3.12``) on this target."""
        return {
            "implementation_name": "cpython",
            "implementation_version": f"{python}.0",
            "os_name": self.os_name,
            "platform_machine": self.platform_machine,
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": self.platform_system,
            "platform_version": "",
            "python_full_version": f"{python}.0",
            "python_version": python,
            "sys_platform": self.sys_platform,
            "extra": "",
        }

    def supported_tags(self, python: str) -> set[str]:
        """Every wheel tag CPython ``python`` on this target installs (abi3 and pure included)."""
        version = _version(python)
        interpreter = f"cp{version[0]}{version[1]}"
        tags = list(cpython_tags(version, [interpreter], self.platforms))
        tags += compatible_tags(version, interpreter, self.platforms)
        return {str(tag) for tag in tags}


TARGETS = {
    target.name: target
    for target in (
        Target("linux-x64", "linux", "Linux", "x86_64", "posix", _manylinux("x86_64")),
        Target("linux-arm64", "linux", "Linux", "aarch64", "posix", _manylinux("aarch64")),
        Target("darwin-arm64", "darwin", "Darwin", "arm64", "posix",
               tuple(mac_platforms(MACOS_FLOOR, "arm64"))),
        Target("darwin-x64", "darwin", "Darwin", "x86_64", "posix",
               tuple(mac_platforms(MACOS_FLOOR, "x86_64"))),
        Target("win32-x64", "win32", "Windows", "AMD64", "nt", ("win_amd64",)),
    )
}


def target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise LockError(f"unknown target {name!r}: one of {', '.join(TARGETS)} "
                        "(or universal)") from None


def _version(python: str) -> tuple[int, int]:
    match = re.fullmatch(r"3\.(\d+)", python)
    if not match:
        raise LockError(f"not a CPython 3.x version: {python!r}")
    return 3, int(match.group(1))


@dataclass(frozen=True)
class Pin:
    """One locked requirement: ``name==version``, its marker, the hashes of its files."""

    name: str
    version: str
    marker: str | None
    hashes: tuple[str, ...]

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"

    def line(self) -> str:
        """The requirement for pip, without its marker (already evaluated for the target)."""
        return " ".join([self.spec, *(f"--hash=sha256:{h}" for h in self.hashes)])

    def applies(self, target: Target, python: str) -> bool:
        return self.marker is None or Marker(self.marker).evaluate(target.environment(python))

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "spec": self.spec,
                "line": self.line()}


def _logical_lines(text: str) -> Iterator[str]:
    """Requirement lines with continuations joined and comments dropped."""
    pending = ""
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            yield line
    if pending.strip():
        yield pending.strip()


def parse_lock(text: str) -> list[Pin]:
    """Every pin of the lock. Anything but an exact ``==`` pin with sha256 hashes is refused: the
    bundle installs nothing a hash does not name."""
    pins = []
    for line in _logical_lines(text):
        requirement, _, options = line.partition(" --")
        options = "--" + options if options else ""
        hashes = tuple(_HASH.findall(options))
        leftover = _HASH.sub("", options).strip()
        if leftover:
            raise LockError(f"unexpected option in the lock: {leftover!r} ({requirement})")
        try:
            parsed = Requirement(requirement)
        except InvalidRequirement as exc:
            raise LockError(f"not a requirement: {requirement!r} ({exc})") from None
        specs = list(parsed.specifier)
        if parsed.url or len(specs) != 1 or specs[0].operator not in ("==", "===") \
                or "*" in specs[0].version:
            raise LockError(f"not an exact pin: {requirement!r}")
        if not hashes:
            raise LockError(f"no sha256 hash for {requirement!r}")
        pins.append(Pin(canonicalize_name(parsed.name), specs[0].version,
                        str(parsed.marker) if parsed.marker else None, hashes))
    if not pins:
        raise LockError("the lock pins nothing")
    return pins


def read_lock(path: Path) -> list[Pin]:
    if not path.is_file():
        raise LockError(f"{path} is missing: the bundle installs only from it (npm run lock)")
    return parse_lock(path.read_text(encoding="utf-8"))


def select(pins: Iterable[Pin], target: Target, python: str) -> list[Pin]:
    """The pins whose marker holds on ``target`` under CPython ``python``, one per package."""
    chosen: dict[str, Pin] = {}
    for pin in pins:
        if pin.applies(target, python):
            if pin.name in chosen:
                raise LockError(f"two pins of {pin.name} apply to {target.name} / {python}")
            chosen[pin.name] = pin
    return sorted(chosen.values(), key=lambda pin: pin.name)


def optional_names(pyproject: Path) -> set[str]:
    """Packages of the optional extra: bundled where a wheel exists, skipped (and recorded)
    where none does."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    extra = project.get("optional-dependencies", {}).get(OPTIONAL_EXTRA, [])
    return {canonicalize_name(Requirement(item).name) for item in extra}


def plan(pins: list[Pin], optional: set[str], target: Target,
         pythons: list[str]) -> dict[str, object]:
    """What vendor-server.mjs downloads: per Python version, required and optional pins."""
    versions = {}
    for python in pythons:
        selected = select(pins, target, python)
        versions[python] = {
            "required": [pin.as_json() for pin in selected if pin.name not in optional],
            "optional": [pin.as_json() for pin in selected if pin.name in optional],
        }
    return {"target": target.name, "platforms": list(target.platforms), "versions": versions}


@dataclass(frozen=True)
class Installed:
    name: str
    version: str
    tags: tuple[str, ...]
    where: Path


def _installed(folder: Path) -> Iterator[Installed]:
    if not folder.is_dir():
        return
    for info in sorted(folder.glob("*.dist-info")):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        wheel = info / "WHEEL"
        tags: tuple[str, ...] = ()
        if wheel.is_file():
            tags = tuple(line.split(":", 1)[1].strip()
                         for line in wheel.read_text(encoding="utf-8").splitlines()
                         if line.startswith("Tag:"))
        yield Installed(canonicalize_name(name), version, tags, info)


def verify(libs: Path, pins: list[Pin], optional: set[str], target: Target,
           pythons: list[str]) -> list[str]:
    """Problems with a vendored tree: per bundled Python version, every pin the lock selects for
    the target is there at its version (optional ones unless MANIFEST.json records them skipped),
    nothing else is, and every wheel's tag runs on the target. Empty when all is well."""
    manifest = json.loads((libs / "MANIFEST.json").read_text(encoding="utf-8"))
    skipped = manifest.get("optionalSkipped", {})
    problems = []
    for python in pythons:
        tag = "cp" + python.replace(".", "")
        found: dict[str, Installed] = {}
        for folder in (libs / tag, libs / "shared", libs / "py"):
            for dist in _installed(folder):
                if dist.name in found:
                    first = found[dist.name].where.parent.name
                    problems.append(f"{tag}: {dist.name} is in both {first} and {folder.name}")
                found.setdefault(dist.name, dist)
        supported = target.supported_tags(python)
        for pin in select(pins, target, python):
            bundled = found.pop(pin.name, None)
            if bundled is None:
                if not (pin.name in optional and python in skipped.get(pin.spec, [])):
                    problems.append(f"{tag}: {pin.spec} is locked for {target.name}, not bundled")
                continue
            if Version(bundled.version) != Version(pin.version):
                problems.append(f"{tag}: {pin.name} {bundled.version} bundled, lock: {pin.version}")
            if not supported.intersection(bundled.tags):
                problems.append(f"{tag}: {pin.spec} is built for {', '.join(bundled.tags) or '?'}, "
                                f"not CPython {python} on {target.name}")
        found.pop("reverie", None)
        problems += [f"{tag}: {dist.name} {dist.version} is bundled but not in the lock"
                     for dist in found.values()]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["plan", "verify"])
    parser.add_argument("--lock", type=Path, required=True)
    parser.add_argument("--pyproject", type=Path, required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--python", action="append", required=True)
    parser.add_argument("--libs", type=Path)
    args = parser.parse_args(argv)
    try:
        chosen = target(args.target)
        pins = read_lock(args.lock)
        optional = optional_names(args.pyproject)
        if args.command == "plan":
            sys.stdout.write(json.dumps(plan(pins, optional, chosen, args.python)) + "\n")
            return 0
        if args.libs is None:
            parser.error("verify needs --libs")
        problems = verify(args.libs, pins, optional, chosen, args.python)
    except LockError as exc:
        sys.stderr.write(f"server_lock: {exc}\n")
        return 2
    for problem in problems:
        sys.stderr.write(f"server_lock: {problem}\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
