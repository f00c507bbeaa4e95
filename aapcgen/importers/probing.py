"""Running discovery's probes on a network: the MPI probe job (probe.c), the measured answers,
their cache (a discovery resumes from it), the time budget, progress, and link speeds.

An answer compares the time the probe flow and its load flows take together with the longer of
the probe alone and the loads alone, each the shortest of a few repetitions (noise only adds
time; a shared saturated link holds every repetition to twice): ``ratio >= high`` is contention, ``ratio <= low`` is none, anything between is measured
again with more repetitions and, if it stays between, *undecided*: the discovery then says
which question it could not settle instead of guessing.
"""

from __future__ import annotations

import json
import math
import os
import select
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.model import Topology
from aapcgen.core.units import format_bandwidth
from aapcgen.importers.discover import (
    Answer,
    Cluster,
    Discovery,
    Flow,
    clusters_of,
    identifiable,
    infer,
    switches_of,
    to_tree,
)
from aapcgen.importers.tree import ImportedTree

PROBE_SOURCE = Path(__file__).with_name("probe.c")
FRAMING = 1514 / 1448  # Ethernet bytes per TCP payload byte in full 1500-byte frames


class BudgetExceeded(AapcError):
    """The time budget ran out; the measurements so far are in the state file."""


@dataclass(frozen=True)
class Settings:
    bytes: int = 0  # per flow and repetition; 0: chosen by a first timed flow (calibrated)
    reps: int = 3
    high: float = 1.6  # ratio at and above which the flows contended (equal links: 2)
    low: float = 1.3  # ratio at and below which they did not (1)
    retries: int = 2  # more measurements of an answer between the thresholds
    rounds: int = 2  # builds: when the checks fail, every question is asked again (majority)
    load: int = 1  # load flows per probe (more see faster switch links, with a weaker ratio)
    speed_bytes: int = 4 << 20  # per flow in speed measurements (TCP reaches its rate)


def compile_probe(mpicc: str, directory: Path) -> Path:
    """Build probe.c with ``mpicc`` into ``directory``; InputError with the compiler's words."""
    exe = directory / "aapc_probe"
    result = subprocess.run(
        [mpicc, "-O2", "-o", str(exe), str(PROBE_SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        words = " ".join((result.stderr or result.stdout).split())[:120]
        raise InputError(f"{mpicc}: cannot build the probe: {words}")
    return exe


class ProbeJob:
    """The running probe job: one experiment line in, one result line out."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.command = list(command)
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            env={**os.environ, **(env or {})},
        )

    def run(self, flows: Sequence[Flow], size: int, reps: int, timeout: float) -> Times:
        """[start, end] of each flow in each repetition (reps x flows), on rank 0's clock."""
        line = f"X {size} {reps} {len(flows)} " + " ".join(f"{s} {d}" for s, d in flows)
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise AapcError(f"the probe job ended: {self._stderr()}") from None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, left))
            if not ready:
                raise AapcError(f"the probe job gave no answer in {timeout:.0f} s")
            answer = self.process.stdout.readline()
            if not answer:
                raise AapcError(f"the probe job ended: {self._stderr()}")
            if answer.startswith("E"):
                raise AapcError(f"the probe job refused '{line[:80]}'")
            if answer.startswith("R"):
                values = [float(v) for v in answer.split()[1:]]
                pairs = [values[i : i + 2] for i in range(0, len(values), 2)]
                return [pairs[i : i + len(flows)] for i in range(0, len(pairs), len(flows))]

    def _stderr(self) -> str:
        self.process.poll()
        text = self.process.stderr.read() if self.process.stderr else ""
        return " ".join(text.split())[-160:] or f"exit status {self.process.returncode}"

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write("Q\n")
                self.process.stdin.close()
                self.process.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired, OSError):
                self.process.kill()
                self.process.wait()


