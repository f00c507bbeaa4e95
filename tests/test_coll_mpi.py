"""One library, every collective: the generated MPI_Bcast, MPI_Allgather, MPI_Allreduce,
MPI_Reduce, MPI_Barrier, MPI_Scatter and MPI_Scatterv (runtime_c/coll/) against the MPI
library's, with the ranks placed on the cluster's machines by AAPC_MACHINE (blocks, round robin
and unequal counts at once, 1 to 4 ranks per machine), on MPI_COMM_WORLD, dups, splits, a subset
and the rows and columns of a process grid (tests/c/coll_check.c), under MPICH (also with
ASan/UBSan) and Open MPI; the settings that force a way or turn an entry off, the multicast
leaders under packet loss, and the report of what ran."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_cluster_mpi import CHAIN, OMPI, SANITIZE, n, run
from test_mcast import nft_loss_rules

from aapcgen.codegen.generate import generate, variant_specs

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HARNESS = ROOT / "tests" / "c" / "coll_check.c"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"]
COLLECTIVES = ("MPI_Bcast", "MPI_Allgather", "MPI_Allreduce", "MPI_Reduce", "MPI_Barrier")
SCATTERS = ("MPI_Scatter", "MPI_Scatterv")  # no shared-memory step: the library's on one machine
HIER = {f"AAPC_{c[4:].upper()}": "hier" for c in COLLECTIVES + SCATTERS}
PER_MACHINE = "leader-based, one message per machine"
BLOCKS = n(0, 0, 5, 5)  # 2 machines x 2 ranks, each machine's ranks consecutive
MIXED = n(3, 7, 3, 11, 3)  # n3 runs ranks 0, 2, 4 (round robin, unequal); n7 and n11 one each
FOURS = n(2, 2, 2, 2, 12, 12, 12, 12)  # 2 machines x 4 ranks in blocks: a 4 x 2 grid
RING_LESS = ("AAPC_REDUCE", "AAPC_BARRIER", "AAPC_SCATTER", "AAPC_SCATTERV")  # no ring way

pytestmark = pytest.mark.mpi


def build(tmp: Path, mpicc: Path = BIN / "mpicc", extra: tuple[str, ...] = ()) -> Path:
    gen = tmp / "gen"
    if not gen.exists():
        generate(CHAIN, variant_specs("receiver-all", None), gen)
    exe = tmp / f"coll_check{len(extra)}{mpicc.parent.parent.name}"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(mpicc), *CFLAGS, *extra, "-DAAPC_INTERCEPT", f"-I{gen}", str(HARNESS), *sources]
    subprocess.run([*cmd, "-o", str(exe)], check=True, timeout=300)
    return exe


def passed(proc, at_least: int) -> None:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = [ln for ln in proc.stdout.splitlines() if ln.startswith("coll_check:")][-1]
    ok, failed = (int(x.split()[0]) for x in last.split(": ")[1].split(", "))
    assert failed == 0 and ok >= at_least, last


def routines(report: str) -> dict[str, set[str]]:
    """Per collective, the routines the report (AAPC_REPORT) says served its calls with data."""
    out: dict[str, set[str]] = {}
    for m in re.finditer(r"^  (MPI_\w+)\s+\d+\s+[\d,]+\s+[\d.]+\s+(.+)$", report, re.M):
        if "no data" not in m[2] or m[1] == "MPI_Barrier":
            out.setdefault(m[1], set()).add(m[2].split(" (")[0])
    return out


def sections(report: str) -> dict[str, dict[str, set[str]]]:
    """routines() per section of the report (AAPC_REPORT), keyed by the section's heading: the
    communicator(s), their world ranks, machines and ranks per machine."""
    parts = re.split(r"^((?:communicator|\d+ communicators) of .*)$", report, flags=re.M)
    return {head: routines(body) for head, body in zip(parts[1::2], parts[2::2], strict=True)}


@pytest.fixture(scope="module")
def exe(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("coll"))


def test_default_serves_machines_with_several_ranks_and_leaves_one_per_machine(exe):
    """Blocks of 2 ranks on 2 machines, defaults: on the halves (one machine each) the shared-
    memory collectives; across machines (WORLD, the dup, the reversed split) ours where it was
    measured to gain (Allgather always, Bcast and Reduce from 8 KB with the leaders in a
    pipelined chain, Allreduce from 64 KB in lanes), the library's below that, for Reduce's
    non-commutative matrices and for Barrier; the parity split (one rank per machine) the
    leaders' ways over the tree from the sizes where they were measured to gain there
    (Allgather from AAPC_COLL_SINGLE_RING_MIN, 16 KB in all: its 40 KB a ring; Bcast, Reduce
    and Allreduce from their AAPC_COLL_MIN_* sizes), the library's below and for Barrier;
    every result right."""
    proc = run(exe, BLOCKS, env={"AAPC_REPORT": "1"})
    passed(proc, 600)
    served = routines(proc.stderr)
    for c in COLLECTIVES:
        assert "shared memory" in served[c], (c, served[c])
    single = [v for h, v in sections(proc.stderr).items() if " 1 rank per machine" in h]
    assert len(single) == 1, proc.stderr[-3000:]  # the parity split
    parity = single[0]
    ring = "leader-based, shared segment, ring among the leaders"
    assert parity["MPI_Allgather"] == {ring, "library: one rank per machine"}, parity
    chain = "leader-based, shared segment, pipelined chain among the leaders"
    for c in ("MPI_Bcast", "MPI_Reduce"):
        assert {chain, f"library: below AAPC_COLL_MIN_{c[4:].upper()}"} <= parity[c], parity
    assert "library: below AAPC_COLL_MIN_ALLREDUCE" in parity["MPI_Allreduce"], parity
    assert len(parity["MPI_Allreduce"]) > 1, parity  # 72 KB of pairs: ours
    assert parity["MPI_Barrier"] == {"library: one rank per machine"}, parity
    assert ring in served["MPI_Allgather"], proc.stderr[-3000:]
    lanes = "leader-based, shared segment, lanes: a ring per local rank"
    assert lanes in served["MPI_Allreduce"], proc.stderr[-3000:]
    for c in ("MPI_Bcast", "MPI_Reduce"):
        chain = "leader-based, shared segment, pipelined chain among the leaders"
        assert chain in served[c], (c, proc.stderr[-3000:])
    assert "library: a non-commutative operation" in served["MPI_Reduce"], served
    for c in ("MPI_Bcast", "MPI_Allreduce", "MPI_Reduce", "MPI_Barrier"):
        assert f"library: below AAPC_COLL_MIN_{c[4:].upper()}" in served[c], (c, served[c])
    assert "leader-based, shared segment" in served["MPI_Allgather"], served  # small blocks
    want = {PER_MACHINE, "library: one machine", "library: one rank per machine"}
    for c in SCATTERS:  # across machines ours at every size, on one machine the library's
        assert want <= served[c], (c, served[c])
    assert "aapcgen:" not in proc.stderr.replace("aapcgen report", ""), proc.stderr[-2000:]


def test_forced_ours_on_round_robin_and_unequal_placements(exe):
    """Five ranks, n3 running ranks 0, 2 and 4: WORLD is round robin with unequal counts; ours
    forced everywhere (AAPC_<COLLECTIVE>=hier), the non-commutative operation still combined in
    rank order (handed to the library where the ranks are not in blocks)."""
    proc = run(exe, MIXED, env={"AAPC_REPORT": "1", **HIER})
    passed(proc, 700)
    served = routines(proc.stderr)
    for c in COLLECTIVES:
        assert "leader-based, shared segment" in served[c], (c, served.get(c))
    for c in SCATTERS:
        assert PER_MACHINE in served[c], (c, served.get(c))
    # the matrices on round-robin communicators
    assert "library: the operation and datatype" in served["MPI_Allreduce"], served


def test_forced_ours_with_four_ranks_per_machine(exe):
    """Four ranks on each of 2 machines, ours forced: on MPI_COMM_WORLD (blocks of 4) and on the
    columns of the 4 x 2 process grid (MPI_Cart_sub: ranks 0, 2, 4, 6 and 1, 3, 5, 7, 2 ranks on
    each machine) every call with data served by the leaders, the matrices too (the ranks in
    blocks), every result right. Only those two communicators (COLL_CHECK_COMMS; the others'
    shapes run above): 8 processes on CI's 2 cores, about 20 s (the whole harness: 70 s)."""
    env = {"AAPC_REPORT": "1", "COLL_CHECK_COMMS": "world,columns", **HIER}
    proc = run(exe, FOURS, env=env)
    passed(proc, 550)  # WORLD alone: 258
    served = sections(proc.stderr)
    world = "communicator of 8 ranks (MPI_COMM_WORLD), world ranks 0-7: 2 machines, 4 ranks"
    columns = "2 communicators of 4 ranks, world ranks 0,2,4,6; 1,3,5,7: 2 machines, 2 ranks"
    heads = sorted(served, key=lambda h: not h.startswith(world))
    assert len(heads) == 2, heads  # no other communicator called a collective
    assert heads[0].startswith(world) and heads[1].startswith(columns), heads
    for head in heads:
        for c in COLLECTIVES:
            assert served[head][c] == {"leader-based, shared segment"}, (head, c, served[head])
        for c in SCATTERS:
            assert served[head][c] == {PER_MACHINE}, (head, c, served[head])


