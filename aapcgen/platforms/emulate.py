"""Emulate a switch tree on one Linux machine: network namespaces, bridges, veth pairs and tbf.

``aapcgen emulate up TOPO.yaml`` builds (as root, see ``docs/emulation.md``):

* one network namespace per machine (``<prefix>-m<rank>``) whose only link is ``eth0``;
* one namespace ``<prefix>-sw`` holding one Linux bridge per switch (``<prefix>b<i>``);
* a veth pair per machine link (``eth0`` <-> ``<prefix>m<rank>``) and per switch-switch link
  (``<prefix>l<k>a`` <-> ``<prefix>l<k>b``), the switch-side ends attached to their bridges;
* a ``tbf`` qdisc on both ends of every veth (egress each way) at the link's rate, with a small
  queue that plays the switch port buffer.

Machines get addresses in the RFC 2544 benchmarking range 198.18.0.0/15 (rank r ->
198.18.0.0 + r + 1, one /15 subnet), no default route: nothing leaves the namespaces.

Planning (:func:`plan_emulation`) is pure and unit-tested without root; execution
(:func:`emulate_up`, :func:`emulate_down`, :func:`emulate_status`) runs the planned ``ip``/``tc``
commands. :func:`emulated` is a context manager that always tears down, also on SIGINT/SIGTERM.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.model import Topology

DEFAULT_PREFIX = "aapc"
DEFAULT_QUEUE = 100_000  # bytes of tbf queue per link direction: the switch port buffer
MIN_BURST = 32 * 1024  # bytes; "burst 32kb" as measured in docs/emulation.md
ASSUMED_HZ = 1000  # burst >= rate / HZ (classic tbf rule; modern tbf uses hrtimers anyway)
DEFAULT_MTU = 1500  # bytes of IP packet per frame (Ethernet's standard MTU)
ETH_HEADER = 14  # bytes a veth frame adds to the IP packet (what tbf counts)
MTU_FRAME = DEFAULT_MTU + ETH_HEADER  # bytes of a full standard Ethernet frame on a veth
# AAPC_EMULATE_MTU=9000 gives every emulated link jumbo frames (the usual setting of an HPC
# Ethernet fabric; docs/emulation.md). TCP then carries 8948 payload bytes per 9014-byte frame
# (99.3% of the line rate) instead of 1448 per 1514 (95.6%).
MTU_RANGE = (1280, 9216)  # IPv6's minimum .. the largest jumbo frame common switches take
# A host's own NIC queue (Linux txqueuelen 1000 frames, with TCP Small Queues pushing back on the
# socket) is not a switch buffer: the tbf on the machine side of a machine link gets this limit,
# so a machine never drops its own packets; --queue sizes the switch ports.
HOST_QUEUE_FRAMES = 1000
NETWORK = ipaddress.IPv4Network("198.18.0.0/15")  # RFC 2544 benchmarking range
IFNAME_MAX = 15  # Linux IFNAMSIZ - 1
PREFIX_RE = re.compile(r"[a-z][a-z0-9]{0,7}")
PROGRESS_MACHINES = 32  # set-ups at least this big print progress on stderr
ROOT_MESSAGE = (
    "emulate needs root (network namespaces); run as root or use --backend local/simulate"
)
SYSCTL_NO_IPV6 = (
    "net.ipv6.conf.all.disable_ipv6=1",
    "net.ipv6.conf.default.disable_ipv6=1",
)
# A new TCP connection would otherwise start from the RTT, RTT variance and congestion window
# that Linux cached for its destination when an earlier connection closed (`ip tcp_metrics`):
# after a lossy MPICH native job we saw cached entries of 0.28 s RTT and 0.39 s variance, i.e. a
# first retransmission timeout near 1.8 s for the next job. Benchmark jobs run one after
# another, so each must start clean.
SYSCTL_TCP = ("net.ipv4.tcp_no_metrics_save=1",)
# TCP Small Queues: how many bytes one socket may have queued below it (qdisc and device) before
# the kernel holds the rest in the socket. A real host autosizes this to about 1 ms of the
# flow's pacing rate (Linux tcp_small_queue_check: sk_pacing_rate >> 10, at least two packets)
# under a cap of net.ipv4.tcp_limit_output_bytes, and puts fq_codel or fq in front of the NIC.
# An emulated machine's "NIC" is a veth, whose pacing rate knows nothing of the tbf that shapes
# it, so its sockets fill the host queue up to the cap (4 MiB on this kernel): 3.4 s of data at
# 10 Mbit/s in front of every ACK and sync of the machine (docs/measurements/capacities.md, fat-4-4). The
# emulation sets the cap per machine to this many seconds of the machine link's rate (at least
# two frames); AAPC_EMULATE_TSQ_MS overrides it (0: leave the kernel's cap).
HOST_TSQ_SECONDS = 0.002


def emulated_mtu() -> int:
    """The links' MTU: AAPC_EMULATE_MTU, else 1500 (InputError naming a bad value)."""
    text = os.environ.get("AAPC_EMULATE_MTU", "").strip()
    if not text:
        return DEFAULT_MTU
    lo, hi = MTU_RANGE
    if not text.isdigit() or not lo <= int(text) <= hi:
        raise InputError(f"AAPC_EMULATE_MTU={text!r}: expected bytes from {lo} to {hi}")
    return int(text)


