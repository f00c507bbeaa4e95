"""SimGrid SMPI: export a switch tree as a SimGrid platform and run MPI programs on it.

``aapcgen export simgrid TOPO.yaml -o DIR`` writes ``DIR/<name>.xml`` (platform) and
``DIR/<name>.hosts`` (hostfile, one machine per line in rank order). The platform has one
host per machine, one router per switch and one full-duplex link per cable (machine links
and switch links), with ``sharing_policy="SPLITDUPLEX"``: every route between neighbours is
written once per direction, ``UP`` from the link's first end to its second and ``DOWN`` back,
so the two directions of a cable are independent resources, as on switched Ethernet.
``routing="Floyd"`` composes those neighbour routes into the tree paths (see
docs/simulation.md for why Floyd and what it costs at 1024 hosts).

The run helpers wrap Debian's ``smpicc``/``smpirun`` (package ``libsimgrid-dev``, 3.32).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.model import Topology
from aapcgen.core.resources import resource_dir

LATENCY = "25us"  # per link; a store-and-forward Ethernet switch hop is of this order
HOST_SPEED = "1Gf"  # irrelevant with simulate-computation:no, set so SMPI does not warn
ROUTING = "Floyd"

# Always passed to smpirun: network-only, deterministic timing and the simulated time on stderr.
BASE_CFG: tuple[str, ...] = (
    "smpi/simulate-computation:no",
    f"smpi/host-speed:{HOST_SPEED}",
    "smpi/display-timing:yes",
)
# Makes 1024-rank runs feasible: mmap privatization gives each rank its own copy of the
# program's (small) data segment only; the default dlopen privatization copies the whole
# executable once per rank (35 MB x 1024 for the two-level-1024 timer), and "no"
# breaks the generated runtime (see docs/simulation.md). Raw contexts, 256 KiB stacks.
SCALE_CFG: tuple[str, ...] = (
    "smpi/privatization:mmap",
    "contexts/factory:raw",
    "contexts/stack-size:256",
)

_SIM_TIME = re.compile(r"Simulated time: ([0-9.eE+-]+) seconds")


def _host_link(machine: str) -> str:
    return f"link:{machine}"


def _switch_link(a: str, b: str) -> str:
    return f"link:{a}:{b}"


def _bandwidth(bytes_per_s: float) -> str:
    value = float(bytes_per_s)
    return f"{int(value)}Bps" if value.is_integer() else f"{value:.9g}Bps"


def _link_xml(link_id: str, bandwidth: float) -> str:
    return (
        f"    <link id={quoteattr(link_id)} bandwidth={quoteattr(_bandwidth(bandwidth))} "
        f'latency="{LATENCY}" sharing_policy="SPLITDUPLEX"/>'
    )


def _route_xml(src: str, dst: str, link_id: str, direction: str) -> str:
    return (
        f'    <route src={quoteattr(src)} dst={quoteattr(dst)} symmetrical="NO">'
        f'<link_ctn id={quoteattr(link_id)} direction="{direction}"/></route>'
    )


def _cables(topo: Topology, rate: float | None) -> list[tuple[str, str, str, float]]:
    """(link id, first end, second end, bandwidth): machine links, then switch links."""
    cables = [
        (_host_link(m), m, s, rate or bw)
        for m, s, bw in zip(topo.machines, topo.machine_switch, topo.machine_bandwidth)
    ]
    cables += [(_switch_link(lk.a, lk.b), lk.a, lk.b, rate or lk.bandwidth) for lk in topo.links]
    return cables


def platform_xml(topo: Topology, rate: float | None = None) -> str:
    """The SimGrid 3.32 platform (DTD version 4.1) of ``topo``.

    ``rate`` (bytes/s) replaces every link's bandwidth when given.
    """
    if rate is not None and rate <= 0:
        raise InputError(f"link rate must be positive, got {rate}")
    cables = _cables(topo, rate)
    lines = [
        "<?xml version='1.0'?>",
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
        '<platform version="4.1">',
        f"  <!-- aapcgen export simgrid: {topo.name}, {topo.n_machines} machines, "
        f"{len(topo.switches)} switches; full-duplex links (SPLITDUPLEX), latency {LATENCY} -->",
        f'  <zone id={quoteattr(topo.name)} routing="{ROUTING}">',
    ]
    lines += [f'    <host id={quoteattr(m)} speed="{HOST_SPEED}"/>' for m in topo.machines]
    lines += [f"    <router id={quoteattr(s)}/>" for s in topo.switches]
    lines += [_link_xml(link_id, bw) for link_id, _, _, bw in cables]
    for link_id, a, b, _ in cables:
        lines.append(_route_xml(a, b, link_id, "UP"))
        lines.append(_route_xml(b, a, link_id, "DOWN"))
    lines += ["  </zone>", "</platform>", ""]
    return "\n".join(lines)


def hostfile(topo: Topology) -> str:
    """One host name per line, in rank order: ``ranks_per_machine`` lines per machine, in blocks
    (its ranks talk to each other over SimGrid's loopback of the host: network/loopback-bw and
    network/loopback-lat, a stand-in for shared memory)."""
    r = topo.ranks_per_machine
    return "".join(f"{m}\n" * r for m in topo.machines)


def _file_stem(topo: Topology) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", topo.name) or "platform"


def export_simgrid(
    topo: Topology, out_dir: str | os.PathLike[str], rate: float | None = None
) -> tuple[Path, Path]:
    """Write ``<name>.xml`` and ``<name>.hosts`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    xml = platform_xml(topo, rate)
    try:
        out.mkdir(parents=True, exist_ok=True)
        platform = out / f"{_file_stem(topo)}.xml"
        hosts = out / f"{_file_stem(topo)}.hosts"
        platform.write_text(xml, encoding="utf-8")
        hosts.write_text(hostfile(topo), encoding="utf-8")
    except OSError as exc:
        raise AapcError(f"{out}: cannot write: {exc.strerror}") from None
    return platform, hosts


def bottleneck_bound(topo: Topology, msize: float) -> float:
    """Faraj/Yuan lower bound of an all-to-all of ``msize`` bytes per pair: the largest
    |Mu| x |Mv| x msize / B over all links, machine links included (seconds)."""
    adjacency: dict[str, list[tuple[str, float]]] = {s: [] for s in topo.switches}
    for lk in topo.links:
        adjacency[lk.a].append((lk.b, lk.bandwidth))
        adjacency[lk.b].append((lk.a, lk.bandwidth))
    count = {s: 0 for s in topo.switches}
    for s in topo.machine_switch:
        count[s] += 1
    n = topo.n_machines
    worst = max((n - 1) * msize / bw for bw in topo.machine_bandwidth)
    root = topo.switches[0]
    order, parent, stack = [], {root: ("", 0.0)}, [root]
    while stack:  # iterative DFS: parents before children in `order`
        u = stack.pop()
        order.append(u)
        for v, bw in adjacency[u]:
            if v not in parent:
                parent[v] = (u, bw)
                stack.append(v)
    below = dict(count)
    for u in reversed(order[1:]):
        up, bw = parent[u]
        below[up] += below[u]
        worst = max(worst, below[u] * (n - below[u]) * msize / bw)
    return worst


# ---- compiling and running ----------------------------------------------------------------


def find_tool(name: str) -> str:
    """Path of ``smpicc``/``smpirun``; a one-line error naming the package when missing."""
    path = shutil.which(name)
    if path is None:
        raise AapcError(
            f"{name} not found: install SimGrid (Debian: apt-get install libsimgrid-dev, "
            "or `make simgrid`)"
        )
    return path


def smpicc_compile(
    sources: Iterable[str | os.PathLike[str]],
    include_dirs: Iterable[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    cflags: Sequence[str] = ("-std=gnu11", "-O2"),
    timeout: float = 600,
) -> Path:
    """Compile C ``sources`` with smpicc into the executable ``output``; return its path."""
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        find_tool("smpicc"),
        *cflags,
        *(f"-I{d}" for d in include_dirs),
        *(str(s) for s in sources),
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["(no output)"])[0]
        raise AapcError(f"smpicc failed (exit {proc.returncode}): {first}")
    return out


def check_mappings(ranks: int, largest_block: int, who: str = "simulate") -> None:
    """InputError where the timer's two shared-malloc buffers of ``ranks`` blocks per rank
    (mapped in 1 MiB pieces, each rank its own mappings) need more memory mappings than
    vm.max_map_count allows: SimGrid would abort mid-run without saying why."""
    maps = 2 * ranks * -(-ranks * largest_block // 2**20)
    try:
        limit = int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return  # not Linux, or not readable: nothing to check against
    if maps > limit - 4096:
        raise InputError(
            f"{who}: {ranks} ranks x {largest_block} B blocks need about {maps} memory "
            f"mappings, vm.max_map_count is {limit}: run `sysctl -w vm.max_map_count="
            f"{4 * maps}` (root)"
        )