def test_rings_among_the_leaders(exe):
    """The leaders' step as rings over the tree (AAPC_<COLLECTIVE>=ring), down to vectors
    shorter than the ring (empty chunks) and machines of unequal parts (a ring Allgatherv);
    the non-commutative matrices keep the library's step (the ring combines in ring order)."""
    env = {"AAPC_REPORT": "1", **{k: "ring" for k in HIER if k not in RING_LESS}}
    env["COLL_CHECK_ONLY"] = "bcast,allgather,reductions"  # the collectives with a ring
    proc = run(exe, MIXED, env=env)
    passed(proc, 700)
    served = routines(proc.stderr)
    for c in ("MPI_Bcast", "MPI_Allgather", "MPI_Allreduce"):
        assert "leader-based, shared segment, ring among the leaders" in served[c], served[c]
    assert "leader-based, shared segment" in served["MPI_Allreduce"], served  # the matrices


def test_allreduce_in_lanes(exe):
    """AAPC_ALLREDUCE=lanes: every local rank a ring over the tree on its slice, on 3 machines
    of 2 ranks placed round robin (lanes in machine order, not rank order), down to vectors
    shorter than the lanes and rings (empty slices and chunks), in place too; machines of
    unequal sizes (MIXED) have no lanes and take the leaders' ring; the non-commutative
    matrices keep the library's step."""
    env = {"AAPC_REPORT": "1", "AAPC_ALLREDUCE": "lanes", "COLL_CHECK_ONLY": "reductions"}
    env["COLL_CHECK_COMMS"] = "world,reversed,parity"  # parity: one rank per machine
    lanes = "leader-based, shared segment, lanes: a ring per local rank"
    proc = run(exe, n(3, 7, 11, 3, 7, 11), env=env)
    passed(proc, 300)
    served = sections(proc.stderr)
    six = next(v for h, v in served.items() if " of 6 ranks" in h)  # WORLD and its reversal
    assert lanes in six["MPI_Allreduce"], six
    assert "library: the operation and datatype" in six["MPI_Allreduce"]  # round robin matrices
    # sub-communicators with one rank per machine or unequal machines: no lanes
    assert all(
        lanes not in v.get("MPI_Allreduce", set()) for h, v in served.items() if v is not six
    )
    proc = run(exe, MIXED, env=env)
    passed(proc, 200)
    served = sections(proc.stderr)
    five = next(v for h, v in served.items() if " of 5 ranks" in h)
    assert "leader-based, shared segment, ring among the leaders" in five["MPI_Allreduce"], five
    assert all(lanes not in v.get("MPI_Allreduce", set()) for v in served.values())


