"""SimGrid SMPI export and runs: the platform loads, links are full duplex, generated routines
and SimGrid's own algorithms run on it, and simulated times respect the bottleneck bound.

Needs smpicc/smpirun (Debian libsimgrid-dev, `make simgrid`); skipped without them, except in
CI (CI=true), where their absence is a failure.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from aapcgen.cli import main
from aapcgen.codegen.generate import generate, variant_specs
from aapcgen.core.errors import InputError
from aapcgen.core.topology import load_topology
from aapcgen.measure.timer import seconds_by_candidate
from aapcgen.platforms.simgrid import (
    bottleneck_bound,
    check_mappings,
    compile_timer,
    export_simgrid,
    hostfile,
    platform_xml,
    run_simulated,
    smpicc_compile,
    smpirun_command,
)

ROOT = Path(__file__).resolve().parent.parent
TOPOS = ROOT / "topologies"
HAVE_SMPI = shutil.which("smpicc") is not None and shutil.which("smpirun") is not None

needs_smpi = pytest.mark.simgrid

TINY = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int in[64], out[64];
    for (int i = 0; i < size; i++) in[i] = rank * 100 + i;
    MPI_Alltoall(in, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD);
    int ok = 1;
    for (int i = 0; i < size; i++) ok = ok && out[i] == i * 100 + rank;
    printf("rank %d of %d %s\n", rank, size, ok ? "ok" : "WRONG");
    MPI_Finalize();
    return 0;
}
"""


def _routes(root: ET.Element) -> dict[tuple[str, str], list[tuple[str, str]]]:
    return {
        (r.get("src"), r.get("dst")): [(c.get("id"), c.get("direction")) for c in r]
        for r in root.iter("route")
    }


def test_two_switch_xml_is_full_duplex() -> None:
    topo = load_topology(TOPOS / "two-switch-4-4.yaml")
    root = ET.fromstring(platform_xml(topo))
    assert root.get("version") == "4.1"
    links = list(root.iter("link"))
    assert len(links) == 8 + 1
    assert all(lk.get("sharing_policy") == "SPLITDUPLEX" for lk in links)
    assert {h.get("id") for h in root.iter("host")} == set(topo.machines)
    assert {r.get("id") for r in root.iter("router")} == {"s0", "s1"}
    routes = _routes(root)
    assert routes[("s0", "s1")] == [("link:s0:s1", "UP")]
    assert routes[("s1", "s0")] == [("link:s0:s1", "DOWN")]
    assert routes[("n0", "s0")] == [("link:n0", "UP")]
    assert routes[("s0", "n0")] == [("link:n0", "DOWN")]
    assert all(r.get("symmetrical") == "NO" for r in root.iter("route"))


def test_rate_overrides_every_link() -> None:
    topo = load_topology(TOPOS / "two-level-256.yaml")
    root = ET.fromstring(platform_xml(topo, rate=1.25e9))
    assert {lk.get("bandwidth") for lk in root.iter("link")} == {"1250000000Bps"}
    plain = ET.fromstring(platform_xml(topo))
    assert {lk.get("bandwidth") for lk in plain.iter("link")} == {"125000000Bps"}


def test_hostfile_is_rank_order() -> None:
    topo = load_topology(TOPOS / "paper-fig1.yaml")
    assert hostfile(topo).splitlines() == list(topo.machines)
    two = load_topology(TOPOS / "two-switch-4-4-2ppn.yaml")  # ranks in blocks of 2 per machine
    assert hostfile(two).splitlines() == [m for m in two.machines for _ in range(2)]


def test_bottleneck_bound() -> None:
    fig1 = load_topology(TOPOS / "paper-fig1.yaml")  # 2 | 3 split, 100 Mbit/s
    assert bottleneck_bound(fig1, 65536) == pytest.approx(6 * 65536 / 12.5e6)
    big = load_topology(TOPOS / "two-level-1024.yaml")  # 10G uplinks: 32 x 992 on 1.25e9
    assert bottleneck_bound(big, 1000) == pytest.approx(32 * 992 * 1000 / 1.25e9)


@needs_smpi
def test_smpirun_command_flags() -> None:
    cmd = smpirun_command("p.xml", "h", 8, "./a.out", ["-x"], "pair", ["network/model:CM02"])
    assert cmd[cmd.index("-np") + 1] == "8"
    assert "--cfg=smpi/simulate-computation:no" in cmd
    assert "--cfg=smpi/alltoall:pair" in cmd
    assert cmd[-2:] == ["./a.out", "-x"]
    assert cmd.index("--cfg=network/model:CM02") < cmd.index("./a.out")
    assert not any("smpi/alltoall" in c for c in smpirun_command("p", "h", 2, "a"))


def test_cli_export(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["export", "simgrid", str(TOPOS / "two-switch-4-4.yaml"), "-o", str(tmp_path)])
    assert exc.value.code == 0
    assert (tmp_path / "two-switch-4-4.hosts").read_text().split() == [f"n{i}" for i in range(8)]
    ET.parse(tmp_path / "two-switch-4-4.xml")


@needs_smpi
def test_platform_loads_and_tiny_program_runs(tmp_path: Path) -> None:
    platform, hosts = export_simgrid(load_topology(TOPOS / "two-switch-4-4.yaml"), tmp_path)
    src = tmp_path / "tiny.c"
    src.write_text(TINY)
    exe = smpicc_compile([src], [], tmp_path / "tiny")
    run = run_simulated(platform, hosts, 3, exe, timeout=60)
    assert sorted(run.stdout.split("\n"))[1:] == [f"rank {r} of 3 ok" for r in range(3)]
    assert run.simulated_seconds is not None and run.simulated_seconds > 0


