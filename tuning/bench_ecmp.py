"""Leaf-spine with hash-based ECMP (simulated, SimGrid SMPI): what a schedule that is
contention-free in the capacity model loses when the spines are chosen by a hash.

    flock -s /tmp/aapc-cpu.lock .venv/bin/python tuning/bench_ecmp.py \\
        --leaves 4 --machines 8 --spines 2 --uplink 2Gbit --bytes 65536

The fabric: L leaf switches of M machines (1 Gbit/s), S spine switches, one link of --uplink
from every leaf to every spine. aapcgen describes it as a tree with one virtual spine: each
leaf's S uplinks become one link of their summed speed (docs/scheduling.md "Capacities"). Two
SimGrid platforms are run with the same programs:

* "virtual spine": that tree (the model the schedule assumes: the spines share every leaf's
  traffic perfectly);
* "ECMP": the real fabric, every ordered pair of machines on different leaves routed through
  the spine a hash of (source, destination) picks, as per-flow ECMP does (one TCP connection
  per pair, one path per connection).

Prints a Markdown table: simulated seconds and the ratio to the bound (the tree's) for the
generated variants and SimGrid's algorithms on both platforms, with wall times.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import zlib
from pathlib import Path
from xml.sax.saxutils import quoteattr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tuning"))

from bench_simulated import build, run_one  # noqa: E402

from aapcgen.core.model import Link, Topology  # noqa: E402
from aapcgen.core.units import parse_bandwidth  # noqa: E402
from aapcgen.measure.bench import peak_of  # noqa: E402
from aapcgen.platforms import simgrid  # noqa: E402

GBIT = 125e6


def leaf_spine_tree(leaves: int, machines: int, spines: int, uplink: float) -> Topology:
    """The fabric as aapcgen sees it: one virtual spine, leaf uplinks of spines x uplink."""
    switches = ("spine", *(f"leaf{i}" for i in range(leaves)))
    names = tuple(f"n{i}-{j}" for i in range(leaves) for j in range(machines))
    return Topology(
        name=f"leafspine-{leaves}x{machines}-{spines}s",
        source="<bench_ecmp>",
        bandwidth=GBIT,
        switches=switches,
        machines=names,
        machine_switch=tuple(f"leaf{i}" for i in range(leaves) for _ in range(machines)),
        machine_bandwidth=(GBIT,) * len(names),
        hosts=(None,) * len(names),
        links=tuple(Link("spine", f"leaf{i}", spines * uplink) for i in range(leaves)),
    )


def spine_of(src: int, dst: int, spines: int) -> int:
    """Per-flow ECMP: a hash of the flow's ends picks the spine."""
    return zlib.crc32(f"{src}->{dst}".encode()) % spines


def ecmp_platform_xml(
    topo: Topology, leaves: int, machines: int, spines: int, uplink: float
) -> str:
    """Every host pair routed explicitly (routing="Full"): machine link, the hashed spine's
    uplink of the source leaf and downlink of the destination leaf, machine link."""
    lat = simgrid.LATENCY
    lines = [
        "<?xml version='1.0'?>",
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
        '<platform version="4.1">',
        f'  <zone id="{topo.name}-ecmp" routing="Full">',
    ]
    lines += [f'    <host id={quoteattr(m)} speed="{simgrid.HOST_SPEED}"/>' for m in topo.machines]
    for m in topo.machines:
        lines.append(
            f'    <link id="h:{m}" bandwidth="{int(GBIT)}Bps" latency="{lat}" sharing_policy="SPLITDUPLEX"/>'
        )
    for i in range(leaves):
        for s in range(spines):
            lines.append(
                f'    <link id="u:{i}:{s}" bandwidth="{int(uplink)}Bps" latency="{lat}" '
                'sharing_policy="SPLITDUPLEX"/>'
            )
    n = len(topo.machines)
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            la, lb = a // machines, b // machines
            hops = [f'<link_ctn id="h:{topo.machines[a]}" direction="UP"/>']
            if la != lb:
                s = spine_of(a, b, spines)
                hops += [
                    f'<link_ctn id="u:{la}:{s}" direction="UP"/>',
                    f'<link_ctn id="u:{lb}:{s}" direction="DOWN"/>',
                ]
            hops.append(f'<link_ctn id="h:{topo.machines[b]}" direction="DOWN"/>')
            lines.append(
                f"    <route src={quoteattr(topo.machines[a])} dst={quoteattr(topo.machines[b])} "
                f'symmetrical="NO">{"".join(hops)}</route>'
            )
    lines += ["  </zone>", "</platform>", ""]
    return "\n".join(lines)


