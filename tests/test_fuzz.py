"""Issue 19: the fuzz suite. Malformed and extreme topology files, Alltoallv patterns and command
lines, from grammar-based generators (seeded, each case knows whether it must be refused) and
hypothesis. Every case runs the real command line in a forked child, and must end

* in exit status 2 with one line ``aapcgen: ...`` of at most 200 characters, or
* in exit status 0, and then the result is re-checked by the independent verifier
  (``aapcgen/verify/``) and, for a case valid by construction, compared with what the
  generator meant (machines, switches, links; the pattern's counts);

never in a traceback, a signal, an internal error (status 70), more than ``LIMIT_S`` seconds or
more than ``LIMIT_BYTES`` of memory (the child's peak resident size). A case built to be wrong
that ends in status 0 is an "unchecked accept".

Counts: ``AAPC_FUZZ_TOPOLOGIES`` (default 600), ``AAPC_FUZZ_PATTERNS`` (150), ``AAPC_FUZZ_CLI``
(100), ``AAPC_FUZZ_EXAMPLES`` (hypothesis examples per property, 60), ``AAPC_FUZZ_SEED`` (19);
``make fuzz`` runs 3,600 / 600 / 200 / 400. Each test writes its figures to
``build/fuzz/<test>.json`` (docs/measurements/fuzzing.md).
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import string
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aapcgen.core.errors import MESSAGE_CHARS
from aapcgen.core.topology import load_topology
from aapcgen.verify.alltoall import verify_schedule
from aapcgen.verify.alltoallv import verify_vschedule

ROOT = Path(__file__).resolve().parent.parent
TOPOS = ROOT / "topologies"
SEED = int(os.environ.get("AAPC_FUZZ_SEED", "19"))
N_TOPOLOGIES = int(os.environ.get("AAPC_FUZZ_TOPOLOGIES", "600"))
N_PATTERNS = int(os.environ.get("AAPC_FUZZ_PATTERNS", "150"))
N_CLI = int(os.environ.get("AAPC_FUZZ_CLI", "100"))
N_EXAMPLES = int(os.environ.get("AAPC_FUZZ_EXAMPLES", "60"))
LIMIT_S = 20.0
LIMIT_BYTES = 2**30
SAFETY_AS = 3 * 2**30  # a runaway child stops here (address space), well past LIMIT_BYTES
SUMMARY_DIR = ROOT / "build" / "fuzz"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def _loaded() -> None:
    """Load every command's modules once, here: each forked case then starts at once."""
    from aapcgen.cli import build_parser

    build_parser()


# --------------------------------------------------------------------------- running a case


@dataclass
class Outcome:
    argv: list[str]
    code: int  # exit status; -N: killed by signal N
    stdout: str
    stderr: str
    seconds: float
    peak_bytes: int
    hung: bool


def run_cli(argv: list[str], cwd: Path) -> Outcome:
    """``aapcgen ARGV`` in a forked child (the modules are loaded once, in this process)."""
    out_path, err_path = cwd / ".stdout", cwd / ".stderr"
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 99
        try:
            os.chdir(cwd)
            for fd, path in ((1, out_path), (2, err_path)):
                handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(handle, fd)
                os.close(handle)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            sys.stdin = open(os.devnull)  # noqa: SIM115
            resource.setrlimit(resource.RLIMIT_AS, (SAFETY_AS, SAFETY_AS))
            signal.signal(signal.SIGINT, signal.default_int_handler)
            from aapcgen.cli import main

            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # a traceback that escaped main
            traceback.print_exc()
            code = 99
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    hung = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > LIMIT_S:
            hung = True
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.005)
    seconds = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    read = lambda p: p.read_text(errors="replace") if p.exists() else ""  # noqa: E731
    return Outcome(
        argv, code, read(out_path), read(err_path), seconds, usage.ru_maxrss * 1024, hung
    )