Times = list[list[list[float]]]  # repetitions x flows x [start, end] (seconds)
Runner = Callable[[Sequence[Flow], int, int], Times]
CHECK_ATTEMPTS = 1000  # measurement keys of checks start here: apart from the build's
SKEW = 0.2  # flows started together: within this part of the shorter one's duration (a shared
# link then still holds them to 1.8 times the time alone, above ``high``)


def durations(rep: list[list[float]]) -> list[float]:
    return [end - start for start, end in rep]


def simultaneous(rep: list[list[float]]) -> bool:
    """The flows of one repetition started together: one receiver late by more than a fifth
    of a transfer (not scheduled in time on a loaded host) takes the contention away."""
    starts = [start for start, _ in rep]
    return max(starts) - min(starts) <= SKEW * min(durations(rep))


@dataclass
class Progress:
    """Counts, elapsed time and an estimate of the time left, printed through ``say``."""

    n: int
    say: Callable[[str], None] | None = None
    started: float = field(default_factory=time.monotonic)
    inserted: int = 3
    probes: int = 0
    round: int = 0

    def insert(self, done: int) -> None:
        self.inserted = done

    def eta(self) -> float:
        """Insertion i costs about i/3 probes more than the first: time ~ inserted^2."""
        spent = time.monotonic() - self.started
        done = max(1, self.inserted - 2) ** 2
        total = max(1, self.n - 2) ** 2 * 1.5  # the checks add about half
        return max(0.0, spent * total / done - spent)

    def note(self, text: str) -> None:
        self.probes += 1
        if self.say is not None:
            spent = time.monotonic() - self.started
            again = f", round {self.round + 1}" if self.round else ""
            self.say(
                f"probe {self.probes} (machine {self.inserted}/{self.n}{again}): {text}; "
                f"{spent:.0f} s, about {self.eta():.0f} s left"
            )


def _majority(votes: list[Answer]) -> Answer:
    """The answer most votes gave (ratio: their median); a tie or no decided vote: undecided."""
    yes = [v for v in votes if v.contend is True]
    no = [v for v in votes if v.contend is False]
    if len(yes) == len(no):
        return Answer(None, statistics.median(v.ratio for v in votes))
    side = yes if len(yes) > len(no) else no
    return Answer(side[0].contend, statistics.median(v.ratio for v in side))


