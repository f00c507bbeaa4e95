"""The Alltoallv schedulers in C (runtime_c/vsched) give the same schedules as aapcgen/alltoallv/schedule.py.

Every comparison is piece for piece (phase, src, dst, offset, length), plus the small phase, the
per-phase times, the cost and the bound compared bit for bit (the driver prints hex floats).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aapcgen.alltoallv.schedule import VSchedule, run_scheduler, table3_pattern
from aapcgen.codegen.vtree import render_vtree_c, render_vtree_text, vtree_tables
from aapcgen.core.model import Topology
from aapcgen.core.topology import load_topology
from tests.trees import figure1, make_topology, star_of_subtrees, switch_trees

ROOT = Path(__file__).resolve().parent.parent
VSCHED = ROOT / "runtime_c" / "vsched"
DRIVER = ROOT / "tests" / "c" / "vsched_driver.c"
SCHEDULERS = {"greedy": 0, "alltoall": 1, "balanced": 2}
WARN = ["-std=c11", "-Wall", "-Wextra", "-Werror"]
KB = 1024


def _compile(out: Path, extra: list[str], cc: str = "cc", main: Path = DRIVER) -> Path:
    sources = sorted(str(p) for p in VSCHED.glob("*.c"))
    cmd = [cc, *WARN, *extra, f"-I{VSCHED}", *sources, str(main), "-lm", "-o", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    return _compile(tmp_path_factory.mktemp("vsched") / "vsched_driver", ["-O2"])


@pytest.fixture(scope="module")
def asan_driver(tmp_path_factory) -> Path:
    flags = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    return _compile(tmp_path_factory.mktemp("vsched") / "vsched_asan", flags)


def _input(topo: Topology, pattern: np.ndarray, scheduler: int, threshold: int, chunk: int) -> str:
    tables = vtree_tables(topo, with_template=True)
    counts = " ".join(map(str, np.asarray(pattern, dtype=np.int64).ravel().tolist()))
    return render_vtree_text(tables) + f"{scheduler} {threshold} {chunk}\n{counts}\n"


def run_c(binary: Path, text: str) -> dict:
    res = subprocess.run([str(binary)], input=text, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""  # sanitizers report on stderr
    head: dict = {}
    times: list[float] = []
    pieces: list[list[int]] = []
    for line in res.stdout.splitlines():
        key, *rest = line.split()
        if key == "p":
            pieces.append([int(v) for v in rest])
        elif key == "t":
            times.append(float.fromhex(rest[1]))
        elif key in ("cost", "bound"):
            head[key] = float.fromhex(rest[0])
        else:
            head[key] = int(rest[0])
    head["pieces"] = np.array(pieces, dtype=np.int64).reshape(-1, 5)
    head["phase_time"] = times
    return head


def assert_same(c: dict, py: VSchedule, what: str) -> None:
    rows = np.stack([py.phase, py.src, py.dst, py.offset, py.length], axis=1).astype(np.int64)
    assert c["n_phases"] == py.n_phases, what
    assert c["n_pieces"] == len(py.src), what
    bad = np.flatnonzero((c["pieces"] != rows).any(axis=1))
    assert not len(bad), f"{what}: first differing piece {bad[:1]}: C {c['pieces'][bad[0]]}"
    small = np.flatnonzero(py.small)
    assert c["small_phase"] == (int(small[0]) if len(small) else -1), what
    assert c["phase_time"] == py.phase_time.tolist(), what  # bit for bit
    assert c["cost"] == py.cost and c["bound"] == py.bound, what


def compare(
    binary: Path, topo: Topology, p: np.ndarray, name: str, threshold: int = 0, chunk: int = 0
) -> VSchedule:
    py = run_scheduler(name, topo, p, threshold, chunk or None)
    c = run_c(binary, _input(topo, p, SCHEDULERS[name], threshold, chunk))
    assert_same(c, py, f"{topo.name} {name} threshold={threshold} chunk={chunk}")
    return py


def _patterns(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    hot = rng.integers(0, 1 << 14, (n, n))
    hot[:, 0] *= 64
    zero_rc = rng.integers(1, 1 << 18, (n, n))
    zero_rc[1, :] = 0
    zero_rc[:, n - 1] = 0
    return {
        "sparse": np.where(rng.random((n, n)) < 0.2, rng.integers(1, 1 << 20, (n, n)), 0),
        "dense": rng.integers(1, 1 << 20, (n, n)),
        "skewed": (rng.pareto(1.2, (n, n)) * 4096).astype(np.int64),
        "hotspot": hot,
        "zero-row-col": zero_rc,
    }


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_table3_identical(driver, name):
    topo = make_topology([], [0] * 16, name="single-16")
    p = table3_pattern()
    sched = compare(driver, topo, p, name)
    if name == "alltoall":
        assert sched.n_phases == 15
    for threshold in (1000, 20 * KB):
        compare(driver, topo, p, name, threshold=threshold)
    compare(driver, topo, p, name, chunk=4096)


@pytest.mark.parametrize(
    "file",
    ["paper-fig1", "two-switch-4-4", "chain-4x4", "tree-24", "deep-unbalanced", "single-32"],
)
def test_topologies_identical(driver, file):
    topo = load_topology(ROOT / "topologies" / f"{file}.yaml")
    for label, p in _patterns(topo.n_machines, 7).items():
        for name in SCHEDULERS:
            if name == "balanced" and label == "dense" and topo.n_machines > 16:
                continue  # the slow Python side; dense balanced is covered on smaller trees
            compare(driver, topo, p, name)
        compare(driver, topo, p, "greedy", threshold=5000)
        compare(driver, topo, p, "alltoall", threshold=5000)
    compare(driver, topo, _patterns(topo.n_machines, 7)["skewed"], "balanced", chunk=100_000)


def test_sanitizers_clean(asan_driver):
    cases = [
        (make_topology([], [0] * 16, name="single-16"), table3_pattern()),
        (figure1(), _patterns(5, 3)["dense"]),
        (load_topology(ROOT / "topologies" / "tree-24.yaml"), _patterns(24, 4)["sparse"]),
        (make_topology([0, 1], [0, 1, 2]), np.zeros((3, 3), dtype=np.int64)),
    ]
    for topo, p in cases:
        for name in SCHEDULERS:
            compare(asan_driver, topo, p, name)
            compare(asan_driver, topo, p, name, threshold=20000, chunk=3000)


def test_contracting_compiler_flags_identical(tmp_path):
    """-O3 -march=native -ffp-contract=fast (FMA allowed) must not change a single decision:
    the one multiply-subtract of balanced is kept apart on purpose."""
    flags = ["-O3", "-march=native", "-ffp-contract=fast"]
    binary = _compile(tmp_path / "vsched_o3", flags)
    topo = load_topology(ROOT / "topologies" / "deep-unbalanced.yaml")
    for label, p in _patterns(topo.n_machines, 11).items():
        compare(binary, topo, p, "balanced", chunk=0 if label != "skewed" else 2000)
    compare(binary, make_topology([], [0] * 16, name="single-16"), table3_pattern(), "balanced")


@st.composite
def cases(draw):
    topo = draw(switch_trees(min_machines=2, max_machines=12))
    n = topo.n_machines
    kind = draw(st.sampled_from(["sparse", "dense", "skewed"]))
    if kind == "sparse":
        sizes = st.one_of(st.just(0), st.just(0), st.just(0), st.integers(1, 70000))
    elif kind == "dense":
        sizes = st.integers(1, 70000)
    else:
        sizes = st.one_of(st.integers(0, 300), st.integers(1, 3000), st.integers(1, 1 << 22))
    p = np.array(draw(st.lists(sizes, min_size=n * n, max_size=n * n)), dtype=np.int64)
    p = p.reshape(n, n)
    if draw(st.booleans()):
        p[draw(st.integers(0, n - 1)), :] = 0  # a zero row
    if draw(st.booleans()):
        p[:, draw(st.integers(0, n - 1))] = 0  # a zero column
    threshold = draw(st.sampled_from([0, 0, 200, 5000]))
    chunk = draw(st.sampled_from([0, 0, 1, 1000, 65536]))
    return topo, p, threshold, chunk


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_trees_identical(driver, case):
    topo, p, threshold, chunk = case
    if chunk:  # at most ~500 quantum-long phases, or the Python side takes minutes
        chunk = max(chunk, int(p.sum()) // 500)
    for name in SCHEDULERS:
        compare(driver, topo, p, name, threshold=threshold, chunk=chunk)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(switch_trees(min_machines=20, max_machines=48), st.integers(0, 2**32 - 1))
def test_larger_random_trees_identical(driver, topo, seed):
    """More messages than a 64-bit word of positions, many switches: the grouped scan of
    all-to-all based and the phase bitsets of greedy (beyond 256 phases) on real trees."""
    n = topo.n_machines
    rng = np.random.default_rng(seed)
    p = np.where(rng.random((n, n)) < 0.6, rng.integers(1, 1 << 16, (n, n)), 0)
    p[rng.integers(n), :] = 0
    for name in ("greedy", "alltoall"):
        compare(driver, topo, p, name)
        compare(driver, topo, p, name, threshold=1 << 14)
    compare(driver, topo, p, "balanced", chunk=int(p.sum()) // 300 + 1)


def test_many_phases_identical(driver):
    """Over 256 phases: greedy's per-edge phase bitsets must grow (they start at 256)."""
    topo = star_of_subtrees([20, 20])
    p = np.random.default_rng(2).integers(1, 1 << 16, (40, 40))
    for name in ("greedy", "alltoall"):
        assert compare(driver, topo, p, name).n_phases > 256