@dataclass
class Tally:
    """The figures of one test: cases, refusals, accepts, and every failure."""

    name: str
    cases: int = 0
    malformed: int = 0
    refused: int = 0
    accepted: int = 0
    verified: int = 0
    max_seconds: float = 0.0
    max_peak_bytes: int = 0
    failures: list[str] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)

    def fail(self, what: str, outcome: Outcome) -> None:
        tail = (outcome.stderr.strip().splitlines() or [""])[-1][:300]
        self.failures.append(f"{what}: aapcgen {' '.join(outcome.argv)[:200]} -> {tail}")

    def check(self, outcome: Outcome, must_refuse: bool, kind: str) -> bool:
        """Record ``outcome``; True when it is an accept the caller must now verify."""
        self.cases += 1
        self.malformed += must_refuse or kind != "valid"
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.max_seconds = max(self.max_seconds, outcome.seconds)
        self.max_peak_bytes = max(self.max_peak_bytes, outcome.peak_bytes)
        err = outcome.stderr
        if outcome.hung:
            self.fail(f"hang ({kind})", outcome)
        elif outcome.code < 0 or outcome.code in (70, 99) or "Traceback" in err:
            self.fail(f"traceback or crash, status {outcome.code} ({kind})", outcome)
        elif outcome.peak_bytes > LIMIT_BYTES:
            self.fail(f"{outcome.peak_bytes / 2**30:.2f} GiB ({kind})", outcome)
        elif outcome.code == 2:
            self.refused += 1
            lines = err.strip().splitlines()
            if not lines or not lines[-1].startswith("aapcgen: "):
                self.fail(f"refused without a message ({kind})", outcome)
            elif any(len(line) > MESSAGE_CHARS for line in lines):
                self.fail(f"message over {MESSAGE_CHARS} characters ({kind})", outcome)
        elif outcome.code == 0:
            self.accepted += 1
            if must_refuse:
                self.fail(f"unchecked accept ({kind})", outcome)
                return False
            return True
        else:
            self.fail(f"exit status {outcome.code} ({kind})", outcome)
        return False

    def verified_ok(self) -> None:
        self.verified += 1

    def write(self) -> None:
        SUMMARY_DIR.mkdir(parents=True, exist_ok=True)
        data = {**asdict(self), "seed": SEED, "limit_s": LIMIT_S, "limit_bytes": LIMIT_BYTES}
        data["date"] = time.strftime("%Y-%m-%d %H:%M")
        data["machine"] = f"{os.uname().nodename} {os.cpu_count()} cpus"
        (SUMMARY_DIR / f"{self.name}.json").write_text(json.dumps(data, indent=1))

    def assert_clean(self) -> None:
        self.write()
        assert not self.failures, f"{len(self.failures)} failures:\n" + "\n".join(
            self.failures[:20]
        )


# --------------------------------------------------------------------------- topologies


@dataclass
class TopoCase:
    text: bytes
    must_refuse: bool
    kind: str
    expected: dict | None = None  # machines, machine_switch, links of a valid case


BANDWIDTHS = ["100Mbit", "1Gbit", "10Gbit", "125MB/s", "1.5Gbit", "100mbit", "40 Gbit/s"]


def valid_topology(rng: random.Random) -> tuple[dict, dict]:
    """A valid topology as YAML data, and what it means (rank order, switches, links)."""
    n_switches = rng.randint(1, 6)
    switches = [f"s{i}" for i in range(n_switches)]
    parent = {i: rng.randrange(i) for i in range(1, n_switches)}
    data: dict = {}
    if rng.random() < 0.7:
        data["name"] = rng.choice(["t", "fuzz-1", "a.b_c"])
    if rng.random() < 0.6:
        data["bandwidth"] = rng.choice(BANDWIDTHS)
    data["switches"] = (
        [f"s[0-{n_switches - 1}]"] if n_switches > 1 and rng.random() < 0.3 else list(switches)
    )
    machines: list[tuple[str, str]] = []
    entries = []
    count = 0
    while count < 2 or (rng.random() < 0.7 and count < 24):
        switch = rng.choice(switches)
        if rng.random() < 0.3:
            size = rng.randint(2, 6)
            base = f"r{count}x"
            entry = {"name": f"{base}[0-{size - 1}]", "switch": switch}
            if rng.random() < 0.3:
                entry["host"] = f"h{count}x[0-{size - 1}]"
            names = [f"{base}{i}" for i in range(size)]
        else:
            entry = {"name": f"n{count}", "switch": switch}
            if rng.random() < 0.2:
                entry["host"] = f"n{count}.cluster"
            names = [f"n{count}"]
        if rng.random() < 0.2:
            entry["bandwidth"] = rng.choice(BANDWIDTHS)
        entries.append(entry)
        machines += [(name, switch) for name in names]
        count += len(names)
    if rng.random() < 0.3:  # explicit ranks on single entries: a permutation of their slots
        singles = [i for i, e in enumerate(entries) if "[" not in e["name"]]
        positions = {}
        slot = 0
        for i, e in enumerate(entries):
            size = 1 if "[" not in e["name"] else len(expand_simple(e["name"]))
            positions[i] = slot
            slot += size
        ranks = [positions[i] for i in singles]
        rng.shuffle(ranks)
        for i, r in zip(singles, ranks):
            entries[i]["rank"] = r
    data["machines"] = entries
    links = []
    for child, par in parent.items():
        ends = [switches[par], switches[child]]
        rng.shuffle(ends)
        if rng.random() < 0.3:
            links.append({"ends": ends, "bandwidth": rng.choice(BANDWIDTHS)})
        else:
            links.append(ends)
    if links or rng.random() < 0.5:
        data["links"] = links
    if rng.random() < 0.15:
        data["ranks_per_machine"] = rng.randint(1, 3)
    order = rank_order(entries, machines)
    expected = {
        "machines": [m for m, _ in order],
        "machine_switch": [s for _, s in order],
        "links": sorted(tuple(sorted((switches[p], switches[c]))) for c, p in parent.items()),
    }
    keys = list(data)
    if rng.random() < 0.3:
        rng.shuffle(keys)
    return {k: data[k] for k in keys}, expected