class MeasuredOracle:
    """Answers of the network, cached by experiment: a rerun with the same state file asks the
    same questions and gets the stored answers without measuring."""

    def __init__(
        self,
        run: Runner,
        settings: Settings,
        state: dict,
        budget: float | None = None,
        progress: Progress | None = None,
        save: Callable[[dict], None] | None = None,
    ) -> None:
        self.run = run
        self.settings = settings
        self.state = state
        self.results: dict[str, Times] = state.setdefault("results", {})
        self.deadline = None if budget is None else time.monotonic() + budget
        self.progress = progress
        self.save = save
        self.evidence: list[tuple[Flow, tuple[Flow, ...], Answer]] = []
        self.round = 0  # a discovery that failed its checks asks everything again
        self.votes: dict[tuple[str, Flow, tuple[Flow, ...]], list[Answer]] = {}

    def measure(self, flows: Sequence[Flow], attempt: int = 0) -> Times:
        """Times of ``flows`` together (reps x flows); attempt -1: a speed measurement with
        ``speed_bytes`` per flow."""
        key = f"{attempt}:" + ",".join(f"{s}>{d}" for s, d in flows)
        if key not in self.results:
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise BudgetExceeded("the --budget is spent")
            size = self.settings.speed_bytes if attempt < 0 else self.settings.bytes
            reps = self.settings.reps * (1 + max(0, attempt) % (self.settings.retries + 1))
            # (attempt -1: speeds; 0..: build votes; CHECK_ATTEMPTS..: check votes)
            self.results[key] = self.run(flows, size, reps)
            if self.save is not None:
                self.save(self.state)
        return self.results[key]

    def slowest(self, flows: Sequence[Flow], attempt: int = 0) -> float | None:
        """The shortest, over the repetitions whose flows started together, duration of the
        slowest flow; None when no repetition started together. Once the starts are checked,
        noise (other processes, a lost packet) only adds time, while a shared link holds every
        repetition to its bytes over its bandwidth: the minimum keeps the link, drops noise."""
        together = [
            max(durations(rep)) for rep in self.measure(flows, attempt) if simultaneous(rep)
        ]
        return min(together) if together else None

    def vote(self, probe: Flow, loads: Sequence[Flow], first: int) -> Answer:
        """One measured answer: the probe and its loads together against the slower of the
        probe alone and the loads alone. Together, a shared saturated link must carry all the
        bytes whichever flow TCP favours, so this holds where the probe's own time may not
        (a favoured probe can finish as if alone while its load starves). A contention is
        believed only if the probe beside its own reverse flow (no directed link in common)
        is not slowed as well: on a host too busy to move two flows at full speed (an
        emulation starved of CPU) every pair looks shared. Between the thresholds, or
        unconfirmed: measured again with more repetitions (attempts ``first``, ``first+1``..)."""
        ratios = []
        answer = Answer(None, 0.0)
        reverse = (probe[1], probe[0])
        for attempt in range(first, first + self.settings.retries + 1):
            together = self.slowest([probe, *loads], attempt)
            alone = [self.slowest([probe], attempt), self.slowest(loads, attempt)]
            if together is None or None in alone:
                continue  # no repetition started together: more repetitions
            ratio = together / max(t for t in alone if t is not None)
            if ratio >= self.settings.high:
                control = self.slowest([probe, reverse], attempt)
                base = [self.slowest([probe], attempt), self.slowest([reverse], attempt)]
                if control is None or None in base:
                    continue
                busy = control / max(t for t in base if t is not None)
                if busy > self.settings.low:
                    answer = Answer(None, ratio)
                    continue  # the host, not a link: more repetitions
            ratios.append(ratio)
            ratio = statistics.median(ratios)
            if ratio >= self.settings.high:
                return Answer(True, ratio)
            if ratio <= self.settings.low:
                return Answer(False, ratio)
            answer = Answer(None, ratio)
        return answer

    def __call__(self, probe: Flow, loads: Sequence[Flow], phase: str = "build") -> Answer:
        """The answer of round 0; in later rounds, the majority of one fresh vote per round
        (and one more to break a tie): a wrong answer that made the checks fail is outvoted.
        Checks are measured apart from the build (``phase``), even for the same flows."""
        question = (phase, probe, tuple(loads))
        votes = self.votes.setdefault(question, [])
        step = self.settings.retries + 1
        offset = 0 if phase == "build" else CHECK_ATTEMPTS
        while len(votes) <= self.round:
            votes.append(self.vote(probe, loads, offset + len(votes) * step))
        answer = _majority(votes)
        if answer.contend is None and len(votes) > 1:
            votes.append(self.vote(probe, loads, offset + len(votes) * step))
            answer = _majority(votes)
        self.evidence.append((probe, tuple(loads), answer))
        if self.progress is not None:
            verdict = {True: "contention", False: "none", None: "undecided"}[answer.contend]
            self.progress.note(f"ratio {answer.ratio:.2f}: {verdict}")
        return answer

    def rate(self, flows: Sequence[Flow]) -> float:
        """Line rate (bytes/s) of ``flows`` together, with ``speed_bytes`` each: all their bytes
        over the longest duration (the best repetition that started together)."""
        reps = self.measure(flows, attempt=-1)
        slowest = min(max(durations(rep)) for rep in [r for r in reps if simultaneous(r)] or reps)
        return len(flows) * self.settings.speed_bytes / slowest * FRAMING


@dataclass(frozen=True)
class LinkSpeed:
    bandwidth: float  # bytes/s, line rate
    saturated: bool  # False: a lower bound (the flows could not fill the link)
    flows: int