def test_pipelined_chain_among_the_leaders(exe):
    """Bcast's and Reduce's leaders as a pipelined chain over the tree (AAPC_BCAST=chain,
    AAPC_REDUCE=chain) in chunks of 1000 bytes (AAPC_COLL_CHAIN_CHUNK): messages of one chunk,
    of many with a short last one (20000 and 100000 ints), from every root's machine, on
    round-robin unequal machines; the non-commutative matrices keep the library's step."""
    env = {"AAPC_REPORT": "1", "AAPC_BCAST": "chain", "AAPC_REDUCE": "chain"}
    env |= {"AAPC_COLL_CHAIN_CHUNK": "1000", "COLL_CHECK_ONLY": "bcast,reductions"}
    proc = run(exe, MIXED, env=env)
    passed(proc, 500)
    served = routines(proc.stderr)
    chain = "leader-based, shared segment, pipelined chain among the leaders"
    assert chain in served["MPI_Bcast"] and chain in served["MPI_Reduce"], served
    assert "leader-based, shared segment" in served["MPI_Reduce"], served  # the matrices


def test_settings_that_differ_between_ranks_take_the_defaults(exe):
    """Half the ranks ask for ours from 1 byte as a pipelined chain of 1000-byte chunks (the
    default: from 8 KB, chunks of 4 KB), half set only a malformed AAPC_COLL_MAX_BYTES: each
    rank's own sizes would make different choices (a rank in the library's MPI_Bcast, its peer
    in the leaders' chain: a hang, as this test did before the sizes were agreed). The settings
    differ, so every rank takes the default sizes and says so; every result right, within the
    timeout."""
    mine = {"AAPC_COLL_MIN_BCAST": "1", "AAPC_COLL_CHAIN_MIN": "1", "AAPC_COLL_CHAIN_CHUNK": "1000"}
    cmd = [str(BIN / "mpiexec")]
    for r, m in enumerate(BLOCKS):
        env = {"AAPC_MACHINE": m, **(mine if r < 2 else {"AAPC_COLL_MAX_BYTES": "1G"})}
        cmd += ([":"] if r else []) + ["-n", "1"]
        cmd += [x for k, v in env.items() for x in ("-env", k, v)] + [str(exe)]
    full = {**os.environ, "COLL_CHECK_ONLY": "bcast", "AAPC_REPORT": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=full)
    passed(proc, 100)
    assert "differ between the ranks of a communicator" in proc.stderr, proc.stderr[-3000:]
    # a size that is not a number of bytes: said once per process, the default taken
    said = [ln for ln in proc.stderr.splitlines() if "AAPC_COLL_MAX_BYTES=1G is not a number" in ln]
    assert len(said) == 2, proc.stderr[-3000:]


