"""Time-lines of the phase executor: where the time between a call and its bound goes.

A run with ``AAPC_TRACE=PREFIX`` in the environment (``aapcgen bench --timeline``) makes every
rank of a generated routine append, per call, its events to ``PREFIX.<comm>.<rank>``
(runtime_c/common/aapc_trace.c; ``<comm>`` names the communicator, ``<rank>`` is the rank in it,
so several communicators' traces never mix; files of older runtimes, ``PREFIX.<rank>``, are read
too): a send waiting for its syncs, posted, completed; a data or sync
receive completed; a sync fired. This module reads those files, aligns the clocks (each rank's
offset against rank 0, measured after the call), picks a call, plots it (one row per rank,
sends as bars coloured by phase, receive completions and sync arrivals as marks, and one row per
busiest link showing when a message occupied it) and accounts, per busiest directed link, for
the time the link was idle: the handovers between consecutive messages (from the previous
message's receive to the next send), split into the sync's flight (previous receive -> the sync
arriving at the next sender) and the sender's own delay (sync arrived -> send posted), and the
transfers' excess over the wire time.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aapcgen.alltoall.tree import hang, path_edges, uplink_bandwidths
from aapcgen.core.errors import InputError
from aapcgen.core.model import Topology

_HEADER = re.compile(r"^# aapc-trace 1 (.*)$")
_FIELD = re.compile(r"(?:^| )([a-z_0-9]+)=")
_SUFFIX = re.compile(r"^(?:([^.]+)\.)?(\d+)$")


@dataclass(frozen=True)
class Event:
    t: float  # seconds on rank 0's clock, from the call's start
    kind: str
    phase: int
    peer: int  # machine (dummies: -(machine + 1)); -1 for barriers


@dataclass(frozen=True)
class RankCall:
    schedule: str
    comm: str  # the communicator's name in the trace files ("" in older traces)
    call: int
    rank: int
    machine: int
    n_phases: int
    bytes: int
    t0: float  # rank 0's clock
    t1: float
    events: tuple[Event, ...]
    clock_err: float = 0.0  # the offset's uncertainty: rank 0's clock is within +- this


@dataclass(frozen=True)
class Message:
    phase: int
    src: int  # machines
    dst: int
    sync_wait: float  # the sender started waiting for the message's syncs
    start: float  # posted
    send_done: float
    recv_done: float  # nan when the receiver did not stamp it
    sync_in: float  # the last of its syncs arrived at the sender (nan: none)


@dataclass(frozen=True)
class Call:
    schedule: str
    comm: str
    call: int
    bytes: int
    n_phases: int
    ranks: tuple[RankCall, ...]  # by rank

    @property
    def start(self) -> float:
        return min(r.t0 for r in self.ranks)

    @property
    def seconds(self) -> float:
        return max(r.t1 for r in self.ranks) - self.start


def trace_files(prefix: str | Path) -> list[Path]:
    """The trace files of ``PREFIX``: ``PREFIX.<comm>.<rank>`` (and older ``PREFIX.<rank>``)."""
    prefix = Path(prefix)
    return [
        f
        for f in sorted(prefix.parent.glob(glob_escape(prefix.name) + ".*"))
        if _SUFFIX.match(f.name[len(prefix.name) + 1 :])
    ]


def glob_escape(name: str) -> str:
    """``name`` with the glob metacharacters escaped."""
    return re.sub(r"([*?\[])", r"[\1]", name)


def read_traces(prefix: str | Path) -> list[Call]:
    """Every traced call under ``PREFIX.<comm>.<rank>``, clocks aligned on rank 0's, by
    communicator, schedule and call."""
    files = trace_files(prefix)
    if not files:
        raise InputError(
            f"no trace files {prefix}.<comm>.<rank> (was the run made with AAPC_TRACE?)"
        )
    by_call: dict[tuple[str, str, int], list[RankCall]] = defaultdict(list)
    for f in files:
        for rc in _rank_calls(f.read_text()):
            by_call[(rc.comm, rc.schedule, rc.call)].append(rc)
    calls = []
    for (comm, schedule, call), ranks in sorted(by_call.items()):
        ranks.sort(key=lambda r: r.rank)
        if len({r.rank for r in ranks}) != len(ranks):
            raise InputError(f"{prefix}: call {call} of {schedule} traced twice by one rank")
        calls.append(Call(schedule, comm, call, ranks[0].bytes, ranks[0].n_phases, tuple(ranks)))
    return calls


def parse_header(fields: str) -> dict[str, str]:
    """The ``key=value`` pairs of a header line; a value runs to the next `` key=`` (so a
    schedule name with blanks, as older runtimes wrote it, stays whole)."""
    starts = list(_FIELD.finditer(fields))
    out = {}
    for m, nxt in zip(starts, [*starts[1:], None], strict=True):
        end = nxt.start() if nxt is not None else len(fields)
        out[m.group(1)] = fields[m.end() : end].strip()
    return out


def _rank_call(head: dict[str, str], events: list[Event]) -> RankCall:
    off = float(head["offset"])
    return RankCall(
        head["schedule"], head.get("comm", ""), int(head["call"]), int(head["rank"]),
        int(head["machine"]),
        int(head["nphases"]), int(head["bytes"]), float(head["t0"]) + off,
        float(head["t1"]) + off, tuple(Event(e.t + off, e.kind, e.phase, e.peer) for e in events),
        float(head.get("offset_err", 0.0)),
    )  # fmt: skip


def _rank_calls(text: str) -> list[RankCall]:
    """The calls of one rank's trace file."""
    out: list[RankCall] = []
    head: dict[str, str] | None = None
    events: list[Event] = []
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            if head is not None:
                out.append(_rank_call(head, events))
            head = parse_header(m.group(1))
            events = []
        elif line and head is not None:
            t, kind, phase, peer = line.split(",")
            events.append(Event(float(t), kind, int(phase), int(peer)))
    if head is not None:
        out.append(_rank_call(head, events))
    return out


