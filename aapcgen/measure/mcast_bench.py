"""`aapcgen bench-mcast`: multicast collectives (runtime_c/mcast) against the MPI library's.

On an emulated switch tree (aapcgen.platforms.emulate, root needed) every operation is timed for every
size with runtime_c/mcast/bench/mcast_timer.c, one MPI job per (operation, implementation,
size) so that the tc byte counters of the switch-switch links can be read around each job:
time per call (average and maximum over the ranks, seed 000 Figure 6 method) and bytes per call
over the inter-switch links (job bytes minus a zero-call job's, divided by the calls).
Operations: bcast, scatter, allgather (multicast vs native) and scatterv (seed 000's one-to-
five pattern: native vs the static, dynamic and compiler-assisted schemes). Prints a table and
the crossovers, writes CSV and JSON.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.model import Topology
from aapcgen.core.resources import resource_dir
from aapcgen.measure import cleanup

OPS: dict[str, tuple[tuple[str, str, str], ...]] = {
    # op -> (label, timer operation, implementation)
    "bcast": (("native", "bcast", "native"), ("mcast", "bcast", "mcast")),
    "scatter": (("native", "scatter", "native"), ("mcast", "scatter", "mcast")),
    "allgather": (("native", "allgather", "native"), ("mcast", "allgather", "mcast")),
    "scatterv": (
        ("native", "scatterv-static", "native"),
        ("static", "scatterv-static", "mcast"),
        ("dynamic", "scatterv-dynamic", "mcast"),
        ("compiler", "scatterv-compiler", "mcast"),
    ),
}
DEFAULT_SIZES = "1,64,1K,16K,64K,256K,1M"
ZERO_CALL_SIZE = 1


@dataclass(frozen=True)
class Row:
    op: str
    impl: str
    size: int
    avg_s: float
    max_s: float
    calls: int
    link_bytes: float  # bytes per call over the switch-switch links, both directions


def parse_ops(text: str) -> tuple[str, ...]:
    ops = tuple(o.strip() for o in text.split(",") if o.strip())
    bad = [o for o in ops if o not in OPS]
    if bad or not ops:
        raise InputError(f"--ops: '{(bad or [text])[0]}' is not one of {', '.join(OPS)}")
    return ops


def link_volume(op: str, size: int, ranks: int) -> int:
    """Bytes the busiest host link carries in one call (for choosing the number of calls)."""
    if op in ("scatter", "allgather"):
        return size * ranks
    if op == "scatterv":
        return size * 5
    return size


def choose_calls(volume: int, rate: float, target_s: float, lo: int = 3, hi: int = 100) -> int:
    """Calls per job so that one job moves about ``target_s`` seconds of data."""
    per_call = max(volume / rate, 2e-3)
    return max(lo, min(hi, int(target_s / per_call)))


def parse_timer_line(line: str) -> tuple[str, str, int, float, float, int]:
    op, impl, size, avg, mx, calls = line.split()
    return op, impl, int(size), float(avg), float(mx), int(calls)


def crossovers(rows: Sequence[Row]) -> dict[str, str]:
    """Per op and multicast implementation: the sizes where it beats native (average time)."""
    out: dict[str, str] = {}
    for op in sorted({r.op for r in rows}):
        native = {r.size: r.avg_s for r in rows if r.op == op and r.impl == "native"}
        for impl in sorted({r.impl for r in rows if r.op == op and r.impl != "native"}):
            mine = {r.size: r.avg_s for r in rows if r.op == op and r.impl == impl}
            sizes = sorted(set(native) & set(mine))
            wins = [s for s in sizes if mine[s] < native[s]]
            if not wins:
                text = "never wins"
            elif len(wins) == len(sizes):
                text = "wins at every size"
            else:
                first_all = next(
                    (s for s in sizes if all(w in wins for w in sizes if w >= s)), None
                )
                text = f"wins at {', '.join(str(w) for w in wins)} B"
                if first_all is not None:
                    text += f" (from {first_all} B up)"
            out[f"{op}/{impl}"] = text
    return out


def format_table(rows: Sequence[Row]) -> list[str]:
    lines = [
        f"{'op':<10} {'impl':<9} {'bytes':>8} {'avg ms':>10} {'max ms':>10} "
        f"{'vs native':>9} {'s-s link B/call':>16}"
    ]
    native = {(r.op, r.size): r.avg_s for r in rows if r.impl == "native"}
    for r in rows:
        ref = native.get((r.op, r.size))
        ratio = f"{ref / r.avg_s:8.2f}x" if ref and r.avg_s > 0 and r.impl != "native" else ""
        lines.append(
            f"{r.op:<10} {r.impl:<9} {r.size:>8} {r.avg_s * 1e3:>10.3f} {r.max_s * 1e3:>10.3f} "
            f"{ratio:>9} {r.link_bytes:>16.0f}"
        )
    return lines


def _bin(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else name


def build_timer(mpicc: str, out: Path) -> Path:
    src = resource_dir("runtime_c") / "mcast"
    sources = [str(p) for p in sorted(src.glob("*.c"))]
    cmd = [
        mpicc,
        "-std=c11",
        "-O2",
        "-Wall",
        "-Wextra",
        "-Werror",
        f"-I{src}",
        str(src / "bench" / "mcast_timer.c"),
        *sources,
    ]
    proc = cleanup.run_tool([*cmd, "-o", str(out)], {**os.environ, "TMPDIR": str(out.parent)})
    if proc.returncode != 0:
        raise AapcError(f"compiling mcast_timer failed: {proc.stderr.strip()[-500:]}")
    return out


def _switch_bytes(counters: dict[str, tuple[int, int, int]], switches: set[str]) -> int:
    total = 0
    for label, (sent, _, _) in counters.items():
        a, _, b = label.partition("->")
        if a in switches and b in switches:
            total += sent
    return total


@dataclass(frozen=True)
class McastBenchConfig:
    """What ``aapcgen bench-mcast`` measures, validated by the CLI."""

    topology: Topology
    ops: tuple[str, ...]
    sizes: tuple[int, ...]
    rate: float  # bytes per second, every link
    frag: int  # multicast payload bytes per datagram
    prefix: str  # emulation name prefix
    target_seconds: float
    verbose: bool = False


def run_benchmark(cfg: McastBenchConfig) -> list[Row]:
    from aapcgen.platforms.emulate import emulated, link_counters, mpiexec_command, require_root

    topo, ops, sizes, rate = cfg.topology, cfg.ops, cfg.sizes, cfg.rate
    require_root()
    switches = set(topo.switches)
    env = {"AAPC_MCAST_FRAG": str(cfg.frag)}
    rows: list[Row] = []
    with cleanup.workdir("aapc-mcast-") as work:  # nothing left behind (measure/cleanup.py)
        tmp = work.path
        exe = build_timer(_bin("mpicc"), Path(tmp) / "mcast_timer")
        with emulated(topo, rate=rate, prefix=cfg.prefix) as em:
            for i in range(len(topo.switches)):
                subprocess.run(
                    ["ip", "-n", em.switch_ns, "link", "set", f"{cfg.prefix}b{i}"]
                    + ["type", "bridge", "mcast_snooping", "0"],
                    check=True,
                )

            def job(timer_op: str, impl: str, size: int, calls: int, warm: int) -> tuple[str, int]:
                before = _switch_bytes(link_counters(em), switches)
                argv = [str(exe), timer_op, impl, str(size), str(calls), str(warm)]
                cmd = mpiexec_command(em, _bin("mpiexec"), argv, env)
                proc = cleanup.run_job(cmd, dict(os.environ), 600, work)
                if proc.timed_out:
                    raise AapcError(f"bench-mcast: {timer_op} {impl} {size} B timed out")
                if proc.returncode != 0:
                    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                    raise AapcError(f"bench-mcast: {timer_op} {impl} {size} B failed: {tail}")
                after = _switch_bytes(link_counters(em), switches)
                return proc.stdout.strip().splitlines()[-1], after - before

            for op in ops:
                for label, timer_op, impl in OPS[op]:
                    _, base = job(timer_op, impl, ZERO_CALL_SIZE, 0, 0)
                    for size in sizes:
                        calls = choose_calls(
                            link_volume(op, size, topo.n_machines), rate, cfg.target_seconds
                        )
                        warm = 2
                        line, moved = job(timer_op, impl, size, calls, warm)
                        _, _, _, avg, mx, total_calls = parse_timer_line(line)
                        per_call = max(0.0, (moved - base) / total_calls)
                        row = Row(op, label, size, avg, mx, calls, per_call)
                        rows.append(row)
                        if cfg.verbose:
                            print(format_table([row])[1], file=sys.stderr, flush=True)
    return rows


def write_outputs(rows: Sequence[Row], meta: dict[str, object], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / "bench-mcast.csv", out / "bench-mcast.json"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(asdict(rows[0]).keys()) if rows else ["op"])
        w.writeheader()
        for r in rows:
            w.writerow(asdict(r))
    doc = {"meta": meta, "rows": [asdict(r) for r in rows], "crossovers": crossovers(rows)}
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    return csv_path, json_path