def _driver_error(binary: Path, text: str) -> str:
    res = subprocess.run([str(binary)], input=text, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert res.stdout == "" and res.stderr.count("\n") == 1
    return res.stderr


def test_errors_name_the_offending_element(driver):
    topo = figure1()
    p = _patterns(5, 1)["dense"]
    p[2, 3] = -7
    assert "counts[2][3] = -7 is negative" in _driver_error(driver, _input(topo, p, 0, 0, 0))
    p[2, 3] = 5
    text = _input(topo, p, 0, 0, 0)
    assert "scheduler 7" in _driver_error(driver, text.replace("\n0 0 0\n", "\n7 0 0\n"))
    assert "threshold = -1" in _driver_error(driver, text.replace("\n0 0 0\n", "\n0 -1 0\n"))
    no_template = render_vtree_text(vtree_tables(topo, with_template=False))
    counts = " ".join(map(str, p.ravel().tolist()))
    err = _driver_error(driver, no_template + f"1 0 0\n{counts}\n")
    assert "template" in err
    # greedy needs no template (ties then by (src, dst)); still a valid run
    res = subprocess.run(
        [str(driver), "--summary"],
        input=no_template + f"0 0 0\n{counts}\n",
        text=True,
        capture_output=True,
    )
    assert res.returncode == 0 and "n_phases" in res.stdout
    tables = vtree_tables(topo, with_template=True)
    cyc = dict(tables, parent=tables["parent"].copy(), up_bw=tables["up_bw"] + 1.0)
    cyc["parent"][5] = 6  # switch 0 (the root) now hangs below switch 1, which hangs below it
    err = _driver_error(driver, render_vtree_text(cyc) + f"0 0 0\n{counts}\n")
    assert "0 nodes have parent -1" in err
    cyc["parent"][7] = -1  # a root elsewhere, and a cycle 5 -> 6 -> 5
    err = _driver_error(driver, render_vtree_text(cyc) + f"0 0 0\n{counts}\n")
    assert "cycle" in err
    bw = dict(tables, up_bw=tables["up_bw"].copy())
    bw["up_bw"][3] = 0.0
    assert "up_bw[3]" in _driver_error(driver, render_vtree_text(bw) + f"0 0 0\n{counts}\n")


def test_rendered_c_tables_compile_and_schedule(tmp_path):
    """render_vtree_c output, compiled with -Werror, schedules Table 3 on chain-4x4 exactly as
    Python does (the way the generator will embed a topology)."""
    topo = load_topology(ROOT / "topologies" / "chain-4x4.yaml")
    p = table3_pattern(topo.n_machines)
    counts = ", ".join(map(str, p.ravel().tolist()))
    main = tmp_path / "tables_main.c"
    main.write_text(
        '#include <stdio.h>\n#include "aapc_vsched.h"\n'
        + render_vtree_c(vtree_tables(topo, with_template=True), "chain")
        + f"static const long long counts[] = {{{counts}}};\n"
        "int main(void)\n{\n"
        "    for (int s = 0; s < 3; s++) {\n"
        "        aapc_vsched v;\n"
        "        if (aapc_vsched_run(&chain, counts, s, 0, 0, &v) != 0)\n"
        "            return 1;\n"
        '        printf("%d %lld %a %a\\n", v.n_phases, v.n_pieces, v.cost, v.bound);\n'
        "        aapc_vsched_free(&v);\n"
        "    }\n"
        "    return 0;\n}\n"
    )
    binary = _compile(tmp_path / "tables_main", ["-O2"], main=main)
    out = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for line, name in zip(out.stdout.splitlines(), SCHEDULERS):
        phases, pieces, cost, bound = line.split()
        py = run_scheduler(name, topo, p)
        assert (int(phases), int(pieces)) == (py.n_phases, len(py.src))
        assert (float.fromhex(cost), float.fromhex(bound)) == (py.cost, py.bound)


@pytest.mark.mpi
def test_builds_with_mpicc(tmp_path, driver):
    mpicc = str(ROOT / ".venv" / "bin" / "mpicc")
    assert shutil.which(mpicc)
    binary = _compile(tmp_path / "vsched_mpicc", ["-O2"], cc=mpicc)
    topo = figure1()
    compare(binary, topo, _patterns(5, 9)["skewed"], "balanced")