def lone_rates(oracle: MeasuredOracle) -> dict[Flow, float]:
    """Line rate (bytes/s) of every flow the discovery timed alone: its bytes over its best
    repetition, or, where the pair was timed alone at both sizes (the probes' and the speed
    measurements' four times as many), the lower of that and the slope, extra bytes over extra
    time. The slope cancels what a transfer gets for free once, a token bucket's burst (the
    emulation's tbf passes 32 KiB at once: a 128 KiB flow at 10 Mbit/s timed 28% fast); the
    lower of the two keeps noise on the small size from steepening it. (What a transfer pays
    once, start-up and latency, still slows bytes over time a little: a speed is a lower
    bound.)"""
    return {flow: flow_rate(by_size) * FRAMING for flow, by_size in lone_times(oracle).items()}


def lone_times(oracle: MeasuredOracle) -> dict[Flow, dict[int, float]]:
    """The best time of every flow timed alone, per transfer size."""
    best: dict[Flow, dict[int, float]] = {}
    for key, reps in oracle.results.items():
        attempt, flows = key.split(":", 1)
        if "," in flows:
            continue
        size = oracle.settings.speed_bytes if int(attempt) < 0 else oracle.settings.bytes
        s, d = (int(v) for v in flows.split(">"))
        seconds = min(durations(r)[0] for r in reps)
        by_size = best.setdefault((s, d), {})
        by_size[size] = min(by_size.get(size, math.inf), seconds)
    return best


def flow_rate(best: dict[int, float]) -> float:
    """Payload rate from the best time per transfer size (bytes -> seconds): the fastest bytes
    over time, or the slope between the smallest and the largest size when both exist and it is
    lower (bytes that pass at once make bytes over time too fast)."""
    plain = max(size / seconds for size, seconds in best.items())
    if len(best) < 2:
        return plain
    (small, t_small), (large, t_large) = min(best.items()), max(best.items())
    if t_large <= t_small:
        return plain
    return min(plain, (large - small) / (t_large - t_small))


def link_speeds(
    root: Cluster, oracle: MeasuredOracle, machine: float, rho: int
) -> dict[int, LinkSpeed]:
    """Speed of the link above each switch (index in ``switches_of``): the fastest lone flow
    across it (one timed for this, ``speed_bytes``, and every one the build timed: a link
    slower than the machines limits them all, noise only slows some), then two flows at once
    from different children to machines beside it (a link up to twice as fast)."""
    speeds: dict[int, LinkSpeed] = {}
    for index, (node, parent) in enumerate(switches_of(root)):
        if parent is None:
            continue
        inside = _spread(node)
        beside = [m for c in parent.children if c is not node for m in _members_of(c)]
        targets = [m for m in beside if m != rho] + ([rho] if rho in beside else [])
        flows = list(zip(inside, targets))[:2]
        if not flows:
            continue
        oracle.rate(flows[:1])
        members = set(inside)
        one = max(
            rate for (s, d), rate in lone_rates(oracle).items() if (s in members) != (d in members)
        )
        if one < 0.9 * machine:
            speeds[index] = LinkSpeed(one, True, 1)
            continue
        both = oracle.rate(flows) if len(flows) == 2 else one
        speeds[index] = LinkSpeed(max(one, both), both < 1.8 * machine, len(flows))
    return speeds