def median_call(calls: list[Call], schedule: str | None = None, size: int | None = None) -> Call:
    """The call of median duration among those of ``schedule`` (a name's suffix, e.g.
    ``receiver_all``) and ``size`` bytes."""
    pick = [
        c
        for c in calls
        if (schedule is None or c.schedule.replace("-", "_").endswith(schedule.replace("-", "_")))
        and (size is None or c.bytes == size)
    ]
    if not pick:
        raise InputError(f"no traced call of {schedule or 'any schedule'} at {size} bytes")
    pick.sort(key=lambda c: c.seconds)
    return pick[(len(pick) - 1) // 2]


def messages(call: Call) -> list[Message]:
    """The data messages of a call with their times, relative to the call's start."""
    t0 = call.start
    recv: dict[tuple[int, int, int], float] = {}
    for r in call.ranks:
        for e in r.events:
            if e.kind == "recv_done" and e.peer >= 0:
                recv[(e.phase, e.peer, r.machine)] = e.t - t0
    out = []
    for r in call.ranks:
        marks: dict[int, dict[str, float]] = defaultdict(dict)
        peer_of: dict[int, int] = {}
        for e in r.events:
            if e.kind in ("sync_wait", "send_start", "send_done"):
                marks[e.phase][e.kind] = e.t - t0
                peer_of[e.phase] = e.peer
            elif e.kind == "sync_in" and e.phase >= 0:
                marks[e.phase]["sync_in"] = max(marks[e.phase].get("sync_in", 0.0), e.t - t0)
        for p, mk in marks.items():
            d = peer_of[p]
            if d < 0 or "send_start" not in mk:
                continue  # dummies
            out.append(
                Message(
                    p, r.machine, d, mk.get("sync_wait", mk["send_start"]), mk["send_start"],
                    mk.get("send_done", float("nan")), recv.get((p, r.machine, d), float("nan")),
                    mk.get("sync_in", float("nan")),
                )
            )  # fmt: skip
    out.sort(key=lambda m: (m.phase, m.src))
    return out


@dataclass(frozen=True)
class LinkAccount:
    """Where one directed link's time went during a call (seconds)."""

    label: str
    messages: int
    wire: float  # messages x bytes / bandwidth: the link's bound
    busy: float  # union of [send posted, received] of its messages
    first_start: float
    last_done: float
    transfer_mean: float  # posted -> received, per message
    handovers: int  # consecutive messages from different senders
    gap_mean: float  # previous received -> next posted, per handover (negative: overlap)
    sync_flight_mean: float  # previous received -> the next sender's last sync arrived
    sender_delay_mean: float  # that sync arrived -> the next send posted


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if x == x]
    return statistics.fmean(xs) if xs else float("nan")