def timer_sources(gen_dir: str | os.PathLike[str]) -> list[Path]:
    """The timing program plus every C file of a generated directory."""
    return [
        resource_dir("runtime_c") / "bench" / "alltoall_timer.c",
        *sorted(Path(gen_dir).glob("*.c")),
    ]


def compile_timer(gen_dir: str | os.PathLike[str], output: str | os.PathLike[str]) -> Path:
    """smpicc-compile ``runtime_c/bench/alltoall_timer.c`` with a generated directory."""
    return smpicc_compile(timer_sources(gen_dir), [gen_dir], output)


def smpirun_command(
    platform: str | os.PathLike[str],
    hostfile: str | os.PathLike[str],
    n: int,
    exe: str | os.PathLike[str],
    args: Sequence[str] = (),
    alltoall_algorithm: str | None = None,
    extra_cfg: Sequence[str] = (),
) -> list[str]:
    """The smpirun command line. ``extra_cfg`` items are ``name:value`` (no ``--cfg=``) and
    come last, so they override the defaults."""
    cfg = [*BASE_CFG, *SCALE_CFG]
    if alltoall_algorithm is not None:
        cfg.append(f"smpi/alltoall:{alltoall_algorithm}")
    cfg += list(extra_cfg)
    return [
        find_tool("smpirun"),
        "-platform",
        str(platform),
        "-hostfile",
        str(hostfile),
        "-np",
        str(n),
        *(f"--cfg={c}" for c in cfg),
        "--log=root.thres:warning",
        "--log=smpi_utils.thres:info",  # keeps "Simulated time: ..." on stderr
        str(exe),
        *args,
    ]


