"""The seam between Python and C: the sync tables the C runtime builds at run time
(runtime_c/alltoallv/aapc_vtables.c, levels 1 and 2 of MPI_Alltoallv) go through the
independent sync checker (aapcgen/verify/alltoall.py verify_sync).

The C tables are read back the way the executor uses them: a sync fired after event entry E of
machine F (its send, sender-based; its receive, receiver-based) reaches machine T, which matches
its sync receives from F in posting order (MPI's non-overtaking rule), and the send entry that
waits for that posting is the sync's target."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_vsched_c import DRIVER, VSCHED, WARN, _input
from trees import grouped_tree, make_topology, switch_trees

from aapcgen.core.errors import VerificationError
from aapcgen.core.topology import load_topology
from aapcgen.verify.alltoall import verify_sync

ROOT = Path(__file__).resolve().parent.parent
ALLTOALLV = ROOT / "runtime_c" / "alltoallv"
COMMON = ROOT / "runtime_c" / "common"
KIND = {1: "sender", 2: "receiver"}


@pytest.fixture(scope="module")
def vdriver(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("vtables") / "vtables_driver"
    mpicc = Path(sys.executable).parent / "mpicc"
    sources = [*VSCHED.glob("*.c"), ALLTOALLV / "aapc_vtables.c"]
    cmd = [str(mpicc), *WARN, "-O1", "-g", "-fsanitize=address,undefined", "-DAAPC_WITH_VTABLES"]
    cmd += [f"-I{d}" for d in (VSCHED, ALLTOALLV, COMMON)]
    cmd += [*map(str, sources), str(DRIVER), "-lm", "-o", str(out)]
    subprocess.run(cmd, check=True, timeout=300)
    return out


def driver_lines(driver: Path, text: str, *args: str) -> list[str]:
    """The driver's output lines for ``text`` on stdin; it must succeed and say nothing else
    (ASan's leak check on)."""
    proc = subprocess.run(
        [str(driver), *args],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        env={"ASAN_OPTIONS": "detect_leaks=1"},
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc.stdout.splitlines()


def c_tables(
    driver: Path, text: str, sync: int, flag: str = "--vtables", extra: tuple[str, ...] = ()
) -> dict:
    t: dict = {"s": {}, "r": {}, "p": [], "f": defaultdict(list), "i": defaultdict(list), "w": {}}
    for line in driver_lines(driver, text, flag, str(sync), *extra):
        f = line.split()
        if f[0] == "s":
            t["s"][int(f[2])] = (int(f[1]), int(f[3]))
        elif f[0] == "r":
            t["r"][int(f[2])] = (int(f[1]), int(f[3]))
        elif f[0] == "p":
            t["p"].append(tuple(int(x) for x in f[1:4]))
        elif f[0] == "f":
            t["f"][int(f[1])].append(int(f[2]))
        elif f[0] == "i":
            t["i"][int(f[1])].append(int(f[3]))
        elif f[0] == "w":
            t["w"].setdefault((int(f[2])), []).append(int(f[1]))
    return t


def syncs_of(t: dict, kind: str) -> tuple[np.ndarray, ...]:
    """(from, trigger phase, to, target phase) of every sync, matched as the executor does."""
    events = t["s"] if kind == "sender" else t["r"]
    fired: dict[tuple[int, int], list[int]] = defaultdict(list)  # (F, T) -> trigger phases
    for e in sorted(t["f"]):  # a machine fires in entry order
        frm, phase = events[e]
        for to in t["f"][e]:
            fired[(frm, to)].append(phase)
    waiter: dict[tuple[int, int], int] = {}  # (T, posting index) -> target phase
    for j_and_e in t["w"].items():
        j, entries = j_and_e
        for e in entries:
            m, phase = t["s"][e]
            waiter[(m, j)] = phase
    rows = []
    for to, peers in t["i"].items():
        nth: dict[int, int] = defaultdict(int)
        for j, frm in enumerate(peers):
            k = nth[frm]
            nth[frm] += 1
            rows.append((frm, fired[(frm, to)][k], to, waiter[(to, j)]))
    for (frm, to), phases in fired.items():
        assert len(phases) == sum(1 for f in t["i"][to] if f == frm), "fired != posted"
    arr = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3]


CASES = [
    ("paper-fig1", None),
    ("two-switch-4-4", None),
    ("chain-4x4", None),
    ("tree-24", None),
    ("deep-unbalanced", None),
]


@pytest.mark.mpi
@pytest.mark.parametrize("name", [c[0] for c in CASES])
@pytest.mark.parametrize("sync", [1, 2])
def test_run_time_syncs_are_sufficient(vdriver, name, sync):
    """Uniform counts with the all-to-all based scheduler: the AAPC phases, one piece per
    message; the C syncs must order every contending pair (verify_sync, minimal=False)."""
    topo = load_topology(ROOT / "topologies" / f"{name}.yaml")
    n = topo.n_machines
    pattern = np.full((n, n), 4096, dtype=np.int64)
    t = c_tables(vdriver, _input(topo, pattern, 1, 0, 0), sync)
    phase, src, dst = (np.array(x, dtype=np.int64) for x in zip(*t["p"]))
    syncs = syncs_of(t, KIND[sync])
    proof = verify_sync(topo, phase, src, dst, KIND[sync], "all", 1, syncs, minimal=False)
    assert proof.required_pairs > 0 and len(syncs[0]) > 0  # pairs to order, and C ordered some


@pytest.mark.mpi
def test_a_removed_sync_is_caught(vdriver):
    topo = make_topology([0, 1], [0, 0, 1, 1, 2, 2])
    pattern = np.full((6, 6), 4096, dtype=np.int64)
    t = c_tables(vdriver, _input(topo, pattern, 1, 0, 0), 2)
    phase, src, dst = (np.array(x, dtype=np.int64) for x in zip(*t["p"]))
    syncs = syncs_of(t, "receiver")
    verify_sync(topo, phase, src, dst, "receiver", "all", 1, syncs, minimal=False)
    caught = 0
    for k in range(len(syncs[0])):  # the run-time tables keep some redundant syncs ...
        cut = tuple(np.delete(a, k) for a in syncs)
        try:
            verify_sync(topo, phase, src, dst, "receiver", "all", 1, cut, minimal=False)
        except VerificationError as exc:
            assert "insufficient" in str(exc)
            caught += 1
    assert caught > 0  # ... but not only redundant ones: the checker sees a missing one
    none = tuple(a[:0] for a in syncs)
    with pytest.raises(VerificationError, match="insufficient"):
        verify_sync(topo, phase, src, dst, "receiver", "all", 1, none, minimal=False)


@pytest.fixture(scope="module")
def rows_driver(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rows") / "cluster_driver"
    mpicc = Path(sys.executable).parent / "mpicc"
    src = ROOT / "runtime_c"
    cmd = [str(mpicc), *WARN, "-O1", "-g", "-fsanitize=address,undefined", "-DAAPC_WITH_VTABLES"]
    cmd += [f"-I{src / d}" for d in ("cluster", "alltoall", "alltoallv", "common", "vsched")]
    cmd += [str(ROOT / "tests/c/cluster_driver.c"), *map(str, (src / "cluster").glob("*.c"))]
    cmd += [str(src / "alltoallv/aapc_vtables.c"), str(src / "alltoall/aapc_alltoall_rows.c")]
    subprocess.run([*cmd, "-lm", "-o", str(out)], check=True, timeout=300)
    return out


def rows_input(topo, ranks: list[int]) -> str:
    index = {s: i for i, s in enumerate(topo.switches)}
    head = f"{len(topo.switches)} {topo.n_machines} {len(topo.links)} {len(ranks)}\n"
    body = " ".join(str(index[s]) for s in topo.machine_switch) + "\n"
    body += " ".join(f"{index[ln.a]} {index[ln.b]}" for ln in topo.links) + "\n"
    speeds = [*topo.machine_bandwidth, *(ln.bandwidth for ln in topo.links)]
    return head + body + " ".join(map(str, ranks)) + "\n" + " ".join(map(repr, speeds)) + "\n"


JOBS = [
    ("paper-fig1", [0, 1, 2, 3, 4]),
    ("chain-4x4", list(range(16))),
    ("chain-4x4", [0, 0, 5, 9, 9, 9, 13]),
    ("tree-24", [3, 7, 11, 19, 23, 2]),
    ("deep-unbalanced", [0, 1, 2, 3, 4, 5, 5]),
    # switch links faster than the machine links: capacity-aware phases, syncs per lane
    ("fat-4-4", list(range(8))),
    ("fat-4-4", [0, 0, 1, 4, 5, 5, 6, 7]),
    ("fat-4-4", [7, 1, 2, 6, 3]),
    ("two-level-1024", list(range(24, 72))),
]


@pytest.mark.mpi
@pytest.mark.parametrize("case", range(len(JOBS)))
@pytest.mark.parametrize("sync", [1, 2])
def test_per_rank_rows_syncs_are_sufficient(rows_driver, case, sync):
    """Each rank builds only its own rows and syncs (runtime_c/alltoall/aapc_alltoall_rows.c);
    put together, the syncs every rank fires match the ones every rank waits for (per source,
    in order) and order every contending pair of the job's schedule."""
    from aapcgen.alltoall.job import job_topology

    name, ranks = JOBS[case]
    topo = load_topology(ROOT / "topologies" / f"{name}.yaml")
    job = job_topology(topo, ranks)
    t = c_tables(rows_driver, rows_input(topo, ranks), sync, flag="--rows")
    phase, src, dst = (np.array(x, dtype=np.int64) for x in zip(*t["p"]))
    syncs = syncs_of(t, KIND[sync])
    proof = verify_sync(job, phase, src, dst, KIND[sync], "all", 1, syncs, minimal=False)
    assert proof.required_pairs > 0 and len(syncs[0]) > 0  # pairs to order, and C ordered some


@pytest.mark.mpi
@pytest.mark.parametrize("case", range(len(JOBS)))
@pytest.mark.parametrize("sync", [1, 2])
@pytest.mark.parametrize("window", [2, 5])
def test_per_rank_rows_windowed_syncs_are_sufficient(rows_driver, case, sync, window):
    """With AAPC_WINDOW = w the run-time rows order each message before the one w places later
    on its lane: proved for w phases in flight; they are not the plain rows' syncs, and without
    syncs the check fails."""
    from aapcgen.alltoall.job import job_topology

    name, ranks = JOBS[case]
    topo = load_topology(ROOT / "topologies" / f"{name}.yaml")
    job = job_topology(topo, ranks)
    text = rows_input(topo, ranks)
    t = c_tables(rows_driver, text, sync, flag="--rows", extra=("--window", str(window)))
    phase, src, dst = (np.array(x, dtype=np.int64) for x in zip(*t["p"]))
    syncs = syncs_of(t, KIND[sync])
    # raises unless no link can have more than w x its capacity in flight (the C rows may have
    # no sync at all when every lane is shorter than w)
    verify_sync(job, phase, src, dst, KIND[sync], "all", 1, syncs, minimal=False, window=window)
    plain = syncs_of(c_tables(rows_driver, text, sync, flag="--rows"), KIND[sync])
    assert sorted(zip(*(a.tolist() for a in syncs))) != sorted(zip(*(a.tolist() for a in plain)))
    if window == 2:  # (a window of 5 lets the smallest jobs run every phase at once)
        none = tuple(a[:0] for a in syncs)
        with pytest.raises(VerificationError, match="insufficient"):
            verify_sync(job, phase, src, dst, KIND[sync], "all", 1, none, minimal=False, window=2)


@pytest.mark.mpi
@pytest.mark.parametrize("name", ["chain-4x4", "tree-24", "two-switch-4-4"])
@pytest.mark.parametrize("label", ["sender-all-w3", "receiver-all-w4"])
def test_windowed_rows_are_the_planners_syncs(rows_driver, name, label):
    """One fact in two places: the C rows' windowed syncs on the whole cluster are exactly the
    Python planner's chain pairs not ordered by a rank's own program order (plan_sync with
    reduce=False: the rows skip the exact redundancy removal)."""
    from aapcgen.alltoall.phases import build_phases
    from aapcgen.alltoall.sync import plan_sync
    from aapcgen.alltoall.tree import analyze
    from aapcgen.alltoall.variants import variant_spec

    topo = load_topology(ROOT / "topologies" / f"{name}.yaml")
    spec = variant_spec(label)
    tree = analyze(topo)
    sched = build_phases(tree)
    py = plan_sync(tree, sched, spec, reduce=False)
    sync = 1 if spec.kind == "sender" else 2
    ranks = list(range(topo.n_machines))
    t = c_tables(
        rows_driver,
        rows_input(topo, ranks),
        sync,
        flag="--rows",
        extra=("--window", str(spec.window)),
    )
    c_phases = sorted(t["p"])
    py_phases = sorted(zip(sched.phase.tolist(), sched.src.tolist(), sched.dst.tolist()))
    assert c_phases == py_phases  # the same schedule, so the same lanes
    c_syncs = sorted(zip(*(a.tolist() for a in syncs_of(t, KIND[sync]))))
    py_syncs = sorted(zip(py.frm.tolist(), py.trigger.tolist(), py.to.tolist(), py.target.tolist()))
    assert c_syncs == py_syncs and len(c_syncs) > 0


def _rows_text(driver: Path, text: str, sync: int, window: int, seed: bool) -> list[str]:
    args = ["--rows", str(sync), "--window", str(window), *(["--seed", "1"] if seed else [])]
    return driver_lines(driver, text, *args)


@st.composite
def seed_jobs(draw: st.DrawFn) -> tuple[str, int, int]:
    """A random tree with one link speed (seed 002's phases), a random job on it (1-3 ranks on
    each of a subset of machines, in any order), a sync kind and a window."""
    topo = draw(switch_trees(min_machines=2, max_machines=40))
    machines = draw(st.permutations(range(topo.n_machines)))[: draw(st.integers(2, 24))]
    ranks = [m for m in machines for _ in range(draw(st.integers(1, 3)))]
    ranks = draw(st.permutations(ranks))
    return rows_input(topo, list(ranks)), draw(st.sampled_from([1, 2, 3])), draw(st.integers(1, 4))


@pytest.mark.mpi
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed_jobs())
def test_streamed_rows_are_the_stored_rows(rows_driver, job):
    """aapc_rows_build_seed (seed 002's phases streamed, none stored: the first call of large
    jobs) gives every rank exactly the rows and syncs of aapc_rows_build on the stored phases."""
    text, sync, window = job
    stored = _rows_text(rows_driver, text, sync, window, seed=False)
    streamed = _rows_text(rows_driver, text, sync, window, seed=True)
    assert streamed[-1] == "b seed"  # one link speed: the streamed build took every rank
    assert streamed[:-1] == stored


@pytest.mark.mpi
@pytest.mark.parametrize("case", range(len(JOBS)))
def test_streamed_rows_on_the_shipped_jobs(rows_driver, case):
    """The same on the contract's jobs: with faster switch links (fat-4-4, two-level-1024) the
    phases are the capacity-aware ones and the stored build serves every rank."""
    name, ranks = JOBS[case]
    topo = load_topology(ROOT / "topologies" / f"{name}.yaml")
    text = rows_input(topo, ranks)
    for sync in (1, 2):
        streamed = _rows_text(rows_driver, text, sync, 2, seed=True)
        assert streamed[:-1] == _rows_text(rows_driver, text, sync, 2, seed=False)
        uniform = len({*topo.machine_bandwidth, *(ln.bandwidth for ln in topo.links)}) == 1
        assert streamed[-1] == ("b seed" if uniform else "b stored"), (name, streamed[-1])


G = 125e6  # 1 Gbit/s in bytes/s


@st.composite
def grouped_jobs(draw: st.DrawFn) -> tuple[str, int, int, str]:
    """A tree of alike groups under a core (tests/trees.py grouped_tree) with faster switch
    links, one rank on every machine in a random order, a sync kind and a window; and which
    build may take it: "b seed" (seed 002's phases, one message per link and phase), "b stored"
    (capacity-aware phases, the core links not the bound) or either (the core links set the
    bound: the regime of cluster/aapc_cluster_groups.c, which takes most of them)."""
    from aapcgen.alltoall.capacity import capacity_model
    from aapcgen.alltoall.tree import analyze

    k, e, m = draw(st.integers(2, 5)), draw(st.integers(0, 3)), draw(st.integers(2, 5))
    core, agg = draw(st.sampled_from([2, 3, 4, 5, 8])), draw(st.sampled_from([1, 2, 3, 4, 8]))
    topo = grouped_tree(k, e, m, core * G, agg * G, G)
    tree = analyze(topo)
    n, group, lb = topo.n_machines, topo.n_machines // k, capacity_model(tree).lower_bound
    root = core < group and -(-group * (n - group) // core) == lb > n - 1
    expect = "b seed" if lb >= tree.load else "either" if root else "b stored"
    ranks = draw(st.permutations(range(n)))
    return (
        rows_input(topo, list(ranks)),
        draw(st.sampled_from([1, 2, 3])),
        draw(st.integers(1, 4)),
        expect,
    )


@pytest.mark.mpi
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(grouped_jobs())
def test_streamed_capacity_rows_are_the_stored_rows(rows_driver, job):
    """Where the core links set the bound, cluster/aapc_cluster_groups.c streams the
    capacity-aware phases (several messages per link and phase, syncs per lane) and
    aapc_rows_build_seed builds every rank's rows from them: exactly the stored build's; where
    the construction does not fit, or the bound is elsewhere, the stored build serves."""
    text, sync, window, expect = job
    stored = _rows_text(rows_driver, text, sync, window, seed=False)
    streamed = _rows_text(rows_driver, text, sync, window, seed=True)
    assert streamed[:-1] == stored
    assert streamed[-1] in ("b seed", "b stored") and expect in ("either", streamed[-1])


@pytest.mark.mpi
@pytest.mark.parametrize("shape", [(3, 0, 5, 2, 4), (4, 1, 6, 2, 3)])
@pytest.mark.parametrize("sync", [1, 2])
@pytest.mark.parametrize("window", [1, 2])
def test_grouped_rows_syncs_are_sufficient(rows_driver, shape, sync, window):
    """The streamed capacity-aware rows (the groups' construction takes these trees) put
    together: their syncs order every contending pair on every lane, for w phases in flight."""
    from aapcgen.alltoall.job import job_topology

    k, e, m, core, agg = shape
    topo = grouped_tree(k, e, m, core * G, agg * G, G)
    ranks = list(range(topo.n_machines))[::-1]  # ranks in reverse machine order
    text = rows_input(topo, ranks)
    t = c_tables(
        rows_driver, text, sync, flag="--rows", extra=("--window", str(window), "--seed", "1")
    )
    assert _rows_text(rows_driver, text, sync, window, seed=True)[-1] == "b seed"
    phase, src, dst = (np.array(x, dtype=np.int64) for x in zip(*t["p"]))
    syncs = syncs_of(t, KIND[sync])
    job = job_topology(topo, ranks)
    proof = verify_sync(job, phase, src, dst, KIND[sync], "all", 1, syncs, minimal=False,
                        window=window)  # fmt: skip
    assert proof.required_pairs > 0 and len(syncs[0]) > 0