def machine_speeds(oracle: MeasuredOracle, n: int, partners: Sequence[int] = ()) -> list[float]:
    """Line rate of every machine's own link: its fastest flow timed alone (no flow through a
    machine beats the machine's link; noise and slower switch links only slow some). Each
    machine m first gets a flow to ``partners[m]`` (a machine on its switch) timed alone at both
    sizes, so its rate is a slope (lone_rates). A machine under 90% of the others' median gets two
    more flows to other machines, timed one at a time (flows at once share the CPU of an
    emulation)."""
    timed: set[Flow] = set()
    for m, partner in enumerate(partners):
        flow = (m, partner) if m < partner else (partner, m)
        if m != partner and flow not in timed:
            timed.add(flow)
            oracle.measure([flow])
            oracle.rate([flow])
    rates = lone_rates(oracle)

    def best(m: int) -> float:
        # flows timed at both sizes first: a single size's rate carries the start-up's error
        mine = {f: r for f, r in rates.items() if m in f}
        sloped = [r for f, r in mine.items() if f in two_sizes]
        return max(sloped or mine.values(), default=0.0)

    two_sizes = {f for f, by_size in lone_times(oracle).items() if len(by_size) > 1}

    speed = [best(m) for m in range(n)]
    typical = statistics.median(speed)
    for m in range(n):
        if speed[m] < 0.9 * typical:
            for partner in [x for x in range(n) if x != m][:2]:
                oracle.rate([(partner, m)])
            rates = lone_rates(oracle)
            two_sizes = {f for f, by_size in lone_times(oracle).items() if len(by_size) > 1}
            speed[m] = best(m)
    return speed


def switch_partners(root: Cluster, n: int) -> list[int]:
    """For every machine, another machine on its own switch (its neighbour in the switch's list),
    or on the nearest switch above when it is alone there: a flow between them crosses only
    machine links where possible."""
    partner = list(range(n))
    for node, _ in switches_of(root):
        here = [c for c in node.children if isinstance(c, int)]
        others = [m for c in node.children if not isinstance(c, int) for m in _members_of(c)]
        for i, m in enumerate(here):
            if partner[m] != m:
                continue
            if len(here) > 1:
                partner[m] = here[(i + 1) % len(here)]
            elif others:
                partner[m] = others[0]
    return [p if p != m or n < 2 else (m + 1) % n for m, p in enumerate(partner)]


def _members_of(child: int | Cluster) -> list[int]:
    return [child] if isinstance(child, int) else child.machines()


def _spread(node: Cluster) -> list[int]:
    """The node's machines, one per child first, so that flows leave by different links."""
    groups = [_members_of(c) for c in node.children]
    order: list[int] = []
    for depth in range(max(len(g) for g in groups)):
        order += [g[depth] for g in groups if depth < len(g)]
    return order


def load_state(path: Path | None, machines: Sequence[str], settings: Settings) -> dict:
    """The cached measurements of an earlier run with the same machines and settings."""
    fresh = {"format": 2, "machines": list(machines), "settings": settings.__dict__, "results": {}}
    if path is None or not path.exists():
        return fresh
    try:
        state = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a discovery state file ({exc})") from None
    if state.get("format") != 2:
        raise InputError(f"{path}: a state file of an older aapcgen; remove it")
    if state.get("machines") != list(machines) or state.get("settings") != settings.__dict__:
        raise InputError(
            f"{path}: state of another discovery (other machines or settings); remove it or "
            "pass another --state"
        )
    return state


def saver(path: Path | None) -> Callable[[dict], None] | None:
    if path is None:
        return None

    def save(state: dict) -> None:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".discover-")
        with os.fdopen(handle, "w") as out:
            json.dump(state, out)
        os.replace(temporary, path)

    return save


# --------------------------------------------------------------------------- a whole discovery


@dataclass
class Report:
    """What a discovery found: the tree when it is complete, and the lines that explain it."""

    result: Discovery
    tree: ImportedTree | None
    lines: list[str]
    seconds: float
    measurements: int


CALIBRATION_BYTES = 1 << 20
TARGET_SECONDS = 0.1  # of one probe flow alone: long against noise and start-up, short in total


