"""Run the Reverie language server (stdio by default; --tcp HOST:PORT for debugging)."""

from __future__ import annotations

import argparse
import logging
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        help="listen on TCP instead of stdio (for attaching a debugger or a client by hand)",
    )


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--tcp expects HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def run(args: argparse.Namespace) -> int:
    try:
        tcp = _host_port(args.tcp) if args.tcp else None
    except ValueError as exc:
        print(f"reverie: {exc}", file=sys.stderr)
        return 2
    # stderr carries warnings and errors only (the client shows stderr in its log too, so
    # routine lines would appear twice); the client log gets reverie.* at reverie.logLevel
    from reverie.lsp.log import OneLineRefusals

    cli_level = max(logging.getLogger().level, logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.setLevel(cli_level)
    logging.getLogger().setLevel(logging.WARNING)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(OneLineRefusals())

    # transcripts are parsed in worker threads: hand the GIL back to the event loop more often
    # than the default 5 ms so editor requests stay responsive while a big file is read
    # (tests/bench/lsp.py, p99 of status under load: 1 ms -> 16-24 ms, 0.3 ms -> 11-13 ms)
    sys.setswitchinterval(0.0003)

    from reverie.lsp.handlers import create_server

    server = create_server()
    reverie_logger = logging.getLogger("reverie")
    reverie_logger.addHandler(server.log_handler)
    server.stderr_level = cli_level
    reverie_logger.setLevel(min(cli_level, server.log_handler.level))
    if tcp is None:
        server.start_io()
        return server.exit_code  # 1 for ``exit`` without ``shutdown``
    server.start_tcp(*tcp)
    return 0