def hash_balance(leaves: int, machines: int, spines: int) -> float:
    """Largest flows from one leaf on one spine uplink over the even share (all pairs)."""
    worst = 0.0
    for la in range(leaves):
        count = [0] * spines
        for a in range(la * machines, (la + 1) * machines):
            for b in range(leaves * machines):
                if b // machines != la:
                    count[spine_of(a, b, spines)] += 1
        worst = max(worst, max(count) / (sum(count) / spines))
    return worst


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--leaves", type=int, default=4)
    p.add_argument("--machines", type=int, default=8)
    p.add_argument("--spines", type=int, default=2)
    p.add_argument("--uplink", default="2Gbit", help="speed of one leaf-spine link")
    p.add_argument("--bytes", type=int, default=65536)
    p.add_argument("--variants", default="no-sync,receiver-all,barrier-all")
    p.add_argument("--algorithms", default="pair,mvapich2,basic_linear")
    p.add_argument("--timeout", type=float, default=900.0)
    a = p.parse_args()
    uplink = parse_bandwidth(a.uplink)
    topo = leaf_spine_tree(a.leaves, a.machines, a.spines, uplink)
    n = topo.n_machines
    bound = n * (n - 1) * a.bytes / peak_of(topo, None)
    print(
        f"{topo.name}: {a.leaves} leaves x {a.machines} machines at 1 Gbit/s, {a.spines} spines, "
        f"{a.uplink} per leaf-spine link; {a.bytes} B per pair, bound {bound:.4f} s; the hash puts "
        f"up to {hash_balance(a.leaves, a.machines, a.spines):.2f}x a leaf's even share of flows "
        "on one spine uplink"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="aapc-ecmp-") as tmp:
        work = Path(tmp)
        tree_xml, ecmp_xml, hosts = work / "tree.xml", work / "ecmp.xml", work / "hosts"
        tree_xml.write_text(simgrid.platform_xml(topo))
        ecmp_xml.write_text(ecmp_platform_xml(topo, a.leaves, a.machines, a.spines, uplink))
        hosts.write_text(simgrid.hostfile(topo))
        exes = {v: build(topo, v, work) for v in a.variants.split(",") if v}
        args = ["--bytes", str(a.bytes), "--repeats", "1", "--iters", "1", "--warmup", "0"]

        def runner(xml: Path, exe: Path, only: str, alg: str | None = None):  # noqa: ANN202
            return lambda: simgrid.run_simulated(
                xml, hosts, n, exe, [*args, "--only", only], alg, timeout=a.timeout, check=False
            )

        for label, xml in (("virtual spine", tree_xml), ("ECMP", ecmp_xml)):
            for v, exe in exes.items():
                rows.append(run_one(f"{label}: generated {v}", runner(xml, exe, v), a.timeout))
            for alg in (x for x in a.algorithms.split(",") if x):
                exe = next(iter(exes.values()))
                rows.append(
                    run_one(f"{label}: SimGrid {alg}", runner(xml, exe, "native", alg), a.timeout)
                )
    print("| platform: candidate | simulated s | x bound | wall s | note |")
    print("|---|---|---|---|---|")
    for r in rows:
        sim = "–" if r.simulated_s is None else f"{r.simulated_s:.4f}"
        ratio = "–" if r.simulated_s is None else f"{r.simulated_s / bound:.2f}"
        print(f"| {r.candidate} | {sim} | {ratio} | {r.wall_s:.0f} | {r.note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
