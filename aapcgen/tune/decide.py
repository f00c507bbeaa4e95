"""The decision of `aapcgen tune`: pure functions from measurements to a per-size choice.

Rule (docs/tuning.md):

* Per message size (bytes per block), every surviving candidate is summarised by the median of
  its repeats and its spread (max - min of the repeats).
* The best is the lowest median. Candidates whose median is within the *noise guard* of the best
  tie with it: ``median <= best.median * (1 + guard)`` with ``guard = min(MAX_GUARD,
  (best.max - best.min) / best.median)`` (the best candidate's own relative spread, at most 5 %).
  Among the tied, the simplest wins (SIMPLICITY below), then the lower median.
* Consecutive sizes with the same choice merge into one range; the boundary between two measured
  sizes a < b is their geometric mean (the midpoint in log-space), rounded down: sizes below it go
  to a's choice. The first range starts at 0, the last is open.

Simplicity order (simplest first): the library's default (nothing to install), a forced native
algorithm (a tuning file only), then the generated variants by how much synchronisation they add:
the ``simplicity`` column of aapcgen/alltoall/variants.py (no-sync, dummy, barrier-all, ...); among
block sizes of one partial variant the larger block (fewer syncs or barriers) first.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from aapcgen.alltoall.variants import SIMPLICITY_ORDER, split_label, split_window

MAX_GUARD = 0.05
NATIVE_PREFIX = "native-"
DEFAULT = "native-default"


def is_native(candidate: str) -> bool:
    return candidate.startswith(NATIVE_PREFIX)


def simplicity(candidate: str) -> tuple[int, int, int]:
    """Sort key, simplest first (see the module docstring)."""
    if candidate == DEFAULT:
        return (0, 0, 0)
    if is_native(candidate):
        return (1, 0, 0)
    try:
        name, block = split_label(candidate)
    except ValueError:
        return (3, 0, 0)  # unknown kinds last
    base, window = split_window(name)
    return (2, SIMPLICITY_ORDER.index(base), -(block or 0) + window - 1)


@dataclass(frozen=True)
class Point:
    """One candidate at one size: its repeats summarised."""

    candidate: str
    bytes: int
    median: float
    lo: float
    hi: float
    repeats: int

    @property
    def rel_spread(self) -> float:
        return (self.hi - self.lo) / self.median if self.median > 0 else 0.0


def points(rows: Iterable[tuple[str, int, float]]) -> list[Point]:
    """(candidate, bytes, seconds) rows -> one Point per (candidate, size), sorted."""
    groups: dict[tuple[str, int], list[float]] = {}
    for cand, size, sec in rows:
        groups.setdefault((cand, size), []).append(sec)
    return [
        Point(c, b, statistics.median(t), min(t), max(t), len(t))
        for (c, b), t in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]


@dataclass(frozen=True)
class Choice:
    bytes: int
    candidate: str
    best: str  # lowest median (may differ from candidate when the noise guard chose a simpler one)
    median: float
    best_median: float
    guard: float
    tied: tuple[str, ...]


def choose(at_size: list[Point], max_guard: float = MAX_GUARD) -> Choice:
    """The choice at one size among ``at_size`` (all the same size, non-empty)."""
    if not at_size:
        raise ValueError("no candidate measured at this size")
    best = min(at_size, key=lambda p: (p.median, simplicity(p.candidate)))
    guard = min(max_guard, best.rel_spread)
    tied = [p for p in at_size if p.median <= best.median * (1 + guard)]
    pick = min(tied, key=lambda p: (simplicity(p.candidate), p.median, p.candidate))
    return Choice(
        best.bytes,
        pick.candidate,
        best.candidate,
        pick.median,
        best.median,
        guard,
        tuple(sorted(p.candidate for p in tied)),
    )


def boundary(a: int, b: int) -> int:
    """Between measured sizes a < b: the geometric mean, rounded down (at least a + 1)."""
    return max(a + 1, math.isqrt(a * b))


@dataclass(frozen=True)
class Range:
    lo: int  # first size of the range (bytes per block)
    hi: int | None  # first size after it; None: open
    candidate: str
    measured: tuple[int, ...]  # the measured sizes inside


def merge(choices: list[Choice]) -> list[Range]:
    """Per-size choices (any order) -> ranges covering [0, inf)."""
    ordered = sorted(choices, key=lambda c: c.bytes)
    ranges: list[Range] = []
    for i, c in enumerate(ordered):
        if ranges and ranges[-1].candidate == c.candidate:
            last = ranges[-1]
            ranges[-1] = Range(last.lo, None, last.candidate, (*last.measured, c.bytes))
        else:
            lo = 0 if i == 0 else boundary(ordered[i - 1].bytes, c.bytes)
            if ranges:
                last = ranges[-1]
                ranges[-1] = Range(last.lo, lo, last.candidate, last.measured)
            ranges.append(Range(lo, None, c.candidate, (c.bytes,)))
    return ranges


def decide(
    pts: list[Point], allowed: frozenset[str] | None = None, max_guard: float = MAX_GUARD
) -> list[Choice]:
    """One choice per measured size, among ``allowed`` candidates (all when None)."""
    by_size: dict[int, list[Point]] = {}
    for p in pts:
        if allowed is None or p.candidate in allowed:
            by_size.setdefault(p.bytes, []).append(p)
    return [choose(ps, max_guard) for _, ps in sorted(by_size.items())]


def range_of(ranges: list[Range], size: int) -> Range:
    """The range a message of ``size`` bytes per block falls in (the dispatch rule of the C)."""
    for r in ranges:
        if r.hi is None or size < r.hi:
            return r
    raise ValueError("ranges do not cover every size")


def dominated(at_size: list[Point]) -> set[str]:
    """Candidates whose fastest repeat is slower than the best candidate's slowest repeat
    (needs at least two repeats of both: with one, the spread is unknown)."""
    ready = [p for p in at_size if p.repeats >= 2]
    if not ready:
        return set()
    best = min(ready, key=lambda p: p.median)
    return {p.candidate for p in ready if p.lo > best.hi}


def halve(at_size: list[Point], protected: frozenset[str], keep_min: int = 2) -> set[str]:
    """Successive halving at one size: drop the slower half by median (never ``protected``
    candidates; at least ``keep_min`` unprotected ones stay)."""
    free = sorted((p for p in at_size if p.candidate not in protected), key=lambda p: p.median)
    keep = max(keep_min, math.ceil(len(free) / 2))
    return {p.candidate for p in free[keep:]}
