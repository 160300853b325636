"""`python -m losona.testing.openai_server`: the test server in a process of its own."""

from __future__ import annotations

import argparse
import contextlib
import errno
import signal
import sys
import threading

from losona.core.errors import LosonaError
from losona.testing.openai_server import AIOHTTP_MISSING, default_reply
from losona.testing.openai_server.port import (
    CONFIG_PORT,
    PORT_VARIABLE,
    configs_port,
    export_line,
    taken_message,
)
from losona.testing.scripted_group import ScriptedGroup
from losona.testing.scripted_judge import ScriptedJudge

try:
    from losona.testing.openai_server.server import OpenAIServer
except ModuleNotFoundError as missing:
    if missing.name != "aiohttp":
        raise
    print(f"error: {AIOHTTP_MISSING}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    """Serve default (or scripted judge or group) replies until stopped; print the URL first.

    It never reads standard input, so it can run in the background. On a port the configs
    do not point at, it prints the export line that points them here, on standard error.
    """
    parser = argparse.ArgumentParser(prog="python -m losona.testing.openai_server")
    try:
        # Where the shipped configs look, so that the server and they agree unasked.
        configs_look_at = configs_port()
    except LosonaError as exc:
        parser.error(str(exc))
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument(
        "--port",
        type=int,
        default=configs_look_at,
        help=f"port on 127.0.0.1 (default: ${PORT_VARIABLE}, else {CONFIG_PORT}, where the "
        "shipped configs look; 0: any free port)",
    )
    parser.add_argument("--judge", action="store_true", help="answer judge prompts with verdicts")
    parser.add_argument(
        "--group",
        action="store_true",
        help="answer group-model prompts (dynamic.source=simulated) with `Name: message` lines",
    )
    parser.add_argument(
        "--disagree", type=float, default=0.1, help="with --judge: share of messages overturned"
    )
    parser.add_argument(
        "--flip-rate", type=float, default=0.0, help="with --judge: share of calls overturned"
    )
    parser.add_argument(
        "--lifetime",
        type=float,
        default=None,
        help="stop after this many seconds (default: serve until SIGINT or SIGTERM)",
    )
    args = parser.parse_args(argv)
    if args.lifetime is not None and args.lifetime <= 0:
        parser.error(f"--lifetime: expected a positive number of seconds, found {args.lifetime}")
    reply = default_reply
    if args.judge:
        reply = ScriptedJudge(disagree=args.disagree, flip_rate=args.flip_rate)
    if args.group:
        # One server can be the subject, the judge and the group model of a run.
        reply = ScriptedGroup(otherwise=reply)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    server = OpenAIServer(latency=args.latency, reply=reply, keep_bodies=False, port=args.port)
    with contextlib.ExitStack() as running:
        try:
            running.enter_context(server)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            print(taken_message(args.port), file=sys.stderr)
            sys.exit(2)
        print(server.url, flush=True)
        if server.port != configs_look_at:
            print(export_line(server.port), file=sys.stderr, flush=True)
        stop.wait(args.lifetime)
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
