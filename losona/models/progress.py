"""Progress of a run of calls: tqdm's bar on a terminal, else a line at a steady interval.

Not tqdm off a terminal (under DVC, in CI): there it floods carriage returns and prints only
when a call comes back, so a slow cell would stay silent for minutes. `LineProgress` takes
the same calls (`update`, `set_postfix_str`, closing) and prints from a timer.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from tqdm import tqdm

# Seconds between two progress lines off a terminal: often enough to show that a slow
# cell is alive, rarely enough that a long run's log stays readable.
INTERVAL_S = 30.0


def progress_bar(label: str | None, total: int, done: int, answered: str = "") -> Any:
    """A tqdm bar on a terminal, else a `LineProgress`; nothing shown without a label.
    `done` of `total` calls are answered before any is sent, `answered` says where from."""
    if label is not None and not sys.stderr.isatty():
        return LineProgress(label, total, done, answered=answered)
    return tqdm(
        total=total,
        initial=done,
        desc=label,
        unit="call",
        disable=label is None,
        dynamic_ncols=True,
    )


def duration(seconds: float) -> str:
    """A duration as people read it: 45 s, 3 min 20 s, 2 h 05 min."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


class LineProgress:
    """Progress lines at a steady interval, for a standard error that is not a terminal."""

    def __init__(
        self,
        label: str,
        total: int,
        done: int,
        *,
        answered: str = "",
        interval_s: float = INTERVAL_S,
        stream: TextIO | None = None,
        clock: Any = time.monotonic,
    ) -> None:
        self.label, self.total, self.n, self.initial = label, total, done, done
        self.answered = answered or f"{done} answered before any call was made"
        self.interval_s = interval_s
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.postfix = ""
        self.started = clock()
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        # Nothing to wait for when the cache answered every call: no lines at all.
        self.quiet = done >= total

    def __enter__(self) -> LineProgress:
        if not self.quiet:
            self._print(
                f"{self.label}: {self.total} calls: {self.answered}, "
                f"{self.total - self.initial} to make"
            )
            self._timer = threading.Thread(target=self._tick, daemon=True)
            self._timer.start()
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join()
            # Stopped (Ctrl-C, a failure): the calls made so far, not read as a finished run.
            stopped = "" if error is None else ", stopped before the end"
            self._print(self.line(ended=True) + stopped)

    def update(self, n: int = 1) -> None:
        """`n` more calls done (tqdm's name)."""
        self.n += n

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        """The caller's facts for the next line, e.g. "cached 3, failed 0, $0.0012"."""
        self.postfix = text

    def line(self, *, ended: bool = False) -> str:
        """The progress line as of now: this run's calls, those answered before not counted
        (else it would say "5 of 10 calls done" before any call has come back)."""
        elapsed = self.clock() - self.started
        made, to_make = self.n - self.initial, self.total - self.initial
        facts = f" ({self.postfix})" if self.postfix else ""
        text = f"{self.label}: {made} of {to_make} calls made{facts}"
        if made and elapsed > 0:
            rate = made / elapsed
            text += f", {rate:.2f} calls/s"
            if not ended and made < to_make:
                text += f", about {duration((to_make - made) / rate)} left"
        elif not ended:
            text += ", none answered yet"
        return f"{text} in {duration(elapsed)}" if ended else f"{text}, {duration(elapsed)} so far"

    def _tick(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._print(self.line())

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)