def link_accounts(topo: Topology, call: Call, top: int = 2) -> list[LinkAccount]:
    """The ``top`` directed links with the most wire time (the bottleneck links), accounted."""
    msgs = messages(call)
    if not msgs:
        return []
    ht = hang(topo)
    src = np.array([m.src for m in msgs], dtype=np.int64)
    dst = np.array([m.dst for m in msgs], dtype=np.int64)
    mi, edge = path_edges(ht, src, dst)
    bw = uplink_bandwidths(topo, ht)
    uses: dict[int, list[int]] = defaultdict(list)
    for i, e in zip(mi.tolist(), edge.tolist()):
        uses[e].append(i)
    wire = {e: len(ix) * call.bytes / bw[e // 2] for e, ix in uses.items()}
    accounts = []
    for e in sorted(wire, key=lambda k: -wire[k])[:top]:
        ms = sorted((msgs[i] for i in uses[e]), key=lambda m: (m.phase, m.start))
        spans = sorted((m.start, m.recv_done) for m in ms if m.recv_done == m.recv_done)
        busy, end = 0.0, -1e300
        for a, b in spans:
            if b > end:
                busy += b - max(a, end)
                end = b
        gaps, flights, delays = [], [], []
        for u, v in zip(ms, ms[1:]):
            if u.src == v.src:
                continue
            gaps.append(v.start - u.recv_done)
            flights.append(v.sync_in - u.recv_done)
            delays.append(v.start - max(v.sync_in, v.sync_wait))
        node, parent = ht.names[e // 2], ht.names[int(ht.parent[e // 2])]
        label = f"{node}->{parent}" if e % 2 == 0 else f"{parent}->{node}"
        accounts.append(
            LinkAccount(
                label, len(ms), wire[e], busy, min(m.start for m in ms),
                max(m.recv_done for m in ms if m.recv_done == m.recv_done),
                _mean([m.recv_done - m.start for m in ms]), len(gaps), _mean(gaps),
                _mean(flights), _mean(delays),
            )
        )  # fmt: skip
    return accounts


def report(topo: Topology, call: Call, bound: float) -> str:
    """A few lines: the call against its bound, then each busiest link's account."""
    per_phase = call.seconds / call.n_phases
    lines = [
        f"{call.schedule}, {call.bytes} B, call {call.call}: {call.seconds * 1e3:.2f} ms against "
        f"the bound {bound * 1e3:.2f} ms ({call.seconds / bound:.3f}x); {call.n_phases} phases, "
        f"{per_phase * 1e3:.3f} ms per phase against {bound / call.n_phases * 1e3:.3f}"
    ]
    for a in link_accounts(topo, call):
        lines.append(
            f"  link {a.label}: {a.messages} messages, wire {a.wire * 1e3:.2f} ms, busy "
            f"{a.busy * 1e3:.2f} ms ({100 * a.busy / call.seconds:.1f}% of the call); a "
            f"transfer (posted -> received) {a.transfer_mean * 1e3:.3f} ms against "
            f"{a.wire / a.messages * 1e3:.3f} on the wire; {a.handovers} handovers of "
            f"{a.gap_mean * 1e3:.3f} ms each (received -> next posted): sync flight "
            f"{a.sync_flight_mean * 1e3:.3f}, sender delay {a.sender_delay_mean * 1e3:.3f}"
        )
    return "\n".join(lines)


def plot(topo: Topology, call: Call, bound: float, path: Path, title: str = "") -> None:
    """One row per rank (sends as bars coloured by phase; black ticks: receive completions;
    red dots: sync arrivals) and one row per busiest link (its messages, posted -> received)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = call.start
    n = len(call.ranks)
    accounts = link_accounts(topo, call)
    msgs = messages(call)
    fig, ax = plt.subplots(figsize=(12, 0.32 * (n + 2 * len(accounts)) + 1.6))
    cmap = plt.get_cmap("tab20")
    for row, r in enumerate(call.ranks):
        y = n - 1 - row
        starts = {e.phase: e.t - t0 for e in r.events if e.kind == "send_start"}
        for e in r.events:
            if e.kind == "send_done" and e.phase in starts:
                a = starts[e.phase]
                ax.broken_barh([(a * 1e3, (e.t - t0 - a) * 1e3)], (y - 0.35, 0.7),
                               color=cmap(e.phase % 20), linewidth=0)  # fmt: skip
        rx = [(e.t - t0) * 1e3 for e in r.events if e.kind == "recv_done"]
        ax.plot(rx, [y] * len(rx), "|", color="black", markersize=7)
        sy = [(e.t - t0) * 1e3 for e in r.events if e.kind == "sync_in"]
        ax.plot(sy, [y + 0.3] * len(sy), ".", color="red", markersize=3)
    ht = hang(topo)
    index = {name: i for i, name in enumerate(ht.names)}
    labels = [f"rank {r.rank}" for r in reversed(call.ranks)]
    for k, a in enumerate(accounts):
        y = n + 0.5 + k
        a_name, b_name = a.label.split("->")
        on = [m for m in msgs if m.recv_done == m.recv_done and _uses(ht, index, m, a_name, b_name)]
        ax.broken_barh([(m.start * 1e3, (m.recv_done - m.start) * 1e3) for m in on],
                       (y - 0.35, 0.7), color=[cmap(m.phase % 20) for m in on], linewidth=0)  # fmt: skip
        labels.append(f"link {a.label}")
    ax.set_yticks(list(range(n)) + [n + 0.5 + k for k in range(len(accounts))])
    ax.set_yticklabels(labels, fontsize=7)
    ax.axvline(bound * 1e3, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("ms since the call started (dashed: the bandwidth bound)")
    ax.set_title(
        title
        or f"{call.schedule}, {call.bytes} B: {call.seconds * 1e3:.1f} ms = "
        f"{call.seconds / bound:.2f}x the bound",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _uses(ht: object, index: dict[str, int], m: Message, a: str, b: str) -> bool:
    """Whether message m crosses the directed link a -> b."""
    mi, edge = path_edges(ht, np.array([m.src]), np.array([m.dst]))  # type: ignore[arg-type]
    ia, ib = index[a], index[b]
    return any(
        (e % 2 == 0 and e // 2 == ia) or (e % 2 == 1 and e // 2 == ib) for e in edge.tolist()
    )