def host_tsq_bytes(rate: float, frame: int = MTU_FRAME) -> int | None:
    """``net.ipv4.tcp_limit_output_bytes`` for a machine whose link carries ``rate`` bytes/s
    and frames of ``frame`` bytes (None: leave the kernel's value)."""
    ms = os.environ.get("AAPC_EMULATE_TSQ_MS")
    try:
        seconds = HOST_TSQ_SECONDS if ms is None else float(ms) / 1000
    except ValueError:
        raise InputError(f"AAPC_EMULATE_TSQ_MS={ms!r}: expected milliseconds (0: off)") from None
    if not math.isfinite(seconds):
        raise InputError(f"AAPC_EMULATE_TSQ_MS={ms!r}: expected milliseconds (0: off)")
    if seconds <= 0:
        return None
    return max(2 * frame, round(rate * seconds))


# AAPC_EMULATE_SYSCTL="net.ipv4.tcp_rmem=4096 32768 32768;..." sets host settings in every
# emulated machine's namespace: the settings a user would give the hosts of a real cluster,
# measured before they are recommended (docs/emulation.md).
HOST_SYSCTL = re.compile(r"net\.[a-z0-9_.]+=[0-9]+( [0-9]+)*")


def host_sysctls() -> tuple[str, ...]:
    """The ``key=value`` settings of AAPC_EMULATE_SYSCTL (InputError naming a bad one)."""
    text = os.environ.get("AAPC_EMULATE_SYSCTL", "")
    items = tuple(item.strip() for item in text.split(";") if item.strip())
    for item in items:
        if not HOST_SYSCTL.fullmatch(item):
            raise InputError(f"AAPC_EMULATE_SYSCTL: {item!r} is not net.KEY=NUMBER[ NUMBER...]")
    return items


class EmulationExists(AapcError):
    """An emulation with the requested prefix is already up."""


# --------------------------------------------------------------------------- owners
# Who brought an emulation up: ``<state dir>/emulate-<prefix>.json`` holds the pid and process
# start time of the process that builds it and, for `aapcgen emulate up`, that it is meant to
# stay ("persistent"). An emulation whose owner died without tearing it down (SIGKILL during a
# benchmark, or during `emulate up`) is stale: the next run removes it and says so once.

STATE_DIR_ENV = "AAPC_STATE_DIR"
DEFAULT_STATE_DIR = "/run/aapcgen"


def _state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


def _record_path(prefix: str) -> Path:
    return _state_dir() / f"emulate-{prefix}.json"


def _write_record(prefix: str, persistent: bool) -> None:
    from aapcgen.measure.cleanup import process_start

    path = _record_path(prefix)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"pid": os.getpid(), "start": process_start(os.getpid()), "persistent": persistent}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError as exc:  # without a record a SIGKILL leaves it to `emulate down`
        print(f"aapcgen: emulate: cannot record the owner in {path}: {exc}", file=sys.stderr)


def _drop_record(prefix: str) -> None:
    with contextlib.suppress(OSError):
        _record_path(prefix).unlink()


