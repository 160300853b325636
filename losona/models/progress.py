"""Progress of a run of calls: a bar on a terminal, a line at a steady interval elsewhere.

On a terminal, tqdm draws its bar. Under DVC, in a CI log or behind `nohup`, standard
error is no terminal: a bar there is nothing at all (tqdm is disabled) or a flood of
carriage returns, and a cell of the embedded model or of a CPU server stays silent for
minutes. So off a terminal a `LineProgress` prints one line when the calls start (how many
there are, where the ones already answered came from, in the words of the stage's closing
line: the run's published calls, the call cache; and how many are to make), one every
`interval_s` seconds while they run (from a timer, so a slow call cannot hold it back) and
one when they end: calls made of those to make, the other facts the caller keeps in its
postfix (failures, spend), the rate of this run's calls and the time left at that rate.
The time left is that of this run of calls only: a caller with a second round (a judge's
repairs) names each round in its label.

Not tqdm off a terminal: it prints only when a call comes back (its monitor thread
refreshes a stalled bar once at most) and rewrites one line with carriage returns.

`progress_bar` chooses between the two; both take the same three calls from the worker
loop (`update`, `set_postfix_str`, closing), so the loop does not know which it feeds.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO

from tqdm import tqdm

# Seconds between two progress lines off a terminal: often enough to show that a slow
# cell is alive, rarely enough that a long run's log stays readable.
INTERVAL_S = 30.0


def progress_bar(label: str | None, total: int, done: int, answered: str = "") -> Any:
    """A tqdm bar on a terminal, else a `LineProgress`; nothing shown without a label.

    `done` calls of `total` are answered before any is sent; `answered` says where from
    (e.g. "5 from the run's published calls, 0 from the call cache").
    """
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

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
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
        """The progress line as of now: this run's calls, those answered before not counted.

        Counting the answered ones as done would say "5 of 10 calls done, no call answered
        yet" while no call of this run has come back.
        """
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