def run_in_netns(exe: Path, machines: list[str], env: dict[str, str], loss: int = 0):
    """run() inside a private network namespace that has only ``lo`` (root), nftables dropping
    ``loss`` % of its incoming UDP datagrams."""
    full = {**os.environ, **env, "ASAN_OPTIONS": "detect_leaks=0"}
    groups = [["-n", "1", "-env", "AAPC_MACHINE", m, str(exe)] for m in machines]
    argv = [
        str(BIN / "mpiexec"),
        *[x for i, g in enumerate(groups) for x in ([":"] if i else []) + g],
    ]
    setup = "ip link set lo up"
    if loss:
        setup += f" && printf '%s' '{nft_loss_rules(loss)}' | nft -f -"
    cmd = ["unshare", "-n", "sh", "-c", f'{setup} && exec "$@"', "sh", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=full)


MCAST = {
    "AAPC_REPORT": "1",
    "AAPC_BCAST": "mcast",
    "AAPC_ALLGATHER": "mcast",
    "AAPC_SCATTER": "mcast",
}
MCAST_ROUTINE = "leader-based, shared segment, multicast among the leaders"
MCAST_SCATTER = "leader-based, one multicast to the leaders"


@pytest.mark.root
def test_multicast_among_the_leaders(exe):
    """AAPC_BCAST=mcast, AAPC_ALLGATHER=mcast: only the leaders join the multicast group of
    their communicator, the other ranks of a machine read from the shared segment (seed 004
    section 6.3); AAPC_SCATTER=mcast: the root's leader multicasts the other machines' blocks
    to the leaders (seed 000's aggregate); over the loopback of a private network namespace
    (root)."""
    proc = run_in_netns(exe, BLOCKS, {**MCAST, "COLL_CHECK_ONLY": "bcast,allgather,scatter"})
    passed(proc, 300)
    served = routines(proc.stderr)
    for c in ("MPI_Bcast", "MPI_Allgather"):
        assert MCAST_ROUTINE in served[c], served
    assert MCAST_SCATTER in served["MPI_Scatter"], served