def calibrated(settings: Settings, state: dict, run: Runner) -> Settings:
    """With ``bytes == 0`` (auto): time one 1 MiB flow and choose the power of two that takes
    about 0.1 s on this network (64 KiB .. 16 MiB; speeds with four times that); the choice is
    kept in the state, so a resumed discovery asks the same questions."""
    if settings.bytes > 0:
        return settings
    if "bytes" not in state:
        seconds = min(durations(rep)[0] for rep in run([(1, 0)], CALIBRATION_BYTES, 2))
        wanted = CALIBRATION_BYTES * TARGET_SECONDS / max(seconds, 1e-6)
        size = 1 << max(16, min(24, round(math.log2(wanted))))
        state["bytes"] = size
    size = int(state["bytes"])
    return replace(settings, bytes=size, speed_bytes=4 * size)


def _round(value: float) -> float:
    """Three significant digits in bits per second: measured speeds are not exact."""
    bits = value * 8
    scale = 10 ** max(0, len(str(int(bits))) - 3)
    return round(bits / scale) * scale / 8


def _common_speed(speeds: list[float]) -> float:
    return _round(statistics.median(speeds))


def discover_with(
    run: Runner,
    machines: Sequence[str],
    name: str,
    settings: Settings,
    state_path: Path | None = None,
    budget: float | None = None,
    say: Callable[[str], None] | None = None,
) -> Report:
    """Discover the tree of ``machines`` (rank r = machines[r]) through ``run``."""
    started = time.monotonic()
    n = len(machines)
    state = load_state(state_path, machines, settings)
    settings = calibrated(settings, state, run)
    progress = Progress(n, say)
    oracle = MeasuredOracle(run, settings, state, budget, progress, saver(state_path))
    probes = 0
    notes: list[str] = []
    for round_ in range(settings.rounds):
        oracle.round = round_
        progress.round = round_
        result = infer(
            n, oracle, load=settings.load, name=lambda m: machines[m], on_insert=progress.insert
        )
        probes += result.probes
        if result.complete:
            break
        if not result.undecided:
            # a second opinion on the failed checks alone: noise fails one check, a wrong
            # tree fails its checks again
            oracle.round = round_ + 1
            asked = [(q, oracle(q[0], q[1], "check")) for q in result.failed_questions]
            probes += len(asked)
            if all(answer.contend == q[2] for q, answer in asked):
                notes.append(
                    f"{len(asked)} failed check(s) passed when asked again: "
                    + "; ".join(result.failed_checks)
                )
                result.failed_checks, result.failed_questions = [], []
                break
    rounds = f" in {round_ + 1} rounds" if round_ else ""
    lines = [f"{probes} probes{rounds} for {n} machines ({n * (n - 1)} flows)", *notes]
    result.probes = probes
    if not result.complete:
        lines += [f"could not decide: {q}" for q in result.undecided]
        lines += [f"check failed: {q}" for q in result.failed_checks]
        return Report(result, None, lines, time.monotonic() - started, len(oracle.results))
    measured = machine_speeds(oracle, n, switch_partners(result.root, n))
    common = _common_speed(measured)
    machine_speed = [common if abs(s - common) <= 0.1 * common else _round(s) for s in measured]
    speeds = link_speeds(result.root, oracle, common, 0)
    nodes = switches_of(result.root)
    link_speed: dict[int, float] = {}
    for index, (node, parent) in enumerate(nodes):
        if parent is None:
            continue
        found = speeds.get(index)
        ratios = ", ".join(f"{a.ratio:.2f}" for a in node.evidence)
        label = f"d{nodes.index(next(x for x in nodes if x[0] is parent))} - d{index}"
        if found is None:
            link_speed[index] = common
            lines.append(f"{label}: contention ratios {ratios}; speed not measured, assumed")
            continue
        value = common if abs(found.bandwidth - common) <= 0.1 * common else _round(found.bandwidth)
        link_speed[index] = value
        how = "measured" if found.saturated else "at least (not saturated)"
        lines.append(
            f"{label}: contention ratios {ratios}; {how} "
            f"{format_bandwidth(_round(found.bandwidth))} with {found.flows} flow(s)"
        )
    lines.append(f"machine links: {format_bandwidth(common)} (median of {n})")
    tree = to_tree(result.root, list(machines), name, machine_speed, link_speed)
    return Report(result, tree, lines, time.monotonic() - started, len(oracle.results))


