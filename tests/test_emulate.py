"""aapcgen emulate: pure planning (no root) and a real switch tree in namespaces (root).

The root tests build namespaces with their own prefixes (aapct, aapcc, aapcs, aapcf) so they
never touch an emulation somebody else runs with the default prefix. Under CI=true they must
run: without root they fail instead of skipping.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aapcgen.cli import main
from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.topology import load_topology
from aapcgen.core.units import parse_bandwidth
from aapcgen.platforms import emulate
from aapcgen.platforms.emulate import (
    EmulationExists,
    emulate_down,
    emulate_status,
    emulate_up,
    emulated,
    emulation_of,
    host_tsq_bytes,
    link_counters,
    mpiexec_command,
    ompi_command,
    parse_tc_stats,
    plan_emulation,
)

ROOT = Path(__file__).resolve().parent.parent
TOPOS = ROOT / "topologies"
BIN = Path(sys.executable).parent
MPICC, MPIEXEC = BIN / "mpicc", BIN / "mpiexec"
IS_ROOT = os.geteuid() == 0

needs_root = pytest.mark.root


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def clean():
    """Yield a cleaner for the given prefixes; it also runs (and must succeed) afterwards."""
    if not IS_ROOT:
        pytest.fail("CI=true but not root: the emulation tests need root")
    for tool in ("ip", "tc"):
        if shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None:
            pytest.fail(f"`{tool}` missing: run `make emulation-tools`")
    prefixes: list[str] = []

    def use(prefix: str) -> str:
        prefixes.append(prefix)
        emulate_down(prefix)
        return prefix

    yield use
    for prefix in prefixes:
        emulate_down(prefix)
        assert emulate_status(prefix) == []


# --------------------------------------------------------------------------- pure planning


@pytest.mark.parametrize("name", ["paper-fig1", "two-switch-4-4", "chain-4x8"])
def test_plan_names_addresses_and_shapers(name):
    topo = load_topology(TOPOS / f"{name}.yaml")
    plan = plan_emulation(topo)
    # every machine a namespace, all namespaces distinct and prefixed
    assert len(plan.machine_ns) == topo.n_machines
    assert len(set(plan.namespaces)) == len(plan.namespaces)
    assert all(ns.startswith("aapc-") for ns in plan.namespaces)
    # interface names: <= 15 chars, unique per namespace, prefixed (eth0 lives in machine ns)
    devices = [(v.ns_a, v.dev_a) for v in plan.veths] + [(v.ns_b, v.dev_b) for v in plan.veths]
    devices += [(plan.switch_ns, dev) for _, dev in plan.bridges]
    assert len(set(devices)) == len(devices)
    for ns, dev in devices:
        assert len(dev) <= 15 and len(ns) <= 15
        assert dev == "eth0" if ns in plan.machine_ns else dev.startswith("aapc")
    assert len(plan.veths) == topo.n_machines + len(topo.links)
    # addresses: unique, inside the RFC 2544 range, one subnet
    net = ipaddress.ip_network("198.18.0.0/15")
    assert len(set(plan.machine_ip)) == topo.n_machines
    assert all(ipaddress.ip_address(a) in net for a in plan.machine_ip)
    assert plan.prefixlen in (15, 16)
    assert not any("default" in cmd or "route" in cmd for cmd in plan.commands)
    # tbf on both ends of every veth, at the link's rate, and a command for each
    shaped = {(s.ns, s.dev): s.rate for s in plan.shapers}
    tbf = {
        (c[2], c[6]): c[c.index("rate") + 1] for c in plan.commands if "tbf" in c and c[0] == "tc"
    }
    for v in plan.veths:
        for end in ((v.ns_a, v.dev_a), (v.ns_b, v.dev_b)):
            assert shaped[end] == v.rate
            assert tbf[end] == f"{round(v.rate * 8)}bit"
    assert len(tbf) == 2 * len(plan.veths)
    # machine links at machine_bandwidth, switch links at the link bandwidth
    for r, m in enumerate(topo.machines):
        assert plan.veths[r].label == f"{m}-{topo.machine_switch[r]}"
        assert plan.veths[r].rate == topo.machine_bandwidth[r]
    for k, link in enumerate(topo.links):
        assert plan.veths[topo.n_machines + k].rate == link.bandwidth
    # lo up in every namespace
    for ns in plan.namespaces:
        assert ("ip", "-n", ns, "link", "set", "lo", "up") in plan.commands


def test_plan_per_link_rates_queue_burst_and_override(tmp_path):
    yaml = tmp_path / "mixed.yaml"
    yaml.write_text(
        "name: mixed\nbandwidth: 100Mbit\nswitches: [a, b]\n"
        "machines:\n  - {name: x, switch: a, bandwidth: 1Gbit}\n  - {name: y, switch: b}\n"
        "links:\n  - {ends: [a, b], bandwidth: 10Gbit}\n"
    )
    topo = load_topology(yaml)
    plan = plan_emulation(topo, queue=50_000)
    rates = {s.direction: s.rate for s in plan.shapers}
    assert rates == {
        "x->a": 125e6,
        "a->x": 125e6,
        "y->b": 12.5e6,
        "b->y": 12.5e6,
        "a->b": 1.25e9,
        "b->a": 1.25e9,
    }
    bursts = {
        c[6]: (int(c[c.index("burst") + 1]), int(c[c.index("limit") + 1]))
        for c in plan.commands
        if "tbf" in c
    }
    assert bursts["eth0"][1] == 1000 * 1514  # the host's own NIC queue, not a switch buffer
    assert bursts["aapcm1"] == (32768, 50_000)  # 100 Mbit: the 32 KiB floor
    assert bursts["aapcl0a"][0] == 1_250_000  # 10 Gbit: rate / HZ(1000)
    assert all(b >= 2 * 1514 for b, _ in bursts.values())
    # --rate overrides every link
    slow = plan_emulation(topo, rate=parse_bandwidth("20Mbit"))
    assert {s.rate for s in slow.shapers} == {2.5e6}
    assert all(c[c.index("rate") + 1] == "20000000bit" for c in slow.commands if "tbf" in c)


def test_host_tcp_small_queues_follow_the_machine_link(monkeypatch):
    monkeypatch.delenv("AAPC_EMULATE_TSQ_MS", raising=False)
    topo = load_topology(TOPOS / "fat-4-4.yaml")  # 10 Mbit/s machines
    plan = plan_emulation(topo)
    machine_sysctl = [c for c in plan.commands if "sysctl" in c and plan.machine_ns[0] in c]
    assert any("net.ipv4.tcp_limit_output_bytes=3028" in c for c in machine_sysctl)  # 2 frames
    switch_sysctl = [c for c in plan.commands if "sysctl" in c and plan.switch_ns in c]
    assert not any("tcp_limit_output_bytes" in " ".join(c) for c in switch_sysctl)
    assert host_tsq_bytes(12.5e6) == 25_000  # 100 Mbit/s
    monkeypatch.setenv("AAPC_EMULATE_TSQ_MS", "0")
    assert host_tsq_bytes(12.5e6) is None
    assert not any("tcp_limit_output_bytes" in " ".join(c) for c in plan_emulation(topo).commands)
    for bad in ("fast", "inf"):
        monkeypatch.setenv("AAPC_EMULATE_TSQ_MS", bad)
        with pytest.raises(InputError, match="AAPC_EMULATE_TSQ_MS"):
            plan_emulation(topo)


def test_jumbo_frames_reach_every_link_and_scale_the_frame_limits(monkeypatch):
    topo = load_topology(TOPOS / "fat-4-4.yaml")  # 10 Mbit/s machines
    monkeypatch.delenv("AAPC_EMULATE_MTU", raising=False)
    monkeypatch.delenv("AAPC_EMULATE_TSQ_MS", raising=False)
    plain = plan_emulation(topo)
    assert plain.mtu == 1500 and not any("mtu" in c for c in plain.commands)
    monkeypatch.setenv("AAPC_EMULATE_MTU", "9000")
    plan = plan_emulation(topo)
    assert plan.mtu == 9000
    adds = [c for c in plan.commands if c[3:5] == ("link", "add")]
    assert len(adds) == len(plan.bridges) + len(plan.veths)
    for c in adds:  # the bridge, and both ends of every veth
        assert c.count("mtu") == (1 if "bridge" in c else 2), c
        assert all(c[i + 1] == "9000" for i, w in enumerate(c) if w == "mtu")
    limits = {c[6]: int(c[c.index("limit") + 1]) for c in plan.commands if "tbf" in c}
    assert limits["eth0"] == 1000 * 9014  # the host queue is 1000 frames of the larger size
    assert all(int(c[c.index("burst") + 1]) >= 2 * 9014 for c in plan.commands if "tbf" in c)
    tsq = [c for c in plan.commands if "sysctl" in c and plan.machine_ns[0] in c]
    assert any("net.ipv4.tcp_limit_output_bytes=18028" in c for c in tsq)  # 2 jumbo frames
    with pytest.raises(InputError, match="--queue 5000: .* 9014 bytes"):
        plan_emulation(topo, queue=5000)
    for bad in ("jumbo", "100", "65536", "9000.5"):
        monkeypatch.setenv("AAPC_EMULATE_MTU", bad)
        with pytest.raises(InputError, match="AAPC_EMULATE_MTU=.*1280 to 9216"):
            plan_emulation(topo)


def test_host_settings_go_to_every_machine_and_bad_ones_are_one_line_errors(monkeypatch):
    topo = load_topology(TOPOS / "fat-4-4.yaml")
    monkeypatch.setenv("AAPC_EMULATE_SYSCTL", "net.ipv4.tcp_rmem=4096 32768 32768; ")
    plan = plan_emulation(topo)
    setting = "net.ipv4.tcp_rmem=4096 32768 32768"
    for ns in plan.machine_ns:
        assert any(setting in c and ns in c for c in plan.commands if "sysctl" in c), ns
    assert not any(setting in c and plan.switch_ns in c for c in plan.commands)
    for bad in ("kernel.panic=1", "net.ipv4.tcp_rmem=big", "net.ipv4.x=1;rm -rf /"):
        monkeypatch.setenv("AAPC_EMULATE_SYSCTL", bad)
        with pytest.raises(InputError, match="AAPC_EMULATE_SYSCTL: .* is not net.KEY=NUMBER"):
            plan_emulation(topo)


def test_plan_rejects_bad_prefix_and_queue():
    topo = load_topology(TOPOS / "paper-fig1.yaml")
    for bad in ("", "AAPC", "aa-pc", "aapc12345", "1aapc"):
        with pytest.raises(InputError, match="--prefix"):
            plan_emulation(topo, prefix=bad)
    with pytest.raises(InputError, match="--queue"):
        plan_emulation(topo, queue=100)
    plan = plan_emulation(topo, prefix="zz")
    assert plan.switch_ns == "zz-sw" and plan.machine_ns[4] == "zz-m4"


def test_mpiexec_command_is_mpmd_one_rank_per_namespace():
    topo = load_topology(TOPOS / "paper-fig1.yaml")
    em = emulation_of(plan_emulation(topo))
    cmd = mpiexec_command(em, "mpiexec", ["./prog", "-x"], {"AAPC_QUIET": "1"})
    head = ["mpiexec", "-genv", "UCX_TLS", "tcp", "-genv", "UCX_NET_DEVICES", "eth0"]
    head += ["-genv", "MPIR_CVAR_NOLOCAL", "1", "-genv", "AAPC_QUIET", "1"]
    assert cmd[: len(head)] == head
    parts = " ".join(cmd[len(head) :]).split(" : ")
    assert parts == [
        f"-n 1 -env AAPC_MACHINE {topo.machines[r]} -env MPICH_INTERFACE_HOSTNAME 198.18.0.{r + 1}"
        f" ip netns exec aapc-m{r} ./prog -x"
        for r in range(5)
    ]
    assert em.machine_ip == ("198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4", "198.18.0.5")


def test_mpiexec_command_can_make_each_machine_one_node_of_mpich(monkeypatch):
    """AAPC_EMULATE_CLIQUES=1 with several ranks per machine: one MPICH clique per machine, by
    block (shared memory inside a machine only), instead of no shared memory at all."""
    topo = load_topology(TOPOS / "paper-fig1.yaml")
    em = emulation_of(plan_emulation(topo))
    cmd = " ".join(mpiexec_command(em, "mpiexec", ["./prog"], ranks_per_machine=3))
    assert "-genv MPIR_CVAR_NOLOCAL 1 " in cmd and "CLIQUES" not in cmd
    monkeypatch.setenv("AAPC_EMULATE_CLIQUES", "1")
    cmd = " ".join(mpiexec_command(em, "mpiexec", ["./prog"], ranks_per_machine=3))
    assert "-genv MPIR_CVAR_NUM_CLIQUES 5 -genv MPIR_CVAR_CLIQUES_BY_BLOCK 1 " in cmd
    assert "NOLOCAL" not in cmd and cmd.count("-n 3 -env AAPC_MACHINE") == 5
    one = " ".join(mpiexec_command(em, "mpiexec", ["./prog"]))
    assert "-genv MPIR_CVAR_NOLOCAL 1 " in one and "CLIQUES" not in one


def test_ompi_command_runs_mpirun_in_the_first_machine_and_each_rank_in_its_own():
    topo = load_topology(TOPOS / "paper-fig1.yaml")
    em = emulation_of(plan_emulation(topo))
    cmd = ompi_command(em, "mpirun", ["./prog", "-x"], {"AAPC_QUIET": "1"}, ranks_per_machine=2)
    head = ["ip", "netns", "exec", "aapc-m0", "env", "PMIX_MCA_ptl_tcp_if_include=eth0", "mpirun"]
    assert cmd[: len(head)] == head
    line = " ".join(cmd)
    assert " --mca btl tcp,self --mca btl_tcp_if_include eth0 " in line
    # every program of the MPMD line gets the environment (-x would reach the first only)
    parts = line.split(" --mca oob_tcp_if_include eth0 ")[1].split(" : ")
    assert parts == [
        f"-np 2 ip netns exec aapc-m{r} env AAPC_QUIET=1 AAPC_MACHINE={topo.machines[r]} ./prog -x"
        for r in range(5)
    ]


def test_parse_tc_stats():
    text = (
        "qdisc noqueue 0: dev lo root refcnt 2 \n"
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "qdisc tbf 8002: dev aapcm0 root refcnt 3 rate 100Mbit burst 32Kb lat 5.38ms \n"
        " Sent 522355 bytes 370 pkt (dropped 12, overlimits 81 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
    )
    assert parse_tc_stats(text) == {"aapcm0": (522355, 370, 12)}


def test_cli_help():
    for argv in (["emulate", "--help"], ["emulate", "up", "--help"], ["emulate", "down", "-h"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0


def test_cli_bad_rate_is_one_line(capsys):
    code, out, err = run(
        capsys, "emulate", "up", str(TOPOS / "two-switch-4-4.yaml"), "--rate", "20 furlongs"
    )
    assert code == 2 and out == ""
    assert err.startswith("aapcgen: --rate: ") and err.count("\n") == 1
    code, _, err = run(capsys, "emulate", "up", str(TOPOS / "two-switch-4-4.yaml"), "--rate", "20M")
    assert code == 2 and "bits or bytes" in err and err.count("\n") == 1


def test_cli_not_root(capsys, monkeypatch):
    monkeypatch.setattr(emulate, "_is_root", lambda: False)
    message = (
        "aapcgen: emulate needs root (network namespaces); "
        "run as root or use --backend local/simulate\n"
    )
    for argv in (["up", str(TOPOS / "two-switch-4-4.yaml")], ["down"]):
        code, out, err = run(capsys, "emulate", *argv)
        assert (code, out, err) == (2, "", message)
    with pytest.raises(AapcError, match="needs root"):
        emulate_up(load_topology(TOPOS / "paper-fig1.yaml"), prefix="aapcn")


# --------------------------------------------------------------------------- real emulation

A2A = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank, size, n = atoi(argv[1]), bad = 0, allbad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *s = malloc((size_t)n * size), *r = malloc((size_t)n * size);
    for (int i = 0; i < n * size; i++) s[i] = (char)(rank * 31 + i / n);
    MPI_Alltoall(s, n, MPI_CHAR, r, n, MPI_CHAR, MPI_COMM_WORLD);
    for (int i = 0; i < n * size; i++) bad |= r[i] != (char)((i / n) * 31 + rank);
    MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_LOR, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("alltoall %s on %d ranks\n", allbad ? "WRONG" : "ok", size);
    free(s); free(r);
    MPI_Finalize();
    return allbad;
}
"""