@pytest.mark.root
@pytest.mark.parametrize("loss", [1, 5, 20])
def test_multicast_among_the_leaders_under_loss(exe, loss):
    """The leaders' multicast with nftables dropping 1, 5 or 20 % of the UDP datagrams (the
    leaders retransmit; at 20 % in 1472-byte fragments, as the multicast tests do): every
    Bcast, Allgather and Scatter of the harness right, no hang (the run's timeout), on round-robin and
    unequal placements."""
    assert shutil.which("nft"), "nftables missing: make nftables"
    env = {**MCAST, "COLL_CHECK_ONLY": "bcast,allgather,scatter"}
    if loss == 20:
        env["AAPC_MCAST_FRAG"] = "1472"
    proc = run_in_netns(exe, MIXED, env, loss=loss)
    passed(proc, 150)
    served = routines(proc.stderr)
    for c in ("MPI_Bcast", "MPI_Allgather"):
        assert MCAST_ROUTINE in served[c], served
    assert MCAST_SCATTER in served["MPI_Scatter"], served  # unequal machines: Scatterv's


def test_native_and_disable_hand_every_call_to_the_library(exe):
    """AAPC_BCAST=native and AAPC_DISABLE=allgather,allreduce,reduce,barrier: every call the
    library's; a misspelt entry in AAPC_DISABLE is said once, on one line."""
    env = {
        "AAPC_REPORT": "1",
        "AAPC_BCAST": "native",
        "AAPC_DISABLE": "allgather,allreduce,reduce,barrier,scatter,scatterv,bcats",
    }
    proc = run(exe, BLOCKS, env=env)
    passed(proc, 600)
    served = routines(proc.stderr)
    native = {"library: AAPC_DISABLE or native"}
    assert all(served[c] == native for c in COLLECTIVES + SCATTERS), served
    said = [ln for ln in proc.stderr.splitlines() if "AAPC_DISABLE names 'bcats'" in ln]
    assert len(said) == len(BLOCKS), said  # once per process


def test_phased_leaders_under_sanitizers(tmp_path):
    """ASan/UBSan: ours forced, Allgather's leaders in the tree's phases (AAPC_ALLGATHER=phased:
    the library's MPI_Alltoall, run-time scheduled, with a send datatype of extent 0), Bcast's
    as a pipelined chain of 4 KB chunks."""
    exe = build(tmp_path, extra=tuple(SANITIZE))
    env = {**HIER, "AAPC_ALLGATHER": "phased", "AAPC_BCAST": "chain", "AAPC_REPORT": "1"}
    proc = run(exe, BLOCKS, env={**env, "AAPC_COLL_CHAIN_CHUNK": "4096"})
    passed(proc, 600)
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr
    served = routines(proc.stderr)
    phased = "leader-based, shared segment, phases among the leaders"
    assert phased in served["MPI_Allgather"], proc.stderr[-3000:]
    assert "leader-based, shared segment, pipelined chain among the leaders" in served["MPI_Bcast"]


@pytest.mark.openmpi
def test_open_mpi(tmp_path):
    """Under Open MPI: ours forced, Bcast's and Reduce's leaders as the pipelined chain."""
    exe = build(tmp_path, mpicc=OMPI / "mpicc")
    env = {"AAPC_REPORT": "1", **HIER, "AAPC_BCAST": "chain", "AAPC_REDUCE": "chain"}
    proc = run(exe, BLOCKS, env=env, ompi=True)
    passed(proc, 600)
    served = routines(proc.stderr)
    chain = "leader-based, shared segment, pipelined chain among the leaders"
    assert chain in served["MPI_Bcast"] and chain in served["MPI_Reduce"], served
    assert "leader-based, shared segment" in served["MPI_Allgather"], served
    assert PER_MACHINE in served["MPI_Scatter"] and PER_MACHINE in served["MPI_Scatterv"], served