def compare(report: Report, truth: Topology, settings: Settings) -> list[str]:
    """How a discovery compares with the tree it ran on (emulated networks): the clusters seen
    from machine 0 must be the ones bandwidth can show, and the speeds within 10%."""
    if report.tree is None:
        return ["no tree to compare"]
    found = clusters_of(report.result.root)
    visible = identifiable(truth, 0, settings.load)
    every = identifiable(truth, 0, load=10**6)
    lines = []
    if found == visible:
        lines.append(f"same tree as {truth.name} up to switch names ({len(found)} switch links)")
    else:
        names = truth.machines
        missing = [sorted(names[m] for m in c) for c in visible - found]
        extra = [sorted(names[m] for m in c) for c in found - visible]
        lines.append(f"DIFFERS from {truth.name}: missing {missing}, extra {extra}")
    hidden = every - visible
    if hidden:
        lines.append(f"{len(hidden)} link(s) of {truth.name} are faster than its machines can load")
    return lines


def _runner(job: ProbeJob, settings: Settings) -> Runner:
    def run(flows: Sequence[Flow], size: int, reps: int) -> Times:
        # a generous timeout: every flow at 1 Mbit/s, plus start-up
        return job.run(flows, size, reps, timeout=60 + reps * len(flows) * size / 125_000)

    return run


def discover_job(
    command: Sequence[str],
    machines: Sequence[str],
    name: str,
    settings: Settings,
    state_path: Path | None = None,
    budget: float | None = None,
    say: Callable[[str], None] | None = None,
) -> Report:
    """Start the probe job ``command`` (one rank per machine), discover, stop the job."""
    job = ProbeJob(command, {"AAPC_QUIET": "1"})
    try:
        return discover_with(
            _runner(job, settings), machines, name, settings, state_path, budget, say
        )
    finally:
        job.close()


def discover_emulated(
    topo: Topology,
    settings: Settings,
    rate: float | None = None,
    queue: int | None = None,
    prefix: str = "aapcd",
    state_path: Path | None = None,
    budget: float | None = None,
    say: Callable[[str], None] | None = None,
) -> Report:
    """Bring ``topo`` up as an emulated network (root), discover it, tear it down."""
    from aapcgen.measure.bench import bin_path
    from aapcgen.platforms import emulate

    with tempfile.TemporaryDirectory(prefix="aapc-discover-") as work:
        exe = compile_probe(bin_path("mpicc"), Path(work))
        kwargs = {} if queue is None else {"queue": queue}
        with emulate.emulated(topo, rate=rate, prefix=prefix, **kwargs) as em:
            command = emulate.mpiexec_command(em, bin_path("mpiexec"), [str(exe)])
            return discover_job(
                command, list(topo.machines), topo.name, settings, state_path, budget, say
            )


def discover_hosts(
    hostfile: str,
    hosts: Sequence[str],
    name: str,
    settings: Settings,
    mpicc: str | None = None,
    state_path: Path | None = None,
    budget: float | None = None,
    say: Callable[[str], None] | None = None,
) -> Report:
    """Discover the network of ``hosts`` (one rank each, in hostfile order) with mpiexec -f;
    the probe binary is built in the current directory, which the hosts must share."""
    from aapcgen.measure.bench import bin_path

    compiler = mpicc or bin_path("mpicc")
    launcher = str(Path(compiler).with_name("mpiexec")) if mpicc else bin_path("mpiexec")
    exe = compile_probe(compiler, Path.cwd())
    command = [launcher, "-f", hostfile, "-n", str(len(hosts)), "-ppn", "1", str(exe)]
    return discover_job(command, hosts, name, settings, state_path, budget, say)