def expand_simple(pattern: str) -> list[str]:
    """The generator's own (one bracket group, one range) expansion, independent of aapcgen."""
    head, _, rest = pattern.partition("[")
    body, _, tail = rest.partition("]")
    low, _, high = body.partition("-")
    return [f"{head}{i}{tail}" for i in range(int(low), int(high) + 1)]


def rank_order(entries: list[dict], machines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Explicit ranks first, the rest in list order (docs/topology.md)."""
    slots: list[tuple[str, str] | None] = [None] * len(machines)
    position = 0
    rest = []
    for entry in entries:
        names = expand_simple(entry["name"]) if "[" in entry["name"] else [entry["name"]]
        pairs = machines[position : position + len(names)]
        position += len(names)
        if "rank" in entry:
            slots[entry["rank"]] = pairs[0]
        else:
            rest += pairs
    free = iter(rest)
    return [s if s is not None else next(free) for s in slots]


def _dump(data: object, rng: random.Random) -> str:
    return yaml.safe_dump(data, default_flow_style=rng.choice([None, True, False]), sort_keys=False)


def _first_single(data: dict) -> dict | None:
    return next((e for e in data["machines"] if "[" not in e["name"]), None)


def mutate_data(data: dict, rng: random.Random) -> str | None:
    """A structural mutation that makes ``data`` invalid; its name (None if not applicable)."""
    machines, switches = data["machines"], data["switches"]
    single = _first_single(data)
    links = data.get("links", [])
    choice = rng.randrange(26)
    if choice == 0 and single and len(machines) > 1:
        other = next(e for e in machines if e is not single)
        other["name"] = single["name"] if "[" not in other["name"] else other["name"] + "x"
        if "[" in other["name"]:
            return None
        return "duplicate machine"
    if choice == 1:
        switches.append(switches[0] if "[" not in switches[0] else "s0")
        return "duplicate switch"
    if choice == 2 and single:
        single["name"] = "s0"
        return "machine named like a switch"
    if choice == 3:
        rng.choice(machines)["switch"] = "nosuch"
        return "unknown switch"
    if choice == 4 and links:
        link = rng.choice(links)
        data["links"].append(list(link["ends"] if isinstance(link, dict) else link))
        return "duplicate link"
    if choice == 5 and links:
        data["links"].pop(rng.randrange(len(links)))
        return "disconnected switch"
    if choice == 6:
        data.setdefault("links", []).append(["s0", "s0"])
        return "self-link"
    if choice == 7 and single and len(machines) > 1:
        other = machines[-1] if machines[-1] is not single else machines[0]
        if "[" in other["name"]:
            return None
        data.setdefault("links", []).append([single["name"], other["name"]])
        return "machine-to-machine link"
    if choice == 8 and single:
        target = "s1" if single["switch"] == "s0" and "s1" in str(switches) else "s0"
        if target == single["switch"]:
            return None
        data.setdefault("links", []).append([single["name"], target])
        return "machine on two switches"
    if choice == 9 and single:
        single["rank"] = rng.choice([-1, 10**6, 10**30, "one", 1.5, True, None, [0]])
        return "bad rank"
    if choice == 10:
        where = rng.choice(
            [data, rng.choice(machines)]
            + ([links[0]] if links and isinstance(links[0], dict) else [])
        )
        where["bandwidth"] = rng.choice(
            [
                "100",
                "-1Gbit",
                "0Mbit",
                "nan Gbit",
                "1e999Gbit",
                "fast",
                100,
                True,
                [],
                "100M",
                "100mbps",
            ]
        )
        return "bad bandwidth"
    if choice == 11:
        rng.choice([data, rng.choice(machines)])[rng.choice(["bandwith", "swich", "x", "Name"])] = 1
        return "unknown key"
    if choice == 12:
        key = rng.choice(["switches", "machines"])
        del data[key]
        return "missing key"
    if choice == 13:
        key, value = rng.choice(
            [("switches", "s0"), ("switches", {"a": 1}), ("switches", []), ("machines", {"n": 1}),
             ("machines", "n0"), ("links", 5), ("links", "s0-s1"), ("name", ["t"]), ("name", ""),
             ("name", "bad name"), ("switches", [None]), ("switches", [1, 2])]
        )  # fmt: skip
        data[key] = value
        return "wrong type"
    if choice == 14:
        machines[rng.randrange(len(machines))] = rng.choice([["n", "s0"], "n0", 7, None])
        return "machine entry not a mapping"
    if choice == 15:
        data["ranks_per_machine"] = rng.choice([0, 1025, "2", True, 1.5, 10**30, -1])
        return "bad ranks_per_machine"
    if choice == 16:
        data["machines"] = [{"name": "only", "switch": "s0"}]
        return "too few machines"
    if choice == 17:
        rng.choice(machines)["name"] = rng.choice(
            ["n[3-1]", "n[0-2", "n[[0-1]]", "n[]", "n[a-b]", "n[0-" + "9" * 30 + "]", "n]0["]
        )
        return "bad range"
    if choice == 18:
        entry = rng.choice(machines)
        entry["host"] = "h[0-99]" if "[" in entry["name"] else "h[0-1]"
        return "host count mismatch"
    if choice == 19:
        singles = [e for e in machines if "[" not in e["name"]]
        if len(singles) < 2:
            return None
        singles[0]["host"] = singles[1]["host"] = "samehost"
        return "duplicate host"
    if choice == 20:
        machines.append(
            {"name": "u[0-2]", "switch": "s[0-1]" if "s1" in str(switches) else "s[0-1]"}
        )
        return "uneven switch range"
    if choice == 21 and single:
        single["name"] = rng.choice(["n 1", "n/1", "ünï", "n" * 5000 + " x", "n\t1", "-", "n,1"])
        if single["name"] == "-":
            return None
        return "bad name"
    if choice == 22:
        machines.append(
            {
                "name": rng.choice(["big[0-99999]", "b[0-9999999999]", "c[0-99][0-99]"]),
                "switch": "s0",
            }
        )
        return "too many machines"
    if choice == 23:
        machines.append(
            {"name": "x", "switch": "s0", "rank": 0, "host": "h", "extra": {"deep": [1, [2]]}}
        )
        return "unknown key in a machine"
    if choice == 24 and links:
        first = links[0]
        data["links"][0] = {
            "ends": first if isinstance(first, list) else first["ends"],
            "bw": "1Gbit",
        }
        return "unknown key in a link"
    if choice == 25 and links:
        data["links"][0] = rng.choice([["s0"], ["s0", "s1", "s2"], "s0", {"ends": "s0"}, [1, 2]])
        return "bad link"
    return None


def text_case(rng: random.Random) -> tuple[bytes, str]:
    """A file that is wrong as YAML or as text, whatever the topology."""
    base = _dump(valid_topology(rng)[0], rng)
    kind = rng.randrange(14)
    if kind == 0:
        depth = rng.choice([65, 600, 5000, 100_000])
        return f"switches: {'[' * depth}{']' * depth}\nmachines: []\n".encode(), "deep nesting"
    if kind == 1:
        items = ["&a0 [x,x,x,x,x,x,x,x,x,x]"]
        items += [f"&a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
        where = rng.choice(["rank", "host", "switch", "name"])
        text = (
            f"switches: [s0]\nmachines: [{{name: a, switch: s0, {where}: [{', '.join(items)}]}}]\n"
        )
        return text.encode(), "alias bomb"
    if kind == 2:
        line = base.splitlines()[0]
        return (line + "\n" + base).encode(), "duplicate key"
    if kind == 3:
        cut = rng.randrange(1, max(2, len(base)))
        return (
            base[:cut] + rng.choice(["[", "{", "'", '"', ": :", "\t- x"]) + "\n"
        ).encode(), "syntax error"
    if kind == 4:
        return base.encode() + b"\xff\xfe\x80", "not UTF-8"
    if kind == 5:
        return base.replace(":", ":\x00", 1).encode(), "NUL byte"
    if kind == 6:
        return rng.choice([b"", b"# nothing\n", b"---\n", b"\n\n"]), "empty"
    if kind == 7:
        return (base + "---\n" + base).encode(), "two documents"
    if kind == 8:
        return (base + "x: !!python/object:os.system [ls]\n").encode(), "python tag"
    if kind == 9:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 2000))), "binary"
    if kind == 10:
        return (base + "ranks_per_machine: " + "9" * 5000 + "\n").encode(), "5000-digit number"
    if kind == 11:
        return ("- " + base.replace("\n", "\n  ")).encode(), "top level not a mapping"
    if kind == 12:
        return base.replace("s0", "!!binary czA=", 1).encode(), "binary tag"
    return (base + "switches: [late]\n").encode(), "key given twice"


def random_edit(text: str, rng: random.Random) -> str:
    """A random textual edit: the outcome is unknown (it may still be a valid file)."""
    for _ in range(rng.randint(1, 3)):
        if not text:
            break
        i = rng.randrange(len(text))
        op = rng.randrange(6)
        if op == 0:
            text = text[:i] + text[i + 1 :]
        elif op == 1:
            text = text[:i] + rng.choice("[]{}:,-&*!|>'\"#%@`\t\n 0123456789") + text[i:]
        elif op == 2:
            lines = text.splitlines(keepends=True)
            j = rng.randrange(len(lines))
            lines.insert(j, lines[j])
            text = "".join(lines)
        elif op == 3:
            lines = text.splitlines(keepends=True)
            del lines[rng.randrange(len(lines))]
            text = "".join(lines)
        elif op == 4:
            text = text[:i]
        else:
            text = text[:i] + str(rng.choice([0, -1, 99999, 2**63, 10**50])) + text[i:]
    return text


def topology_case(rng: random.Random) -> TopoCase:
    roll = rng.random()
    if roll < 0.08:  # valid, in one of the YAML styles
        data, expected = valid_topology(rng)
        text = _dump(data, rng)
        if rng.random() < 0.3:
            text = "# a comment\n" + text.replace("\n", "  # why not\n", 1)
        return TopoCase(text.encode(), False, "valid", expected)
    if roll < 0.6:
        data, _ = valid_topology(rng)
        name = None
        while name is None:
            data, _ = valid_topology(rng)
            name = mutate_data(data, rng)
        return TopoCase(_dump(data, rng).encode(), True, name)
    if roll < 0.8:
        text, name = text_case(rng)
        return TopoCase(text, True, name)
    data, _ = valid_topology(rng)
    return TopoCase(random_edit(_dump(data, rng), rng).encode(), False, "random edit")


def check_schedule_output(outcome: Outcome, path: Path, case: TopoCase, tally: Tally) -> None:
    """An accepted topology: its schedule proved by the verifier, its meaning as generated."""
    try:
        topo = load_topology(path)
        data = json.loads(outcome.stdout)
        rows = [(p, s, d) for p, phase in enumerate(data["phases"]) for s, d in phase]
        arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
        verify_schedule(topo, arr[:, 0], arr[:, 1], arr[:, 2])
        if case.expected is not None:
            assert list(topo.machines) == case.expected["machines"], "rank order"
            assert list(topo.machine_switch) == case.expected["machine_switch"], "switches"
            links = sorted(tuple(sorted((ln.a, ln.b))) for ln in topo.links)
            assert links == case.expected["links"], "links"
        tally.verified_ok()
    except Exception as exc:  # noqa: BLE001 - every failure is a finding
        tally.fail(f"accepted but wrong ({case.kind}): {type(exc).__name__}: {exc}", outcome)


def test_fuzz_topologies(tmp_path):
    rng = random.Random(SEED)
    tally = Tally("topologies")
    commands = [["schedule", "--format", "json"]] * 6 + [["info"], ["verify"], ["sync"]]
    for i in range(N_TOPOLOGIES):
        case = topology_case(rng)
        path = tmp_path / f"t{i % 7}.yaml"
        path.write_bytes(case.text)
        command = rng.choice(commands) if case.kind != "valid" else commands[0]
        outcome = run_cli([*command, str(path)], tmp_path)
        if tally.check(outcome, case.must_refuse, case.kind):
            if command != commands[0]:  # re-check what was accepted with the verifier
                outcome = run_cli([*commands[0], str(path)], tmp_path)
                if outcome.code != 0:
                    tally.fail(f"accepted by {command[0]}, refused by schedule", outcome)
                    continue
            check_schedule_output(outcome, path, case, tally)
    assert tally.malformed >= min(N_TOPOLOGIES * 0.85, 3000)
    tally.assert_clean()


# --------------------------------------------------------------------------- patterns


def pattern_case(
    rng: random.Random, n: int, folder: Path, i: int
) -> tuple[Path, bool, str, np.ndarray | None]:
    """A pattern file for n machines: (path, must refuse, kind, the matrix when valid)."""
    matrix = np.array(
        [
            [rng.choice([0, 1, 100, 4096, 65536, rng.randrange(2**20)]) for _ in range(n)]
            for _ in range(n)
        ],
        dtype=np.int64,
    )
    matrix[0, 1] = max(1, matrix[0, 1])
    np.fill_diagonal(matrix, 0)
    ext = rng.choice([".csv", ".yaml", ".npy"])
    path = folder / f"p{i % 5}{ext}"
    roll = rng.random()
    rows = matrix.tolist()
    bad: object = None
    kind = "valid"
    if roll < 0.15:
        pass
    elif roll < 0.75:
        r, c = rng.randrange(n), rng.randrange(n)
        bad, kind = rng.choice(
            [(-1, "negative"), (1.5, "fraction"), (float("nan"), "nan"), (float("inf"), "inf"),
             ("x", "text"), (2**63, "2^63"), (2**64 + 7, "2^64"), ("9" * 5000 if ext == ".csv" else 2**63, "huge"),
             (True if ext == ".yaml" else -5, "boolean"), (2**48 + 1, "over 2^48")]
        )  # fmt: skip
        if ext == ".npy" and isinstance(bad, str | bool):
            bad, kind = -3, "negative"
        if isinstance(bad, float) and ext != ".npy" and rng.random() < 0.5:
            bad = str(bad)
        rows[r][c] = bad
        if rng.random() < 0.3:
            shape_kind = rng.choice(["row short", "extra row", "extra column", "empty"])
            kind = shape_kind
            if shape_kind == "row short":
                rows[0] = rows[0][:-1]
            elif shape_kind == "extra row":
                rows.append(rows[0])
            elif shape_kind == "extra column":
                rows = [row + [0] for row in rows]
            else:
                rows = []
    else:
        kind = "file"
    if ext == ".npy":
        if kind == "file":
            choice = rng.randrange(6)
            if choice == 0:
                path.write_bytes(b"")
            elif choice == 1:
                np.save(path, matrix[:, :, None])
            elif choice == 2:
                np.save(path, matrix.astype(np.complex64))
            elif choice == 3:
                np.save(path, np.array([["a"] * n] * n))
            elif choice == 4:
                np.save(path, matrix)
                path.write_bytes(path.read_bytes()[: rng.randrange(10, 128 + 8 * n * n)])
            else:
                path.write_bytes(
                    b"\x93NUMPY\x01\x00" + bytes(rng.randrange(256) for _ in range(200))
                )
            return path, True, "bad .npy", None
        try:
            arr = np.array(rows, dtype=np.float64 if kind in ("fraction", "nan", "inf") else None)
            if arr.dtype == object:
                arr = np.array(rows, dtype=np.float64)
        except (ValueError, OverflowError, TypeError):
            arr = np.array([[0]])
        np.save(path, arr)
        return path, kind != "valid", kind, matrix if kind == "valid" else None
    if kind == "file":
        choice = rng.randrange(7)
        if choice == 0:
            text = ""
        elif choice == 1:
            text = "1" * 200_000 + ",0\n"
        elif choice == 2:
            text = "0,0\n" * 100_000
        elif choice == 3:
            text = "[" * 1000 + "]" * 1000
        elif choice == 4:
            text = "{a: 1}\n"
        elif choice == 5:
            text = "\ufeff" + "\n".join(",".join(map(str, row)) for row in rows)
        else:
            text = random_edit("\n".join(",".join(map(str, row)) for row in rows), rng)
            path.write_text(text)
            return path, False, "random edit", None
        path.write_text(text)
        return path, True, "bad file", None
    if ext == ".csv":
        text = "\n".join(",".join(str(v) for v in row) for row in rows) + "\n"
    else:
        text = yaml.safe_dump(rows, default_flow_style=rng.choice([True, False, None]))
    path.write_text(text)
    return path, kind != "valid", kind, matrix if kind == "valid" else None


def check_vschedule_output(
    outcome: Outcome,
    topo_path: Path,
    path: Path,
    expected: np.ndarray | None,
    tally: Tally,
    kind: str,
) -> None:
    from aapcgen.alltoallv.pattern import load_pattern

    try:
        topo = load_topology(topo_path)
        pattern = expected if expected is not None else load_pattern(path, topo)
        data = json.loads(outcome.stdout)
        rows = [(p, *piece) for p, phase in enumerate(data["phases"]) for piece in phase]
        arr = np.array(rows, dtype=np.int64).reshape(-1, 5)
        sched = SimpleNamespace(
            phase=arr[:, 0], src=arr[:, 1], dst=arr[:, 2], offset=arr[:, 3], length=arr[:, 4],
            small=np.array(data["small"], dtype=bool), phase_time=np.array(data["phase_seconds"]),
            threshold=data["threshold"], cost=data["cost_seconds"],
        )  # fmt: skip
        verify_vschedule(topo, pattern, sched)
        tally.verified_ok()
    except Exception as exc:  # noqa: BLE001 - every failure is a finding
        tally.fail(f"accepted but wrong ({kind}): {type(exc).__name__}: {exc}", outcome)


def test_fuzz_patterns(tmp_path):
    rng = random.Random(SEED + 1)
    tally = Tally("patterns")
    topologies = [TOPOS / "paper-fig1.yaml", TOPOS / "two-switch-4-4.yaml"]
    for i in range(N_PATTERNS):
        topo_path = rng.choice(topologies)
        n = load_topology(topo_path).n_machines
        path, must_refuse, kind, expected = pattern_case(rng, n, tmp_path, i)
        scheduler = rng.choice(["greedy", "alltoall", "balanced"])
        argv = [
            "vschedule",
            str(topo_path),
            str(path),
            "--format",
            "json",
            "--scheduler",
            scheduler,
        ]
        outcome = run_cli(argv, tmp_path)
        if tally.check(outcome, must_refuse, kind):
            check_vschedule_output(outcome, topo_path, path, expected, tally, kind)
    assert tally.malformed >= N_PATTERNS * 0.7
    tally.assert_clean()


# --------------------------------------------------------------------------- command lines

FIG1 = str(TOPOS / "paper-fig1.yaml")
BAD_NUMBERS = ["0", "-1", "nan", "inf", "-inf", "1e999", "9" * 30, "", "abc", "0x10", "1,5"]
BAD_PATHS = ["/proc/aapc-fuzz", "/dev/full", "missing/dir/x", "/", "/proc/self/status"]


def cli_case(rng: random.Random, tmp: Path) -> tuple[list[str], str]:
    """A command line with one wrong argument (and otherwise plausible ones)."""
    out = str(tmp / "out")
    cases: list[tuple[list[str], str]] = [
        (["schedule", FIG1, "-o", rng.choice(BAD_PATHS)], "schedule -o"),
        (["generate", FIG1, "-o", rng.choice(["/proc/aapc-fuzz", "/dev/full", "/proc/self/status"])], "generate -o"),
        (["export", "simgrid", FIG1, "-o", rng.choice(["/proc/aapc-fuzz", "/dev/full"])], "export -o"),
        (["export", "simgrid", FIG1, "-o", out, "--rate", rng.choice(["100", "fast", "nan", "-1Gbit", "100mbps", "0bit"])], "export --rate"),
        (["build", FIG1, "-o", rng.choice(["missing/dir/lib.so", "/proc/x/lib.so", str(tmp / "lib.dll")])], "build -o"),
        (["generate", FIG1, "-o", out, "--variant", "sender-partial", "--block-size", rng.choice(BAD_NUMBERS)], "--block-size"),
        (["generate", FIG1, "-o", out, "--variant", rng.choice(["bogus", "", "all,all", "sender"])], "--variant"),
        (["bench", FIG1, "-o", out, "--sizes", rng.choice(["0", "3G", "1Q", ",", "1K,,2K", "-1", "9" * 30])], "bench --sizes"),
        (["bench", FIG1, "-o", out, rng.choice(["--repeats", "--max-iters"]), rng.choice(BAD_NUMBERS)], "bench counts"),
        (["bench", FIG1, "-o", out, rng.choice(["--timeout", "--target-seconds"]), rng.choice(BAD_NUMBERS[:8])], "bench seconds"),
        (["bench", FIG1, "-o", out, "--backend", "emulate", "--prefix", rng.choice(["BAD", "toolongprefix", "1abc", "", "a-b"])], "bench --prefix"),
        (["bench", FIG1, "-o", out, "--backend", "emulate", "--queue", rng.choice(BAD_NUMBERS)], "bench --queue"),
        (["bench", FIG1, "-o", rng.choice(["/proc/aapc-fuzz", "/dev/full"]), "--sizes", "1K"], "bench -o"),
        (["bench", FIG1, "-o", out, "--backend", rng.choice(["cloud", "", "LOCAL"])], "bench --backend"),
        (["bench", FIG1, "-o", out, "--rate", rng.choice(["100", "fast", "nan"])], "bench --rate"),
        (["tune", FIG1, "--dry-run", "-o", out, "--budget", rng.choice(["0", "-1", "nan", "inf", "x"])], "tune --budget"),
        (["tune", FIG1, "--dry-run", "-o", out, "--validate-repeats", rng.choice(BAD_NUMBERS[1:])], "tune --validate-repeats"),
        (["tune", FIG1, "-o", rng.choice(["/proc/aapc-fuzz", "/dev/full"]), "--sizes", "1K"], "tune -o"),
        (["bench-alltoallv", FIG1, "builtin:table3", "-o", out, rng.choice(["--scale", "--warmup", "--settle"]), rng.choice(BAD_NUMBERS[1:])], "bench-alltoallv"),
        (["bench-mcast", FIG1, rng.choice(["--frag", "--target-seconds"]), rng.choice(BAD_NUMBERS)], "bench-mcast"),
        (["vschedule", FIG1, "builtin:table3", rng.choice(["--threshold", "--chunk"]), rng.choice(BAD_NUMBERS[1:])], "vschedule"),
        (["vschedule", FIG1, rng.choice(["nosuch.csv", "x.txt", "builtin:table4", str(tmp)])], "vschedule pattern"),
        (["emulate", "up", FIG1, "--prefix", "afz", rng.choice(["--queue", "--rate"]), rng.choice(["-5", "10", "fast", "nan"])], "emulate up"),
        (["info", FIG1, "--hosts", rng.choice(["n[0-99999999]", "", "[", "x", "n[0-1", "n0"])], "--hosts"),
        (["info", FIG1, "--hostfile", rng.choice(["/nonexistent", "/dev/null", str(tmp)])], "--hostfile"),
        (["verify", FIG1, "--schedule", rng.choice(["/nonexistent.json", "/dev/null", FIG1, str(tmp)])], "--schedule"),
        ([rng.choice(["info", "schedule", "bench", "tune"]), FIG1, rng.choice(["--nonsense", "-q", "--format=xml"])], "unknown option"),
        ([rng.choice(["frobnicate", "", "-x", "INFO"])], "unknown command"),
        (["generate", FIG1], "missing -o"),
        ([rng.choice(["info", "verify", "sync"]), rng.choice(["/nonexistent.yaml", "/proc", "/dev/null", str(tmp)])], "bad topology path"),
        ([rng.choice(["info", "verify", "schedule"]), rng.choice(["/dev/zero", "/dev/urandom", "/dev/full", "/proc/self/mem"])], "device as topology"),
        (["verify", FIG1, "--schedule", rng.choice(["/dev/zero", "/dev/urandom"])], "device as schedule"),
        (["info", FIG1, "--hostfile", rng.choice(["/dev/zero", "/dev/urandom"])], "device as host file"),
    ]  # fmt: skip
    return rng.choice(cases)


def test_fuzz_command_lines(tmp_path):
    rng = random.Random(SEED + 2)
    tally = Tally("cli")
    try:
        for _ in range(N_CLI):
            argv, kind = cli_case(rng, tmp_path)
            tally.check(run_cli(argv, tmp_path), True, kind)
    finally:
        _no_emulation_left("afz")
    assert tally.cases == N_CLI
    tally.assert_clean()


def _no_emulation_left(prefix: str) -> None:
    """A wrongly accepted `emulate up` would leave namespaces: remove them (as root)."""
    if os.geteuid() != 0:
        return
    from aapcgen.platforms import emulate

    if emulate.emulate_status(prefix):
        emulate.emulate_down(prefix)
        pytest.fail(f"emulate up with a bad option brought up emulation '{prefix}'")


# --------------------------------------------------------------------------- hypothesis

FUZZ = settings(
    max_examples=N_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30),
    st.sampled_from(["s0", "s1", "n0", "n[0-3]", "100Mbit", "s[0-1]", "[", "1e999Gbit"]),
)  # fmt: skip
KEYS = st.sampled_from(
    ["name", "bandwidth", "switches", "machines", "links", "ranks_per_machine", "switch", "host",
     "rank", "ends", "x"]
)  # fmt: skip
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(KEYS, inner, max_size=6),
    max_leaves=40,
)


@FUZZ
@given(document=st.dictionaries(KEYS, DOCUMENTS, max_size=6))
def test_hypothesis_topology_documents(tmp_path, document):
    """Any YAML document built from topology words: refused in one line or correctly read."""
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(document))
    tally = Tally("hypothesis-topologies")
    outcome = run_cli(["schedule", "--format", "json", str(path)], tmp_path)
    if tally.check(outcome, False, "hypothesis"):
        check_schedule_output(outcome, path, TopoCase(b"", False, "hypothesis"), tally)
    assert not tally.failures, tally.failures


@FUZZ
@given(
    array=hnp.arrays(
        dtype=st.sampled_from(["int8", "uint8", "int64", "uint64", "float32", "float64", "bool"]),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6),
    )
)
def test_hypothesis_npy_patterns(tmp_path, array):
    """Any small array as a .npy pattern for the 5 machines of paper-fig1."""
    path = tmp_path / "h.npy"
    np.save(path, array)
    tally = Tally("hypothesis-patterns")
    outcome = run_cli(["vschedule", FIG1, str(path), "--format", "json"], tmp_path)
    if tally.check(outcome, False, "hypothesis"):
        check_vschedule_output(outcome, Path(FIG1), path, None, tally, "hypothesis")
    assert not tally.failures, tally.failures


OPTION_WORDS = st.sampled_from(
    ["--sizes", "--repeats", "--block-size", "--variant", "--rate", "--format", "--hosts",
     "--threshold", "--scheduler", "-o", "--schedule", "--format=json"]
)  # fmt: skip
VALUE_WORDS = st.one_of(
    st.sampled_from(BAD_NUMBERS + ["1K", "json", "sender-all", "100Mbit", "n[0-1]", "/proc/x"]),
    st.text(alphabet=string.printable, max_size=12),
)


@FUZZ
@given(
    command=st.sampled_from(["info", "schedule", "verify", "sync", "vschedule"]),
    words=st.lists(st.one_of(OPTION_WORDS, VALUE_WORDS), max_size=6),
)
def test_hypothesis_command_lines(tmp_path, command, words):
    """Random words after an informational command: never a traceback, a hang or more memory
    than the limit, and a refusal is one `aapcgen:` line (Tally.check). What an accepted command
    prints is not checked here: the schedules these commands compute for FIG1 are the ones
    tests/test_cli.py verifies."""
    argv = [command, FIG1] + (["builtin:table3"] if command == "vschedule" else []) + words
    tally = Tally("hypothesis-cli")
    outcome = run_cli(argv, tmp_path)
    tally.check(outcome, False, "hypothesis")
    assert not tally.failures, tally.failures
