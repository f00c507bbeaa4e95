"""Capacity-aware phases in MPI (issue 18): the generated routines of trees whose switch links
are faster than the machine links (several messages per link and phase, syncs per lane), byte
for byte against PMPI_Alltoall: the precomputed variants on the whole cluster, and the run-time
routines on subsets with several ranks per machine; under ASan/UBSan and Open MPI; the dumped
run-time schedules proved by `aapcgen verify`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_cluster_mpi import BIN, CFLAGS, HARNESS, OMPI, SANITIZE, passed, run
from test_mpi import served

from aapcgen.codegen.generate import generate, variant_specs
from aapcgen.core.topology import load_topology

ROOT = Path(__file__).resolve().parent.parent
FAT = load_topology(ROOT / "topologies" / "fat-4-4.yaml")  # n0-n3 on a, m0-m3 on b; c = 4

pytestmark = pytest.mark.mpi


def build(tmp: Path, mpicc: Path = BIN / "mpicc", extra: tuple[str, ...] = (), topo=FAT) -> Path:  # noqa: ANN001
    gen = tmp / "gen"
    if not gen.exists():
        generate(topo, variant_specs("all", (2,)), gen)
    exe = tmp / f"check{len(extra)}{mpicc.parent.parent.name}"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(mpicc), *CFLAGS, *extra, f"-I{gen}", str(HARNESS), *sources, "-o", str(exe)]
    subprocess.run(cmd, check=True, timeout=300)
    return exe


@pytest.fixture(scope="module")
def exe(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("capacity"))


WHOLE = [f"n{i}" for i in range(4)] + [f"m{i}" for i in range(4)]


def test_precomputed_variants_on_the_whole_cluster(exe):
    """Every precomputed variant (7 phases, up to 4 messages per switch link and phase)."""
    proc = run(exe, WHOLE, "--max-bytes", "8192")
    passed(proc, 10 * 15)
    served(proc, parts=False, variants=10)


@pytest.mark.parametrize(
    "job",
    [
        WHOLE,
        ["n0", "n0", "n1", "m0", "m0", "m3"],  # 2 ranks on some machines
        ["m2", "n3", "m1", "n0", "m0"],  # a subset, reordered
    ],
    ids=["whole", "shared machines", "subset"],
)
def test_run_time_variants_on_jobs(exe, job):
    proc = run(exe, job, "--variant", "runtime-*", "--max-bytes", "8192")
    passed(proc, 4 * 14)
    assert "aapcgen:" not in proc.stderr, proc.stderr
    served(proc, parts=True, variants=4)


def test_dumped_capacity_schedule_verifies(exe, tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    proc = run(
        exe, WHOLE, "--variant", "runtime-receiver-all", "--max-bytes", "1000",
        env={"AAPC_DUMP_SCHEDULE": str(dump)},
    )  # fmt: skip
    passed(proc, 14)
    first = sorted(dump.glob("aapc-schedule-*.json"))[0]
    res = subprocess.run(
        [str(BIN / "aapcgen"), "verify", str(ROOT / "topologies/fat-4-4.yaml"), "--schedule",
         str(first)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert (
        "capacities up to 4 messages" in res.stdout and "7 phases = the lower bound 7" in res.stdout
    )


def test_sanitizers_clean(tmp_path):
    exe = build(tmp_path, extra=tuple(SANITIZE))
    proc = run(exe, ["n0", "n0", "n2", "m1", "m1", "m3"], "--variant", "runtime-*",
               "--max-bytes", "1000")  # fmt: skip
    passed(proc, 4 * 14)
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


@pytest.mark.openmpi
def test_open_mpi(tmp_path):
    exe = build(tmp_path, mpicc=OMPI / "mpicc")
    proc = run(exe, WHOLE, "--max-bytes", "1000", ompi=True)
    passed(proc, 10 * 14)
    served(proc, parts=False, variants=10)


# three groups of three machines under a core whose links carry two messages per phase: the
# core links set the bound (ceil(3 x 6 / 2) = 9 phases against 8 for the machines), so the
# run-time phases are runtime_c/cluster/aapc_cluster_groups.c's, streamed into each rank's rows
GROUPS_YAML = """name: grouped-3x3
bandwidth: 1Gbit
switches: [core, "a[0-2]"]
machines:
  - {name: "n[0-8]", switch: "a[0-2]"}
links:
  - {ends: [core, "a[0-2]"], bandwidth: 2Gbit}
"""


def test_run_time_routines_on_grouped_tree(tmp_path):
    """Every run-time variant (sender, receiver, barrier syncs) byte for byte on the whole
    grouped tree: the per-rank phases with one rank per machine, the leaders' machine-level
    phases with two; the dumped schedule is the construction's 9 optimal phases, proved by
    `aapcgen verify`."""
    topo_file = tmp_path / "grouped.yaml"
    topo_file.write_text(GROUPS_YAML)
    exe = build(tmp_path, topo=load_topology(topo_file))
    whole = [f"n{i}" for i in range(9)]
    proc = run(exe, whole, "--variant", "runtime-*", "--max-bytes", "4096",
               env={"AAPC_WAY": "phases"})  # fmt: skip
    passed(proc, 4 * 12)
    served(proc, parts=True, variants=4)
    proc = run(exe, [m for m in whole for _ in range(2)], "--variant", "runtime-*",
               "--max-bytes", "1000", env={"AAPC_WAY": "leaders"})  # fmt: skip
    passed(proc, 4 * 10)
    dump = tmp_path / "dump"
    dump.mkdir()
    proc = run(exe, whole, "--variant", "runtime-sender-all", "--max-bytes", "1000",
               env={"AAPC_DUMP_SCHEDULE": str(dump), "AAPC_WAY": "phases"})  # fmt: skip
    passed(proc, 5)
    files = sorted(dump.glob("aapc-schedule-*.json"))  # the world and the harness's subsets
    res = subprocess.run(  # every file in one call: one line of proof each
        [str(BIN / "aapcgen"), "verify", str(topo_file), "--schedule", *map(str, files)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    outs = [ln for ln in res.stdout.splitlines() if "so the schedule is optimal" in ln]
    assert files and len(outs) == len(files), res.stdout
    assert any("72 messages" in o and "9 phases = the lower bound 9" in o for o in outs), outs