@needs_smpi
def test_simgrid_pair_algorithm_runs(tmp_path: Path) -> None:
    topo = load_topology(TOPOS / "two-switch-4-4.yaml")
    platform, hosts = export_simgrid(topo, tmp_path)
    src = tmp_path / "tiny.c"
    src.write_text(TINY)
    exe = smpicc_compile([src], [], tmp_path / "tiny")
    run = run_simulated(platform, hosts, 8, exe, alltoall_algorithm="pair", timeout=60)
    assert run.stdout.count(" ok\n") == 8


@needs_smpi
def test_generated_sender_all_respects_bound(tmp_path: Path) -> None:
    topo = load_topology(TOPOS / "paper-fig1.yaml")
    generate(topo, variant_specs("sender-all", None), tmp_path / "gen")
    exe = compile_timer(tmp_path / "gen", tmp_path / "timer")
    platform, hosts = export_simgrid(topo, tmp_path)
    msize = 65536
    args = ["--bytes", str(msize), "--repeats", "1", "--iters", "2", "--warmup", "1"]
    run = run_simulated(platform, hosts, topo.n_machines, exe, args, timeout=120)
    times = seconds_by_candidate(run.stdout)
    bound = bottleneck_bound(topo, msize)
    assert set(times) == {("native", msize), ("sender-all", msize)}
    for (name, _), seconds in times.items():
        assert min(seconds) >= bound, name
    # a contention-free schedule is not slower than a few times the bound on 5 machines
    assert times[("sender-all", msize)][0] < 3 * bound


VPROG = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "aapc_vregistry.h"
/* The run-time MPI_Alltoallv (level 1), called by name: SMPI's own MPI_Alltoallv takes
   precedence over a program's, so -DAAPC_INTERCEPT does not reach it there. Uneven counts
   (0 to 4 ints per pair), three calls, every int checked. */
static int count(int from, int to, int call) { return (from * 7 + to * 3 + call) % 5; }
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int *in = malloc(sizeof(int) * 4 * size), *out = malloc(sizeof(int) * 4 * size);
    aapc_alltoallv_fn level1 = aapc_vvariant_resolve(aapc_vvariants, aapc_nvvariants,
                                                     "level1-receiver-all", "native");
    for (int call = 0; call < 3; call++) {
        for (int j = 0, s = 0, r = 0; j < size; j++) {
            sc[j] = count(rank, j, call), sd[j] = s, s += sc[j];
            rc[j] = count(j, rank, call), rd[j] = r, r += rc[j];
            for (int k = 0; k < sc[j]; k++)
                out[sd[j] + k] = rank * 1000000 + j * 1000 + k * 10 + call;
        }
        for (int k = 0; k < 4 * size; k++)
            in[k] = -1;
        if (level1(out, sc, sd, MPI_INT, in, rc, rd, MPI_INT, MPI_COMM_WORLD) != MPI_SUCCESS)
            bad++;
        for (int j = 0; j < size; j++)
            for (int k = 0; k < rc[j]; k++)
                bad += in[rd[j] + k] != j * 1000000 + rank * 1000 + k * 10 + call;
    }
    printf("rank %d of %d %s\n", rank, size, bad ? "WRONG" : "ok");
    MPI_Finalize();
    return 0;
}
"""


@needs_smpi
def test_alltoallv_log_rounds_run_in_simgrid(tmp_path: Path, monkeypatch) -> None:
    """MPI_Alltoallv's log rounds in the tree's digits (4 x 4 on two-level-16x) receive
    messages of unknown length with MPI_Iprobe and MPI_Recv, which SMPI runs: uneven counts,
    three calls, every int as sent; rank 0's dump of the exchange's members shows the log
    rounds ran, in the tree's digits."""
    topo = load_topology(TOPOS / "two-level-16x.yaml")
    generate(topo, variant_specs("receiver-all", None), tmp_path / "gen")
    src = tmp_path / "vprog.c"
    src.write_text(VPROG)
    sources = [src, *sorted((tmp_path / "gen").glob("*.c"))]
    exe = smpicc_compile(sources, [tmp_path / "gen"], tmp_path / "vprog")
    platform, hosts = export_simgrid(topo, tmp_path)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    monkeypatch.setenv("AAPC_WAY", "loground")
    monkeypatch.setenv("AAPC_DUMP_SCHEDULE", str(dumps))
    run = run_simulated(platform, hosts, 16, exe, timeout=300)
    assert run.stdout.count(" ok\n") == 16, run.stdout + run.stderr[-2000:]
    dumped = [json.loads(p.read_text()) for p in dumps.glob("aapc-loground-*.json")]
    assert [d["radix"] for d in dumped] == [[4, 4]], dumped
    assert sorted(dumped[0]["members"]) == sorted(topo.machines)


def test_too_many_shared_malloc_mappings_are_said_before_the_run() -> None:
    """1024 ranks of 1 GiB blocks map 2^31 pieces of 1 MiB, past any vm.max_map_count: one
    line naming the sysctl to run, before SimGrid would abort mid-run; 2 ranks of 8 B pass."""
    check_mappings(2, 8)
    with pytest.raises(InputError) as err:
        check_mappings(1024, 1 << 30)
    assert "1024 ranks x 1073741824 B blocks need about 2147483648 memory mappings" in str(
        err.value
    )
    assert "sysctl -w vm.max_map_count=" in str(err.value) and "\n" not in str(err.value)