def _stale_record(prefix: str) -> dict | None:
    """The owner record of emulation ``prefix`` when it is stale (owner dead, not persistent)."""
    from aapcgen.measure.cleanup import process_start

    try:
        data = json.loads(_record_path(prefix).read_text())
        pid, start, persistent = int(data["pid"]), data.get("start"), bool(data["persistent"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if persistent or (start is not None and process_start(pid) == start):
        return None
    if start is None and process_start(pid) is not None:
        return None
    return data


def remove_stale(prefix: str) -> list[str]:
    """Remove emulation ``prefix`` when its owner died without removing it (root only);
    returns what was removed."""
    record = _stale_record(prefix)
    if record is None or not _is_root():
        return []
    removed = emulate_down(prefix)  # drops the record too
    return removed or [f"the owner record of emulation '{prefix}'"]


def sweep_stale() -> list[str]:
    """Remove every stale emulation (root only); returns what was removed."""
    if not _is_root():
        return []
    removed: list[str] = []
    with contextlib.suppress(OSError):
        for path in sorted(_state_dir().glob("emulate-*.json")):
            prefix = path.stem.removeprefix("emulate-")
            if PREFIX_RE.fullmatch(prefix):
                removed += remove_stale(prefix)
    return removed


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Shaper:
    """One tbf qdisc: egress of ``dev`` in namespace ``ns``, carrying traffic ``direction``."""

    ns: str
    dev: str
    direction: str  # e.g. "s0->s1", "s1->n3", "n3->s1"
    rate: float  # bytes per second


@dataclass(frozen=True)
class VethPair:
    """A veth pair for one link. ``label`` names the link, e.g. ``n3-s1`` or ``s0-s1``."""

    label: str
    ns_a: str
    dev_a: str
    ns_b: str
    dev_b: str
    rate: float  # bytes per second, both directions


@dataclass(frozen=True)
class EmulationPlan:
    """Everything :func:`emulate_up` will create, and the commands that create it."""

    prefix: str
    topology_name: str
    machines: tuple[str, ...]  # rank order
    machine_ns: tuple[str, ...]  # rank order
    machine_ip: tuple[str, ...]  # rank order, without prefix length
    prefixlen: int
    switch_ns: str
    bridges: tuple[tuple[str, str], ...]  # (switch name, bridge device), declaration order
    veths: tuple[VethPair, ...]
    shapers: tuple[Shaper, ...]
    burst: int  # bytes
    queue: int  # bytes
    mtu: int  # bytes, every link
    commands: tuple[tuple[str, ...], ...]  # argv lists, in execution order

    @property
    def namespaces(self) -> tuple[str, ...]:
        return (self.switch_ns, *self.machine_ns)

    @property
    def interface_names(self) -> tuple[str, ...]:
        """Every interface name created (``eth0`` once per machine namespace)."""
        names = [dev for _, dev in self.bridges]
        for v in self.veths:
            names += [v.dev_a, v.dev_b]
        return tuple(names)


@dataclass(frozen=True)
class Emulation:
    """A running emulation, as returned by :func:`emulate_up`."""

    prefix: str
    topology_name: str
    machines: tuple[str, ...]
    machine_ns: tuple[str, ...]  # rank order
    machine_ip: tuple[str, ...]  # rank order
    switch_ns: str
    switch_devices: tuple[tuple[str, str], ...]  # (switch-side device, direction label)
    machine_devices: tuple[tuple[str, str], ...]  # (machine namespace, direction on its eth0)
    ip: str = "ip"  # path of the ip tool used
    tc: str = "tc"  # path of the tc tool used


# --------------------------------------------------------------------------- pure planning


def check_prefix(prefix: str) -> str:
    if not isinstance(prefix, str) or PREFIX_RE.fullmatch(prefix) is None:
        raise InputError(
            f"--prefix {prefix!r}: use 1-8 lower-case letters and digits, starting with a letter"
        )
    return prefix


def parse_queue(text: str | int, frame: int = MTU_FRAME) -> int:
    """``--queue`` bytes; at least one full frame of ``frame`` bytes."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise InputError(f"--queue {text!r}: expected a whole number of bytes") from None
    if value < frame:
        raise InputError(f"--queue {value}: must be at least {frame} bytes (one frame)")
    return value


def burst_for(rate: float, frame: int = MTU_FRAME) -> int:
    """tbf bucket size in bytes: max(32 KiB, rate/HZ, 2 frames of ``frame`` bytes)."""
    return max(MIN_BURST, math.ceil(rate / ASSUMED_HZ), 2 * frame)


def tc_rate(rate: float) -> str:
    """Bytes/s -> a tc rate in bit/s, e.g. ``100000000bit``."""
    return f"{max(1, round(rate * 8))}bit"


def namespace_names(prefix: str, n_machines: int) -> tuple[str, tuple[str, ...]]:
    return f"{prefix}-sw", tuple(f"{prefix}-m{r}" for r in range(n_machines))


def machine_address(rank: int) -> str:
    if rank + 1 >= NETWORK.num_addresses - 1:
        raise InputError(f"too many machines for {NETWORK} ({NETWORK.num_addresses - 2} at most)")
    return str(NETWORK.network_address + rank + 1)


def tbf_command(tc: str, ns: str, dev: str, rate: float, burst: int, queue: int) -> tuple[str, ...]:
    return (
        tc,
        "-n",
        ns,
        "qdisc",
        "add",
        "dev",
        dev,
        "root",
        "tbf",
        "rate",
        tc_rate(rate),
        "burst",
        str(burst),
        "limit",
        str(queue),
    )


def plan_emulation(
    topo: Topology,
    rate: float | None = None,
    queue: int = DEFAULT_QUEUE,
    prefix: str = DEFAULT_PREFIX,
    ip: str = "ip",
    tc: str = "tc",
) -> EmulationPlan:
    """Plan namespaces, interfaces, addresses and the ``ip``/``tc`` commands (pure).

    ``rate`` (bytes/s) overrides every link's bandwidth; ``queue`` is the tbf limit in bytes.
    """
    check_prefix(prefix)
    mtu = emulated_mtu()
    frame = mtu + ETH_HEADER
    queue = parse_queue(queue, frame)
    with_mtu = ("mtu", str(mtu)) if mtu != DEFAULT_MTU else ()
    if rate is not None and not rate > 0:
        raise InputError(f"rate {rate!r}: must be positive")
    sw_ns, m_ns = namespace_names(prefix, topo.n_machines)
    ips = tuple(machine_address(r) for r in range(topo.n_machines))
    bridge = {s: f"{prefix}b{i}" for i, s in enumerate(topo.switches)}
    veths: list[VethPair] = []
    shapers: list[Shaper] = []
    for r, (m, s) in enumerate(zip(topo.machines, topo.machine_switch)):
        bw = rate if rate is not None else topo.machine_bandwidth[r]
        v = VethPair(f"{m}-{s}", m_ns[r], "eth0", sw_ns, f"{prefix}m{r}", bw)
        veths.append(v)
        shapers += [
            Shaper(v.ns_a, v.dev_a, f"{m}->{s}", bw),
            Shaper(v.ns_b, v.dev_b, f"{s}->{m}", bw),
        ]
    for k, link in enumerate(topo.links):
        bw = rate if rate is not None else link.bandwidth
        v = VethPair(f"{link.a}-{link.b}", sw_ns, f"{prefix}l{k}a", sw_ns, f"{prefix}l{k}b", bw)
        veths.append(v)
        shapers += [
            Shaper(sw_ns, v.dev_a, f"{link.a}->{link.b}", bw),
            Shaper(sw_ns, v.dev_b, f"{link.b}->{link.a}", bw),
        ]
    too_long = [
        n
        for n in (*bridge.values(), *(d for v in veths for d in (v.dev_a, v.dev_b)))
        if len(n) > IFNAME_MAX
    ]
    if too_long:
        raise InputError(
            f"interface name {too_long[0]!r} longer than {IFNAME_MAX}: shorter --prefix"
        )
    burst = burst_for(max((s.rate for s in shapers), default=0.0), frame)

    # commands, in execution order
    cmds: list[tuple[str, ...]] = []
    machine_tsq = (host_tsq_bytes(v.rate, frame) for v in veths[: topo.n_machines])
    extra = host_sysctls()
    for ns, tsq in zip((sw_ns, *m_ns), (None, *machine_tsq)):
        small = (f"net.ipv4.tcp_limit_output_bytes={tsq}",) if tsq is not None else ()
        small += extra if ns != sw_ns else ()
        cmds.append((ip, "netns", "add", ns))
        cmds.append(
            (ip, "netns", "exec", ns, "sysctl", "-q", "-w", *SYSCTL_NO_IPV6, *SYSCTL_TCP, *small)
        )
        cmds.append((ip, "-n", ns, "link", "set", "lo", "up"))
    for s in topo.switches:
        cmds.append(
            (ip, "-n", sw_ns, "link", "add", bridge[s], *with_mtu, "type", "bridge")
            + ("stp_state", "0")
        )
        cmds.append((ip, "-n", sw_ns, "link", "set", bridge[s], "up"))
    n_machine_links = topo.n_machines
    for i, v in enumerate(veths):
        if i < n_machine_links:  # machine link: eth0 in the machine namespace
            s = topo.machine_switch[i]
            cmds.append(
                (ip, "-n", sw_ns, "link", "add", v.dev_b, *with_mtu, "type", "veth")
                + ("peer", "name", "eth0", *with_mtu, "netns", v.ns_a)
            )
            cmds.append((ip, "-n", sw_ns, "link", "set", v.dev_b, "master", bridge[s]))
            cmds.append((ip, "-n", sw_ns, "link", "set", v.dev_b, "up"))
            cmds.append(
                (ip, "-n", v.ns_a, "addr", "add", f"{ips[i]}/{NETWORK.prefixlen}", "dev", "eth0")
            )
            cmds.append((ip, "-n", v.ns_a, "link", "set", "eth0", "up"))
        else:
            link = topo.links[i - n_machine_links]
            cmds.append(
                (ip, "-n", sw_ns, "link", "add", v.dev_a, *with_mtu, "type", "veth")
                + ("peer", "name", v.dev_b, *with_mtu)
            )
            for dev, s in ((v.dev_a, link.a), (v.dev_b, link.b)):
                cmds.append((ip, "-n", sw_ns, "link", "set", dev, "master", bridge[s]))
                cmds.append((ip, "-n", sw_ns, "link", "set", dev, "up"))
    host_queue = HOST_QUEUE_FRAMES * frame
    for sh in shapers:
        limit = queue if sh.ns == sw_ns else max(queue, host_queue)  # switch port or host NIC
        cmds.append(tbf_command(tc, sh.ns, sh.dev, sh.rate, burst_for(sh.rate, frame), limit))
    return EmulationPlan(
        prefix=prefix,
        topology_name=topo.name,
        machines=topo.machines,
        machine_ns=m_ns,
        machine_ip=ips,
        prefixlen=NETWORK.prefixlen,
        switch_ns=sw_ns,
        bridges=tuple((s, bridge[s]) for s in topo.switches),
        veths=tuple(veths),
        shapers=tuple(shapers),
        burst=burst,
        queue=queue,
        mtu=mtu,
        commands=tuple(cmds),
    )


def emulation_of(plan: EmulationPlan, ip: str = "ip", tc: str = "tc") -> Emulation:
    return Emulation(
        prefix=plan.prefix,
        topology_name=plan.topology_name,
        machines=plan.machines,
        machine_ns=plan.machine_ns,
        machine_ip=plan.machine_ip,
        switch_ns=plan.switch_ns,
        switch_devices=tuple((s.dev, s.direction) for s in plan.shapers if s.ns == plan.switch_ns),
        machine_devices=tuple((s.ns, s.direction) for s in plan.shapers if s.ns != plan.switch_ns),
        ip=ip,
        tc=tc,
    )


def local_env(em: Emulation, ranks_per_machine: int) -> dict[str, str]:
    """MPICH's view of locality in the emulation: no shared memory at all (the default), or,
    with ``AAPC_EMULATE_CLIQUES=1`` and several ranks per machine, one node per machine."""
    if ranks_per_machine > 1 and os.environ.get("AAPC_EMULATE_CLIQUES") == "1":
        n = str(len(em.machine_ns))
        return {"MPIR_CVAR_NUM_CLIQUES": n, "MPIR_CVAR_CLIQUES_BY_BLOCK": "1"}
    return {"MPIR_CVAR_NOLOCAL": "1"}


def mpiexec_command(
    em: Emulation,
    mpiexec: str,
    argv: Sequence[str],
    env: dict[str, str] | None = None,
    ranks_per_machine: int = 1,
) -> list[str]:
    """The MPMD hydra command running ranks k*R .. k*R+R-1 of ``argv`` in machine k's namespace
    (R = ``ranks_per_machine``).

    MPICH sees every rank on one host. ``MPIR_CVAR_NOLOCAL=1`` stops it from using shared
    memory between them, so all traffic between machines crosses the emulated links (and
    traffic inside a machine takes its namespace's TCP loopback). ``AAPC_EMULATE_CLIQUES=1``
    with several ranks per machine makes MPICH treat each machine's R ranks as one node instead
    (``MPIR_CVAR_NUM_CLIQUES``, by block): shared memory inside a machine, as on a real one, the
    emulated links between machines. On a host with fewer cores than ranks that is the slower
    choice by far (MPICH busy-polls its shared memory: 64 B calls of 16 ranks on 2 cores take
    73 ms instead of about 2; docs/measurements/selection.md). ``AAPC_MACHINE`` tells every rank
    its machine (the namespaces share one host name), so the run-time scheduled routines place
    it (docs/generate.md). ``MPICH_INTERFACE_HOSTNAME`` gives MPICH's ch3 devices (ch3:sock,
    the CPU-fair baseline of docs/measurements/cpu-fairness.md) the machine's address to put in
    its business card: without it every rank advertises the host's, which the other namespaces
    cannot reach (ch4 ignores it, UCX_NET_DEVICES does that there).
    """
    genv = {"UCX_TLS": "tcp", "UCX_NET_DEVICES": "eth0", **local_env(em, ranks_per_machine)}
    genv.update(env or {})
    cmd = [mpiexec]
    for key, value in genv.items():
        cmd += ["-genv", key, value]
    for r, ns in enumerate(em.machine_ns):
        if r:
            cmd.append(":")
        cmd += ["-n", str(ranks_per_machine), "-env", "AAPC_MACHINE", em.machines[r]]
        cmd += ["-env", "MPICH_INTERFACE_HOSTNAME", em.machine_ip[r]]
        cmd += [em.ip, "netns", "exec", ns, *argv]
    return cmd


def ompi_command(
    em: Emulation,
    mpirun: str,
    argv: Sequence[str],
    env: dict[str, str] | None = None,
    ranks_per_machine: int = 1,
) -> list[str]:
    """Open MPI 4's mpirun running ranks k*R .. k*R+R-1 of ``argv`` in machine k's namespace.

    mpirun itself runs in machine 0's namespace with its PMIx server on eth0, which every
    machine's namespace reaches (from the host's namespace the ranks could not connect to it);
    the byte transfer layer is TCP on eth0 only (no shared memory between the "local" ranks), so
    all traffic between machines crosses the emulated links. ``env`` and ``AAPC_MACHINE`` are
    set by ``env`` in front of each machine's ranks: mpirun's ``-x`` before the first program of
    an MPMD line reaches that program's ranks only (Open MPI 4.1).
    """
    cmd = [em.ip, "netns", "exec", em.machine_ns[0], "env", "PMIX_MCA_ptl_tcp_if_include=eth0"]
    cmd += [mpirun, "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ob1"]
    cmd += ["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "eth0"]
    cmd += ["--mca", "oob_tcp_if_include", "eth0"]
    common = [f"{key}={value}" for key, value in (env or {}).items()]
    for r, ns in enumerate(em.machine_ns):
        if r:
            cmd.append(":")
        cmd += ["-np", str(ranks_per_machine), em.ip, "netns", "exec", ns]
        cmd += ["env", *common, f"AAPC_MACHINE={em.machines[r]}", *argv]
    return cmd


_QDISC_RE = re.compile(
    r"^qdisc\s+(?P<kind>\S+)\s+\S+\s+dev\s+(?P<dev>\S+)\s+root.*?\n\s*Sent\s+(?P<bytes>\d+)\s+bytes\s+"
    r"(?P<pkts>\d+)\s+pkt\s+\(dropped\s+(?P<drops>\d+)",
    re.MULTILINE,
)


def parse_tc_stats(text: str) -> dict[str, tuple[int, int, int]]:
    """``tc -s qdisc show`` output -> {device: (bytes sent, packets, drops)} of its root tbf."""
    return {
        m["dev"]: (int(m["bytes"]), int(m["pkts"]), int(m["drops"]))
        for m in _QDISC_RE.finditer(text)
        if m["kind"] == "tbf"
    }


# --------------------------------------------------------------------------- execution


def _is_root() -> bool:
    return os.geteuid() == 0


def require_root() -> None:
    if not _is_root():
        raise AapcError(ROOT_MESSAGE)


def find_tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    if path is None:
        raise AapcError(f"emulate needs `{name}` (iproute2): apt-get install iproute2")
    return path


def _run(argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    if check and proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise AapcError(f"`{' '.join(argv)}` failed: {reason}")
    return proc


def _namespaces(ip: str, prefix: str) -> list[str]:
    out = _run([ip, "netns", "list"], check=False).stdout
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return sorted((n for n in names if n.startswith(prefix + "-")), key=_natural)


def _root_links(ip: str, prefix: str) -> list[str]:
    out = _run([ip, "-o", "link", "show"], check=False).stdout
    pattern = re.compile(re.escape(prefix) + r"[bml]\d+[ab]?")
    names = [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]
    return [n for n in names if pattern.fullmatch(n)]


def _natural(name: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def emulate_status(prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Namespaces and stray host interfaces with ``prefix``, e.g. ``["netns aapc-sw", ...]``."""
    check_prefix(prefix)
    ip = find_tool("ip")
    return [f"netns {n}" for n in _namespaces(ip, prefix)] + [
        f"link {n}" for n in _root_links(ip, prefix)
    ]


def _kill_namespace_processes(ip: str, namespaces: Sequence[str]) -> list[str]:
    """Stop processes still inside our namespaces (they would keep a deleted namespace alive)."""
    pids: dict[int, str] = {}
    for ns in namespaces:
        out = _run([ip, "netns", "pids", ns], check=False).stdout
        pids.update({int(p): ns for p in out.split() if p.isdigit() and int(p) != os.getpid()})
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [p for p in pids if _alive(p)]
        for pid in alive:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 2.0
        while any(_alive(p) for p in alive) and time.monotonic() < deadline:
            time.sleep(0.05)
    return [f"process {pid} in {ns}" for pid, ns in pids.items()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def emulate_down(prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Remove every namespace and host interface with ``prefix``; returns what it removed.

    Idempotent: nothing to remove is not an error. Processes still running inside the
    namespaces (e.g. left-over MPI ranks) are terminated first.
    """
    check_prefix(prefix)
    require_root()
    ip = find_tool("ip")
    removed: list[str] = []
    namespaces = _namespaces(ip, prefix)
    removed += _kill_namespace_processes(ip, namespaces)
    for link in _root_links(ip, prefix):
        if _run([ip, "link", "del", link], check=False).returncode == 0:
            removed.append(f"link {link}")
    for ns in namespaces:
        proc = _run([ip, "netns", "del", ns], check=False)
        if proc.returncode == 0:
            removed.append(f"netns {ns}")
    left = emulate_status(prefix)
    if left:
        raise AapcError(f"could not remove {', '.join(left)}")
    _drop_record(prefix)
    return removed


def _stderr_progress(message: str) -> None:
    print(f"aapcgen: {message}", file=sys.stderr, flush=True)


def emulate_up(
    topo: Topology,
    rate: float | None = None,
    queue: int = DEFAULT_QUEUE,
    prefix: str = DEFAULT_PREFIX,
    progress: Callable[[str], None] | None = None,
    persistent: bool = False,
) -> Emulation:
    """Build the emulation of ``topo``; on any failure (or interruption) remove what was built.

    ``progress`` receives progress lines; by default they go to stderr for set-ups of at least
    ``PROGRESS_MACHINES`` machines. ``persistent``: meant to outlive this process (`aapcgen
    emulate up`); otherwise a later run removes it should this process die without doing so.
    """
    check_prefix(prefix)
    require_root()
    ip, tc = find_tool("ip"), find_tool("tc")
    plan = plan_emulation(topo, rate, queue, prefix, ip, tc)
    stale = remove_stale(prefix)
    if stale:
        _stderr_progress(
            f"removed emulation '{prefix}', left behind by an interrupted run ({len(stale)} "
            "namespaces, interfaces and processes)"
        )
    existing = emulate_status(prefix)
    if existing:
        hint = "" if prefix == DEFAULT_PREFIX else f" --prefix {prefix}"
        raise EmulationExists(
            f"an emulation with prefix '{prefix}' is already up ({len(existing)} namespaces/"
            f"interfaces); run `aapcgen emulate down{hint}` first"
        )
    if progress is None:
        progress = _stderr_progress if topo.n_machines >= PROGRESS_MACHINES else lambda _: None
    have_sysctl = shutil.which("sysctl") or shutil.which("sysctl", path="/usr/sbin:/sbin")
    commands = [c for c in plan.commands if have_sysctl or "sysctl" not in c]
    step = max(1, len(commands) // 10)
    start = time.perf_counter()
    _write_record(prefix, persistent=False)  # a SIGKILL from here on leaves a stale emulation
    try:
        progress(f"emulate: {len(commands)} ip/tc commands for {topo.n_machines} machines ...")
        for i, argv in enumerate(commands):
            _run(argv)
            if (i + 1) % step == 0 and i + 1 < len(commands):
                progress(f"emulate: {i + 1}/{len(commands)} commands")
        progress(f"emulate: up in {time.perf_counter() - start:.1f} s")
    except BaseException:
        try:
            emulate_down(prefix)
        except AapcError as exc:  # report the original failure, mention the leftover
            print(f"aapcgen: emulate: cleanup after failure: {exc}", file=sys.stderr)
        raise
    if persistent:
        _write_record(prefix, persistent=True)
    return emulation_of(plan, ip, tc)


def link_counters(em: Emulation, machines: bool = False) -> dict[str, tuple[int, int, int]]:
    """{direction: (bytes sent, packets, drops)} of every tbf in the switch namespace.

    Keys are directions such as ``s0->s1``, ``s1->s0`` (switch links) and ``s1->n3`` (towards a
    machine). With ``machines=True`` the machines' uplinks (``n3->s1``, each machine's ``eth0``)
    are added, one ``tc`` call per machine namespace.
    """
    stats = parse_tc_stats(_run([em.tc, "-s", "-n", em.switch_ns, "qdisc", "show"]).stdout)
    result = {label: stats[dev] for dev, label in em.switch_devices if dev in stats}
    if machines:
        for ns, label in em.machine_devices:
            eth = parse_tc_stats(_run([em.tc, "-s", "-n", ns, "qdisc", "show"]).stdout)
            if "eth0" in eth:
                result[label] = eth["eth0"]
    return result


# --------------------------------------------------------------------------- context manager


def _raise_on_signal(signum: int, frame: FrameType | None) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def _set_handlers(handler: object) -> dict[int, object] | None:
    """Install ``handler`` for SIGINT and SIGTERM; returns the previous ones (None off-main)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}


@contextmanager
def emulated(
    topo: Topology,
    rate: float | None = None,
    queue: int = DEFAULT_QUEUE,
    prefix: str = DEFAULT_PREFIX,
    progress: Callable[[str], None] | None = None,
) -> Iterator[Emulation]:
    """Bring the emulation up for the ``with`` block and ALWAYS tear it down.

    SIGINT raises KeyboardInterrupt and SIGTERM raises SystemExit(143) inside the block, so an
    interrupted or killed benchmark still removes its namespaces; the previous handlers are
    restored afterwards. (SIGKILL cannot be caught: run ``aapcgen emulate down`` then.)
    """
    previous = _set_handlers(_raise_on_signal)
    owned = True
    try:
        try:
            em = emulate_up(topo, rate, queue, prefix, progress)
        except EmulationExists:
            owned = False  # somebody else's emulation: leave it alone
            raise
        yield em
    finally:
        if previous is not None:
            _set_handlers(signal.SIG_IGN)  # no second interruption during teardown
        try:
            if owned:
                emulate_down(prefix)
        finally:
            if previous is not None:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)


# --------------------------------------------------------------------------- CLI