def netns(*argv: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["ip", "netns", "exec", *argv], capture_output=True, text=True, timeout=timeout
    )


LISTEN = """
import socket
s = socket.create_server(("0.0.0.0", 5999)); print("ready", flush=True)
c, _ = s.accept(); c.sendall(b"hello"); c.close()
"""
CONNECT = """
import socket, sys
print(socket.create_connection((sys.argv[1], 5999), timeout=5).recv(5).decode())
"""


def tcp_hello(server_ns: str, client_ns: str, server_ip: str) -> str:
    server = subprocess.Popen(
        ["ip", "netns", "exec", server_ns, sys.executable, "-c", LISTEN],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout.readline() == "ready\n"
        return netns(client_ns, sys.executable, "-c", CONNECT, server_ip).stdout.strip()
    finally:
        server.kill()
        server.wait()


def alltoall_traffic(em, exe: Path, r: int) -> tuple[dict, dict]:  # noqa: ANN001
    """Run the 64 KiB all-to-all with r ranks per machine (it must pass on all 8 r ranks);
    the bytes each link moved meanwhile, and the counters after."""
    before = link_counters(em)
    cmd = mpiexec_command(em, str(MPIEXEC), [str(exe), "65536"], {}, ranks_per_machine=r)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert f"alltoall ok on {8 * r} ranks" in proc.stdout
    after = link_counters(em, machines=True)
    return {k: after[k][0] - before[k][0] for k in before}, after


@needs_root
@pytest.mark.mpi
def test_two_switch_tree_ping_mpi_counters(clean, tmp_path, monkeypatch):
    prefix = clean("aapct")
    topo = load_topology(TOPOS / "two-switch-4-4.yaml")
    em = emulate_up(topo, rate=parse_bandwidth("100Mbit"), prefix=prefix)
    try:
        assert em.machine_ns == tuple(f"aapct-m{r}" for r in range(8))
        assert set(emulate_status(prefix)) == {
            f"netns {ns}" for ns in (*em.machine_ns, em.switch_ns)
        }
        # n0 (on s0) reaches n7 (on s1); nothing outside the tree is reachable
        if shutil.which("ping"):
            ping = netns(em.machine_ns[0], "ping", "-c", "1", "-W", "2", em.machine_ip[7])
            assert ping.returncode == 0, ping.stdout + ping.stderr
            outside = netns(em.machine_ns[0], "ping", "-c", "1", "-W", "1", "8.8.8.8")
            assert outside.returncode != 0
        else:  # no iputils-ping: a TCP connection n0 -> n7 instead
            assert tcp_hello(em.machine_ns[7], em.machine_ns[0], em.machine_ip[7]) == "hello"
        routes = netns(em.machine_ns[3], "ip", "route").stdout
        assert "default" not in routes and "198.18.0.0/15 dev eth0" in routes
        qdiscs = netns(em.machine_ns[3], "tc", "qdisc", "show", "dev", "eth0").stdout
        assert "tbf" in qdiscs and "rate 100Mbit" in qdiscs
        # new TCP connections never inherit metrics cached from an earlier job
        nometrics = netns(em.machine_ns[5], "sysctl", "-n", "net.ipv4.tcp_no_metrics_save")
        assert nometrics.stdout.strip() == "1"
        # TCP Small Queues capped at 2 ms of the machine link (100 Mbit/s: 25,000 bytes)
        tsq = netns(em.machine_ns[5], "sysctl", "-n", "net.ipv4.tcp_limit_output_bytes")
        assert tsq.stdout.strip() == "25000"
        # a tiny MPI_Alltoall across the namespaces; its traffic crosses s0-s1
        if not MPICC.exists():
            pytest.fail("MPICH wheel not installed (run make test)")
        exe = tmp_path / "a2a"
        (tmp_path / "a2a.c").write_text(A2A)
        subprocess.run(
            [str(MPICC), "-O1", str(tmp_path / "a2a.c"), "-o", str(exe)], check=True, timeout=120
        )
        moved, after = alltoall_traffic(em, exe, 1)
        # 4 x 4 messages of 64 KiB each way over the one switch link (plus headers)
        assert moved["s0->s1"] >= 16 * 65536 and moved["s1->s0"] >= 16 * 65536
        assert all(moved[f"s1->n{m}"] >= 7 * 65536 for m in range(4, 8))
        assert after["n0->s0"][0] >= 7 * 65536
        # two ranks per machine, MPICH taking each machine's ranks as one node (cliques): its
        # shared memory stays inside a machine and everything between machines crosses the links
        monkeypatch.setenv("AAPC_EMULATE_CLIQUES", "1")
        moved, _ = alltoall_traffic(em, exe, 2)
        # 8 x 8 blocks each way over the switch link; 2 x 14 out of every machine
        assert moved["s0->s1"] >= 64 * 65536 and moved["s1->s0"] >= 64 * 65536
        assert all(moved[f"s1->n{m}"] >= 28 * 65536 for m in range(4, 8))
    finally:
        removed = emulate_down(prefix)
    assert f"netns {em.switch_ns}" in removed
    assert emulate_status(prefix) == []


@needs_root
@pytest.mark.mpi
@pytest.mark.apps
def test_open_mpi_through_the_emulated_tree(clean, tmp_path):
    """Debian's Open MPI 4 runs a job across the namespaces (ompi_command) and its traffic
    crosses the emulated switch link, as MPICH's does."""
    prefix = clean("aapco")
    topo = load_topology(TOPOS / "two-switch-4-4.yaml")
    exe = tmp_path / "a2a"
    (tmp_path / "a2a.c").write_text(A2A)
    compile_ = ["mpicc.openmpi", "-O1", str(tmp_path / "a2a.c"), "-o", str(exe)]
    subprocess.run(compile_, check=True, timeout=120)
    em = emulate_up(topo, rate=parse_bandwidth("100Mbit"), prefix=prefix)
    try:
        before = link_counters(em)
        cmd = ompi_command(em, "mpirun.openmpi", [str(exe), "65536"], {"AAPC_QUIET": "1"})
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        assert "alltoall ok on 8 ranks" in proc.stdout
        # the environment reaches every rank, and each rank its own machine
        show = ["sh", "-c", 'echo "$AAPC_QUIET $AAPC_MACHINE"']
        cmd = ompi_command(em, "mpirun.openmpi", show, {"AAPC_QUIET": "7"})
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
        assert sorted(out.split("\n")[:-1]) == [f"7 n{m}" for m in range(8)], out
        after = link_counters(em)
        moved = {k: after[k][0] - before[k][0] for k in before}
        assert moved["s0->s1"] >= 16 * 65536 and moved["s1->s0"] >= 16 * 65536
    finally:
        emulate_down(prefix)
    assert emulate_status(prefix) == []


SINK = """
import socket
s = socket.create_server(("0.0.0.0", 5998)); print("ready", flush=True)
c, _ = s.accept(); n = 0
while chunk := c.recv(1 << 16):
    n += len(chunk)
print(n, flush=True)
"""
SOURCE = """
import socket, sys
c = socket.create_connection((sys.argv[1], 5998), timeout=10); c.sendall(bytes(2 << 20)); c.close()
"""


@needs_root
def test_jumbo_frames_cross_the_switch_link_whole(clean, monkeypatch):
    """AAPC_EMULATE_MTU=9000: every device has the MTU and a bulk TCP transfer across the
    switch link moves in frames of about 9014 bytes (1514 at the default)."""
    prefix = clean("aapcj")
    monkeypatch.setenv("AAPC_EMULATE_MTU", "9000")
    with emulated(load_topology(TOPOS / "two-switch-4-4.yaml"), prefix=prefix) as em:
        for ns in (em.machine_ns[0], em.switch_ns):
            links = netns(ns, "ip", "-o", "link", "show").stdout.splitlines()
            devices = [line for line in links if ": lo:" not in line]
            assert devices and all(" mtu 9000 " in line for line in devices), links
        sink = subprocess.Popen(
            ["ip", "netns", "exec", em.machine_ns[7], sys.executable, "-c", SINK],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert sink.stdout.readline() == "ready\n"
            before = link_counters(em)["s0->s1"]
            sent = netns(em.machine_ns[0], sys.executable, "-c", SOURCE, em.machine_ip[7])
            assert sent.returncode == 0, sent.stderr
            assert sink.stdout.readline() == f"{2 << 20}\n"
        finally:
            sink.kill()
            sink.wait()
        after = link_counters(em)["s0->s1"]
        moved, frames = after[0] - before[0], after[1] - before[1]
        assert moved >= 2 << 20 and moved / frames > 8000, (moved, frames)


@needs_root
def test_cli_up_twice_status_down_twice(clean, capsys):
    prefix = clean("aapcc")
    topo = str(TOPOS / "paper-fig1.yaml")
    code, out, err = run(capsys, "emulate", "up", topo, "--prefix", prefix, "--rate", "20Mbit")
    assert code == 0, err
    assert "5 machine namespaces aapcc-m0 .. aapcc-m4" in out and "20 Mbit/s" in out
    code, out, err = run(capsys, "emulate", "up", topo, "--prefix", prefix)
    assert code == 2 and "aapcgen emulate down --prefix aapcc` first" in err
    assert err.count("\n") == 1
    # the context manager leaves somebody else's emulation alone
    with pytest.raises(EmulationExists), emulated(load_topology(topo), prefix=prefix):
        pass
    code, out, _ = run(capsys, "emulate", "status", "--prefix", prefix)
    assert code == 0 and out.count("netns aapcc-") == 6
    code, out, _ = run(capsys, "emulate", "down", "--prefix", prefix)
    assert code == 0 and out.startswith("removed 6:")
    code, out, _ = run(capsys, "emulate", "down", "--prefix", prefix)
    assert code == 0 and "nothing to remove" in out
    code, out, _ = run(capsys, "emulate", "status", "--prefix", prefix)
    assert code == 0 and "no emulation running" in out


@needs_root
def test_failed_up_removes_what_it_built(clean, monkeypatch):
    prefix = clean("aapcf")
    real = emulate.plan_emulation

    def broken(*args, **kwargs):
        plan = real(*args, **kwargs)
        bogus = (plan.commands[0][0], "link", "set", "no-such-device-x", "up")
        mid = len(plan.commands) // 2
        cmds = (*plan.commands[:mid], bogus, *plan.commands[mid:])
        return type(plan)(**{**plan.__dict__, "commands": cmds})

    monkeypatch.setattr(emulate, "plan_emulation", broken)
    with pytest.raises(AapcError, match="no-such-device-x"):
        emulate_up(load_topology(TOPOS / "paper-fig1.yaml"), prefix=prefix)
    assert emulate_status(prefix) == []


SLEEPER = """
import sys, time
from aapcgen.platforms.emulate import emulated
from aapcgen.core.topology import load_topology
with emulated(load_topology(sys.argv[1]), prefix="aapcs"):
    print("up", flush=True)
    time.sleep(60)
"""


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupted_context_manager_cleans_up(clean, sig):
    prefix = clean("aapcs")
    proc = subprocess.Popen(
        [sys.executable, "-c", SLEEPER, str(TOPOS / "two-switch-4-4.yaml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline() == "up\n", proc.stderr.read() if proc.poll() else ""
        assert len(emulate_status(prefix)) == 9
        proc.send_signal(sig)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # SystemExit(143) for SIGTERM; an uncaught KeyboardInterrupt re-kills itself with SIGINT
    assert code == (143 if sig == signal.SIGTERM else -signal.SIGINT)
    assert emulate_status(prefix) == []


@needs_root
def test_down_when_nothing_exists(clean):
    prefix = clean("aapcz")
    assert emulate_down(prefix) == []
    assert emulate_down(prefix) == []
    assert emulate_status(prefix) == []
    start = time.perf_counter()
    with emulated(load_topology(TOPOS / "paper-fig1.yaml"), prefix=prefix) as em:
        assert len(emulate_status(prefix)) == 6
        assert em.topology_name == "paper-fig1"
    assert emulate_status(prefix) == []
    assert time.perf_counter() - start < 20
