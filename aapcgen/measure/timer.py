"""The timers' output protocol (runtime_c/bench/timer_common.h): the one parser of it.

Rank 0 of a timer program prints one line per timed (candidate, size, repeat):

    time <candidate> <bytes> <repeat> <seconds per call, max over ranks> <calls> <cpu busy>
         [<TCP retransmitted segments per call> <TCP timeouts per call> [<run-queue wait>]]

(one line; the TCP fields and the run-queue wait, the largest share of the timed time a rank
spent waiting for a CPU, are absent from older timers and -1 when unknown, as is cpu busy).
Every other line is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TimerLine:
    candidate: str
    bytes: int
    repeat: int  # the timer's own repeat index (callers may number repeats themselves)
    seconds: float  # per call, the slowest rank
    calls: int
    cpu_busy: float  # -1: unknown
    tcp_retrans: float = -1.0  # per call; -1: unknown
    tcp_timeouts: float = -1.0
    runq_wait: float = -1.0  # the most any rank waited for a CPU, share of the timed time


def parse_timer_lines(text: str) -> list[TimerLine]:
    """Every ``time`` line of a timer's standard output, in order."""
    lines = []
    for line in text.splitlines():
        f = line.split()
        if len(f) in (7, 9, 10) and f[0] == "time":
            extra = tuple(float(x) for x in f[7:])
            lines.append(
                TimerLine(f[1], int(f[2]), int(f[3]), float(f[4]), int(f[5]), float(f[6]), *extra)
            )
    return lines


def seconds_by_candidate(text: str) -> dict[tuple[str, int], list[float]]:
    """{(candidate, bytes): [seconds per call, one per line]} of a timer's output."""
    times: dict[tuple[str, int], list[float]] = {}
    for t in parse_timer_lines(text):
        times.setdefault((t.candidate, t.bytes), []).append(t.seconds)
    return times
