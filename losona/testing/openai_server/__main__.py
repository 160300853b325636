"""`python -m losona.testing.openai_server`: the test server in a process of its own."""

from __future__ import annotations

import argparse
import signal
import threading

from losona.testing.openai_server import OpenAIServer, default_reply
from losona.testing.scripted_judge import ScriptedJudge


def main(argv: list[str] | None = None) -> None:
    """Serve default (or scripted judge) replies until stopped; print the URL first.

    It serves until SIGINT (Ctrl-C) or SIGTERM, or until `--lifetime` seconds have passed,
    and never reads standard input, so `&`, `nohup` and CI can run it in the background.
    """
    parser = argparse.ArgumentParser(prog="python -m losona.testing.openai_server")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--judge", action="store_true", help="answer judge prompts with verdicts")
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
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, request_stop)
    with OpenAIServer(
        latency=args.latency, reply=reply, keep_bodies=False, port=args.port
    ) as server:
        print(server.url, flush=True)
        stop.wait(args.lifetime)
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