@dataclass(frozen=True)
class SimRun:
    """One finished smpirun: its output, simulated time (s) and wall-clock time (s)."""

    command: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    simulated_seconds: float | None
    wall_seconds: float


def simulated_time(stderr: str) -> float | None:
    """The "Simulated time: X seconds" of smpi/display-timing, None when absent."""
    m = _SIM_TIME.search(stderr)
    return float(m.group(1)) if m else None


def run_simulated(
    platform: str | os.PathLike[str],
    hostfile: str | os.PathLike[str],
    n: int,
    exe: str | os.PathLike[str],
    args: Sequence[str] = (),
    alltoall_algorithm: str | None = None,
    extra_cfg: Sequence[str] = (),
    timeout: float = 600,
    check: bool = True,
) -> SimRun:
    """Run ``exe`` on ``n`` simulated ranks; kill the whole run after ``timeout`` seconds.

    Raises AapcError on timeout, and on a non-zero exit when ``check``.
    """
    cmd = smpirun_command(platform, hostfile, n, exe, args, alltoall_algorithm, extra_cfg)
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AapcError(
            f"smpirun of {Path(exe).name} on {n} ranks timed out after {timeout:g} s"
        ) from None
    wall = time.perf_counter() - start
    if check and proc.returncode != 0:
        lines = [ln for ln in err.strip().splitlines() if ln.strip()] or ["(no output)"]
        raise AapcError(f"smpirun of {Path(exe).name} exited {proc.returncode}: {lines[-1]}")
    return SimRun(tuple(cmd), proc.returncode, out, err, simulated_time(err), wall)


# ---- command line -------------------------------------------------------------------------
