"""A site's first hour: the documented flow works as written, the words name the real cause,
and a report shows what ran.

Fast tier: the generated names never collide with the runtime's (a topology named cluster,
comm, exec, hier, alltoall, phases, registry), generate lists exactly what it wrote, verify
takes several schedule files or a folder, --hosts/--hostfile place several ranks per machine as
mpiexec does, --variant takes every AAPC_VARIANT name, the link line and the compiler messages,
shipped examples by name, the Python API, the packaging.
MPI tier: the docs' site flow (import slurm -> build -> a preloaded program on a placed job),
topologies with the runtime's names build, and the report's counts against the calls a program
made (served, and each fallback with its cause), with one warning per job and cause.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import aapcgen
from aapcgen.alltoall.job import job_topology
from aapcgen.cli import main
from aapcgen.cli.generate import mpicc_of
from aapcgen.codegen.generate import (
    build_library,
    generate,
    intercept_default,
    link_lines,
    variant_specs,
)
from aapcgen.codegen.render import RESERVED_PREFIXES, runtime_sources, topology_c_name
from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.hostlist import (
    parse_hostlist_ranks,
    read_hostfile_ranks,
    slurm_tasks_per_node,
)
from aapcgen.core.topology import load_topology

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
RUNTIME_NAMES = ["cluster", "comm", "exec", "hier", "alltoall", "phases", "registry"]
REPORT_CHECK = ROOT / "tests" / "c" / "report_check.c"
PLAIN = ROOT / "tests" / "c" / "plain_alltoall.c"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"]

FOUR = """name: {name}
bandwidth: 100Mbit
switches: [s0, s1]
machines:
  - {{name: "m[0-1]", switch: s0}}
  - {{name: "m[2-3]", switch: s1}}
links: [[s0, s1]]
"""


def four(tmp: Path, name: str = "four") -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(FOUR.format(name=name))
    return path


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


# ------------------------------------------------------------------------ names and files


def test_the_runtime_names_nothing_in_the_generated_namespace():
    """runtime_c/ has no file, function, variable or macro the generated code could take."""
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, RESERVED_PREFIXES)) + r")\w*")
    runtime = ROOT / "runtime_c"
    for path in runtime.rglob("*.[ch]"):
        assert not path.name.startswith(RESERVED_PREFIXES), path
        found = pattern.search(path.read_text(errors="replace"))
        assert found is None, f"{path}: {found.group(0)}"


@pytest.mark.parametrize("name", RUNTIME_NAMES)
def test_a_topology_named_like_the_runtime_generates_apart_from_it(tmp_path, name):
    topo = load_topology(four(tmp_path, name))
    out = tmp_path / "gen"
    files = generate(topo, variant_specs("receiver-all", None), out).files
    runtime = {f.name: f.read_bytes() for f in runtime_sources()}
    assert sorted(f.name for f in files) == sorted(p.name for p in out.iterdir())
    assert len(files) == len({f.name for f in files})  # none written twice
    for f in files:  # the runtime's files are copied unchanged, never overwritten
        if f.name in runtime:
            assert f.read_bytes() == runtime[f.name], f.name
    own = [f for f in files if f.name not in runtime]
    assert own and all(f.name.startswith(f"aapc_{topology_c_name(name)}") for f in own)
    assert (out / f"aapc_topo_{name}.h").exists()


def test_generate_lists_exactly_what_it_wrote(tmp_path, capsys):
    out = tmp_path / "g"
    code, stdout, _ = cli(capsys, "generate", str(four(tmp_path, "cluster")), "-o", str(out))
    assert code == 0
    on_disk = sorted(p.name for p in out.iterdir())
    first, named = stdout.splitlines()[:2]
    assert first == f"wrote {len(on_disk)} files to {out}/ for cluster:"
    assert set(named.split()) == {n for n in on_disk if n.startswith("aapc_topo_cluster")}
    code, stdout, _ = cli(capsys, "generate", str(four(tmp_path, "cluster")), "-o", str(out), "-v")
    listed = stdout.splitlines()[1].split() + stdout.splitlines()[2].split()[1:]
    assert sorted(listed) == on_disk


def test_generate_fails_naming_a_file_it_cannot_write(tmp_path, capsys):
    out = tmp_path / "g"
    out.mkdir()
    (out / "aapc_topo_four.h").mkdir()  # a folder where the header goes
    code, _, err = cli(capsys, "generate", str(four(tmp_path)), "-o", str(out))
    assert code == 2 and "aapc_topo_four.h" in err and "Traceback" not in err


# ------------------------------------------------------------------------ verify, hosts, variants


def test_verify_takes_several_schedule_files_and_a_folder(tmp_path, capsys):
    cluster = str(ROOT / "topologies" / "chain-4x4.yaml")
    dump = tmp_path / "dump"
    dump.mkdir()
    for i, hosts in enumerate(["n0,n5,n9", "n0:2,n12"]):
        code, out, _ = cli(capsys, "schedule", cluster, "--hosts", hosts, "--format", "json")
        assert code == 0
        data = json.loads(out)
        job = job_topology(load_topology(cluster), [int(m[1:]) for m in _hosts(hosts)])
        data["rank_machines"] = [m.split("#")[0] for m in job.machines]
        (dump / f"aapc-schedule-1-{i}.json").write_text(json.dumps(data))
    files = sorted(str(p) for p in dump.iterdir())
    for given in (files, [str(dump)]):
        code, out, _ = cli(capsys, "verify", cluster, "--schedule", *given)
        assert code == 0 and len(out.splitlines()) == 2, out
        assert all(line.startswith("verified ") for line in out.splitlines())
    bad = json.loads(Path(files[0]).read_text())
    bad["phases"][0], bad["phases"][1] = bad["phases"][1] + bad["phases"][0], []
    (dump / "aapc-schedule-1-9.json").write_text(json.dumps(bad))
    code, out, err = cli(capsys, "verify", cluster, "--schedule", str(dump))
    assert code == 1 and len(out.splitlines()) == 2
    assert "aapc-schedule-1-9.json: verification FAILED" in err
    assert "1 schedule file(s) failed" in err


def _hosts(text: str) -> list[str]:
    return parse_hostlist_ranks(text)


def test_hosts_and_hostfiles_place_several_ranks_per_machine(tmp_path, capsys):
    assert parse_hostlist_ranks("n0,n0,n5") == ["n0", "n0", "n5"]
    assert parse_hostlist_ranks("n[0-1]:2,n9") == ["n0", "n0", "n1", "n1", "n9"]
    hostfile = tmp_path / "hosts"
    hostfile.write_text("n0:2\nn5 slots=3\nn9\n")
    assert read_hostfile_ranks(hostfile) == ["n0", "n0", "n5", "n5", "n5", "n9"]
    assert slurm_tasks_per_node("2(x2),1", 3) == [2, 2, 1]
    cluster = str(ROOT / "topologies" / "chain-4x4.yaml")
    expected = job_topology(load_topology(cluster), [0, 0, 5, 5, 5, 9])
    for option in (["--hostfile", str(hostfile)], ["--hosts", "n0:2,n5,n5,n5,n9"]):
        code, out, _ = cli(capsys, "info", cluster, *option, "--format", "json")
        info = json.loads(out)
        assert code == 0 and info["machines"] == list(expected.machines), out
        assert info["capacity"]["phases"] == 9  # n5's 3 ranks send to 3 others each: its link
    with pytest.raises(InputError, match="'0' is not a number of ranks"):
        parse_hostlist_ranks("n0:0")


@pytest.mark.parametrize("name", ["runtime-receiver-all", "auto", "sender-partial-4", "no-sync"])
def test_variant_takes_every_name_aapc_variant_takes(tmp_path, name):
    topo = load_topology(four(tmp_path))
    gen = generate(topo, variant_specs(name, None), tmp_path / "g", default=intercept_default(name))
    intercept = (tmp_path / "g" / "aapc_topo_four_intercept.c").read_text()
    registry = re.findall(r'\{"([^"]+)", aapc_alltoall_', intercept)
    assert name in registry
    runs = re.search(r'aapc_variant_for\(comm, "([^"]+)"\)', intercept).group(1)
    # a named run-time routine or auto runs by default; a precomputed variant runs under auto
    # when it has a run-time routine (no-sync), else itself (sender-partial-4)
    expected = "auto" if name == "no-sync" else name
    assert runs == gen.default == expected


def test_a_mistyped_variant_gets_the_closest_names(capsys):
    code, _, err = cli(capsys, "generate", "--variant", "reciever-all", "-o", "/nonexistent/x")
    assert code == 2 and "did you mean 'receiver-all'" in err


# ------------------------------------------------------------------------ build messages


def test_the_link_line_names_the_library_it_built():
    assert link_lines(Path("/opt/a/libaapc.so")) == [
        "  LDLIBS += -L/opt/a -Wl,-rpath,/opt/a -laapc"
    ]
    assert link_lines(Path("/opt/a/foo.so")) == ["  LDLIBS += /opt/a/foo.so -Wl,-rpath,/opt/a"]


def test_mpicc_messages_name_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("MPICC", "/nonexist/mpicc")
    with pytest.raises(AapcError, match=r"^\$MPICC /nonexist/mpicc: not found; install an MPI"):
        mpicc_of(None)
    monkeypatch.delenv("MPICC")
    with pytest.raises(AapcError, match=r"^--mpicc nompicc-here: not found on PATH"):
        mpicc_of("nompicc-here")
    text = tmp_path / "mpicc"
    text.write_text("not a program")
    with pytest.raises(AapcError, match="not an executable file"):
        mpicc_of(str(text))


def test_a_failed_compile_keeps_its_whole_message_and_folder(tmp_path):
    fake = tmp_path / "mpicc"
    long_path = "/very/long/path/" + "x" * 300 + "/aapc_file.c"
    fake.write_text(
        f"#!/bin/sh\necho 'In file included from {long_path}:1:' >&2\n"
        f"echo '{long_path}:3:5: error: something broke here' >&2\necho 'more context' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    topo = load_topology(four(tmp_path))
    with pytest.raises(AapcError) as exc:
        build_library(
            topo, variant_specs("receiver-all", None), tmp_path / "l.so", str(fake), print
        )
    log = Path(re.search(r"is in (\S+/compile\.log)", str(exc.value)).group(1))
    text = log.read_text()
    assert f"{long_path}:3:5: error: something broke here" in text and "more context" in text
    assert (log.parent / "aapc_topo_four.h").exists()  # the sources stay beside it
    assert "error: something broke here" in str(exc.value)
    subprocess.run(["rm", "-rf", str(log.parent)], check=True)


# ------------------------------------------------------------------------ examples, API, packaging


def test_shipped_examples_by_name(capsys):
    code, out, _ = cli(capsys, "info", "two-level-1024")
    assert code == 0 and out.startswith("topology    two-level-1024 ")
    code, _, err = cli(capsys, "info", "two-levl-1024")
    assert code == 2 and "did you mean two-level-1024" in err


def test_an_unknown_switch_gets_the_closest_name(tmp_path):
    path = tmp_path / "t.yaml"
    text = FOUR.format(name="t").replace("s1", "leaf-east")
    path.write_text(text.replace("switch: leaf-east}", "switch: laef-east}"))
    with pytest.raises(
        InputError, match=r"unknown switch 'laef-east' \(did you mean 'leaf-east'\?\)"
    ):
        load_topology(path)
    path.write_text(text.replace("[[s0, leaf-east]]", "[[s0, leaf-est]]"))
    with pytest.raises(InputError, match=r"unknown node 'leaf-est' \(did you mean 'leaf-east'\?\)"):
        load_topology(path)


def test_the_python_api(tmp_path):
    topo = aapcgen.load("two-switch-4-4")
    sched = aapcgen.schedule(topo)
    assert sched.n_phases == 16 and aapcgen.prove(topo, sched).startswith("verified")
    job = aapcgen.schedule(topo, hosts=["n0", "n0", "n5"])
    assert job.n_machines == 3 and len(job.src) == 6
    assert aapcgen.load().name == "paper-fig1"
    files = aapcgen.generate(topo, tmp_path / "g", "runtime-receiver-all")
    assert sorted(files) == sorted((tmp_path / "g").iterdir())
    for name in ("load", "schedule", "prove", "generate", "build"):
        assert getattr(aapcgen, name).__doc__, name
    with pytest.raises(aapcgen.InputError):
        aapcgen.load(tmp_path / "missing.yaml")


def test_import_aapcgen_is_light():
    code = "import sys, aapcgen; print(sorted(m for m in ('numpy', 'jinja2') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _toml_list(text: str, key: str) -> list[str]:
    """The strings of ``key = [...]`` in pyproject.toml (no TOML reader before Python 3.11)."""
    body = re.search(rf"^{key} = \[(.*?)\]", text, re.M | re.S).group(1)
    return re.findall(r'"([^"]+)"', body)


def test_packaging_extras():
    text = (ROOT / "pyproject.toml").read_text()
    names = [re.split(r"[<>=!~ \[]", d)[0].lower() for d in _toml_list(text, "dependencies")]
    assert names and "networkx" not in names and "mpich" not in names
    assert any(d.startswith("mpich") for d in _toml_list(text, "mpi"))
    assert any(d.startswith("networkx") for d in _toml_list(text, "test"))
    for path in (ROOT / "aapcgen").rglob("*.py"):  # the package itself never needs networkx
        assert "networkx" not in path.read_text(), path


# ------------------------------------------------------------------------ MPI: the site's hour


def mpmd(exe: Path, machines: list[str], env: dict[str, str], timeout: int = 240):
    """One rank per entry (AAPC_MACHINE per rank; None: not set), rank r first."""
    cmd = [str(BIN / "mpiexec")]
    for i, m in enumerate(machines):
        cmd += ([":"] if i else []) + ["-n", "1"]
        cmd += ["-env", "AAPC_MACHINE", m] if m else []
        cmd += [str(exe)]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **env}
    )


def report_rows(text: str) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(communicator heading, collective, routine) -> (calls, bytes) from a report."""
    rows: dict[tuple[str, str, str], tuple[int, int]] = {}
    heading = ""
    for line in text.splitlines():
        if not line.startswith(" "):
            heading = line.split(":")[0]
            continue
        m = re.match(r"  (MPI_\w+)\s+(\d+)\s+([\d,]+)\s+[\d.]+  (.*)$", line)
        if m:
            rows[(heading, m.group(1), m.group(4))] = (
                int(m.group(2)),
                int(m.group(3).replace(",", "")),
            )
    return rows


@pytest.fixture(scope="module")
def report_exe(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    topo = load_topology(four(tmp))
    gen = tmp / "gen"
    generate(topo, variant_specs("receiver-all", None), gen)
    exe = tmp / "report_check"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(BIN / "mpicc"), *CFLAGS, "-DAAPC_INTERCEPT", f"-I{gen}", str(REPORT_CHECK)]
    subprocess.run([*cmd, *sources, "-o", str(exe)], check=True, timeout=300)
    return exe


# the calls of tests/c/report_check.c on 4 ranks: WORLD 5 x 256 ints per pair, each half 3,
# MPI_COMM_SELF 2, MPI_Alltoallv 4 (rank r sends r + 1 ints to each rank), WORLD 1 of 0 ints
WORLD = "communicator of 4 ranks (MPI_COMM_WORLD), world ranks 0-3"
HALVES = "2 communicators of 2 ranks, world ranks 0-1; 2-3"
SELF = "4 communicators of 1 rank, world ranks 0; 1; 2; ..."
ALLTOALL_BYTES = 5 * 256 * 4 * 4 * 4  # calls x ints x bytes x ranks x ranks
HALF_BYTES = 2 * 3 * 256 * 4 * 2 * 2  # two halves x calls x ints x bytes x ranks x ranks
V_BYTES = 4 * sum((r + 1) * 4 * 4 for r in range(4))  # calls x per rank r: (r+1) ints to 4


@pytest.mark.mpi
@pytest.mark.slow
def test_report_counts_the_calls_served_on_placed_ranks(report_exe, tmp_path):
    """Every rank on its own machine (AAPC_MACHINE): auto runs the run-time routine on WORLD and
    on each half (the phases, forced: the choice by size is tests/test_select*); MPI_COMM_SELF
    goes to the library (a 1-rank communicator, no warning); the MPI_Reduce goes to the library
    with its reason (below AAPC_COLL_MIN_REDUCE)."""
    out = tmp_path / "report.txt"
    proc = mpmd(
        report_exe, ["m0", "m1", "m2", "m3"], {"AAPC_REPORT": str(out), "AAPC_WAY": "phases"}
    )
    assert proc.returncode == 0 and "report_check: ok" in proc.stdout, proc.stderr[-3000:]
    assert "aapcgen:" not in proc.stderr, proc.stderr  # nothing to warn about
    text = out.read_text()
    assert text.startswith("aapcgen report: 4 ranks on 4 machines (topology four)"), text
    rows = report_rows(text)
    carried = "auto (run-time, agreement carried)"  # small blocks: aapc_alltoall_carried.c
    assert rows[(WORLD, "MPI_Alltoall", carried)] == (5, ALLTOALL_BYTES), text
    assert rows[(WORLD, "MPI_Alltoall", "auto (no data: nothing to move)")] == (1, 0), text
    assert rows[(WORLD, "MPI_Alltoallv", "level1-receiver-all (run-time, job tree)")] == (
        4,
        V_BYTES,
    ), text
    assert rows[(HALVES, "MPI_Alltoall", carried)] == (6, HALF_BYTES), text
    self_row = "auto (MPI library): a communicator of 1 rank (the library's local copy)"
    assert rows[(SELF, "MPI_Alltoall", self_row)] == (4 * 2, 4 * 2 * 256 * 4), text
    # the harness's own MPI_Reduce of its verdict (16 bytes): the library's, below the size
    # from which the chain over the tree gains (one rank per machine too)
    assert rows[(WORLD, "MPI_Reduce", "library: below AAPC_COLL_MIN_REDUCE")] == (1, 4 * 4), text
    assert len(rows) == 6, text


@pytest.mark.mpi
@pytest.mark.slow
def test_report_counts_fallbacks_with_their_causes_and_warns_once_per_job(report_exe, tmp_path):
    """A mistyped AAPC_MACHINE on every rank: every MPI_Alltoall of WORLD and of the halves goes
    to the library, the report naming the cause on each row, and the job prints that cause once
    (not once per rank or per communicator)."""
    out = tmp_path / "report.txt"
    proc = mpmd(report_exe, ["m9x"] * 4, {"AAPC_REPORT": str(out)})
    assert proc.returncode == 0 and "report_check: ok" in proc.stdout, proc.stderr[-3000:]
    cause = "AAPC_MACHINE=m9x is not a machine of cluster four (did you mean 'm0'"
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")]
    assert len(warnings) == 1 and cause in warnings[0], proc.stderr
    rows = report_rows(out.read_text())
    fallback = {k: v for k, v in rows.items() if "(MPI library): " + cause in k[2]}
    assert fallback[(WORLD, "MPI_Alltoall", next(k[2] for k in fallback))] == (
        5,
        ALLTOALL_BYTES,
    )
    assert any(k[0] == HALVES and v == (6, HALF_BYTES) for k, v in fallback.items()), rows
    v_rows = [v for k, v in rows.items() if k[1] == "MPI_Alltoallv"]
    assert v_rows == [(4, V_BYTES)], rows


@pytest.mark.mpi
@pytest.mark.slow
def test_report_on_one_host_and_a_forced_precomputed_variant(report_exe, tmp_path):
    """All ranks on this one host (a workstation): the precomputed receiver-all runs WORLD in
    rank order; the halves do not match it (size named once); AAPC_REPORT=1 goes to stderr."""
    proc = mpmd(report_exe, [""] * 4, {"AAPC_REPORT": "1", "AAPC_VARIANT": "receiver-all"})
    assert proc.returncode == 0 and "report_check: ok" in proc.stdout, proc.stderr[-3000:]
    rows = report_rows(proc.stderr[proc.stderr.index("aapcgen report:") :])
    one_host = "receiver-all (precomputed, in rank order: all ranks on one host)"
    assert rows[(WORLD, "MPI_Alltoall", one_host)] == (5, ALLTOALL_BYTES), proc.stderr
    size = "communicator has 2 ranks; the precomputed schedule needs one on each of the "
    half = [v for k, v in rows.items() if k[0] == HALVES and size in k[2]]
    assert half == [(6, HALF_BYTES)], proc.stderr
    # once per job, or once per group of ranks meeting the cause at the same time: the halves
    warned = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen: ") and size in ln]
    assert 1 <= len(warned) <= 2, proc.stderr
    assert "communicator has 1 ranks" not in proc.stderr


@pytest.mark.mpi
@pytest.mark.slow
def test_no_report_without_aapc_report_and_a_mistyped_variant_named_once(report_exe):
    proc = mpmd(report_exe, ["m0", "m1", "m2", "m3"], {"AAPC_VARIANT": "reciever-all"})
    assert proc.returncode == 0 and "report_check: ok" in proc.stdout, proc.stderr[-3000:]
    assert "aapcgen report" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("aapcgen:")]
    assert lines == [
        "aapcgen: AAPC_VARIANT=reciever-all is not a variant generated for four (did you mean "
        "'receiver-all'?); using auto"
    ], proc.stderr


TOPOLOGY_CONF = """# a site's Slurm topology: two leaf switches under one spine
SwitchName=spine Switches=leaf[0-1]
SwitchName=leaf0 Nodes=node[0-1]
SwitchName=leaf1 Nodes=node[2-3]
"""


@pytest.mark.mpi
@pytest.mark.slow
def test_the_documented_site_flow(tmp_path, capsys, monkeypatch):
    """README / docs/topology.md as written: import slurm topology.conf -o cluster.yaml, build
    cluster.yaml -o libaapc.so, then an unchanged MPI program preloaded on a placed job, whose
    report names the run-time routine."""
    monkeypatch.chdir(tmp_path)
    Path("topology.conf").write_text(TOPOLOGY_CONF)
    assert cli(capsys, "import", "slurm", "topology.conf", "-o", "cluster.yaml")[0] == 0
    code, out, err = cli(capsys, "build", "cluster.yaml", "-o", "libaapc.so")
    assert code == 0, err
    assert f"LD_PRELOAD={tmp_path / 'libaapc.so'} mpiexec" in out
    exe = tmp_path / "plain"
    subprocess.run([str(BIN / "mpicc"), str(PLAIN), "-o", str(exe)], check=True, timeout=120)
    env = {"LD_PRELOAD": str(tmp_path / "libaapc.so"), "AAPC_REPORT": "1", "AAPC_WAY": "phases"}
    proc = mpmd(exe, ["node0", "node1", "node2", "node3"], env)
    assert proc.returncode == 0 and "plain_alltoall: ok" in proc.stdout, proc.stderr[-3000:]
    rows = report_rows(proc.stderr)
    assert rows[(WORLD, "MPI_Alltoall", "auto (run-time, agreement carried)")][0] == 3, proc.stderr


@pytest.mark.mpi
@pytest.mark.slow
def test_topologies_named_like_the_runtime_build(tmp_path):
    """One library per name (the issue's list), each compiled with -Wall -Werror (two at a
    time: the compiler is the cost)."""

    def one(name: str) -> Path:
        lib = tmp_path / f"lib{name}.so"
        build_library(
            load_topology(four(tmp_path, name)),
            variant_specs("receiver-all", None),
            lib,
            str(BIN / "mpicc"),
            lambda _: None,
        )
        return lib

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        libs = list(pool.map(one, RUNTIME_NAMES))
    for name, lib in zip(RUNTIME_NAMES, libs):
        symbols = subprocess.run(
            ["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True
        ).stdout
        assert f"aapc_alltoall_topo_{name}_receiver_all" in symbols
        assert re.search(r" T MPI_Alltoall$", symbols, re.M) and " T MPI_Finalize" in symbols


@pytest.mark.mpi
@pytest.mark.slow
def test_the_demo_prints_the_report(tmp_path):
    """make demo's run: plain_alltoall on the built-in example with AAPC_REPORT=1."""
    gen = tmp_path / "demo"
    aapcgen.generate(aapcgen.load(), gen, "all", (2,))
    exe = tmp_path / "plain"
    sources = sorted(str(p) for p in gen.glob("*.c"))
    cmd = [str(BIN / "mpicc"), *CFLAGS, "-DAAPC_INTERCEPT", f"-I{gen}", str(PLAIN), *sources]
    subprocess.run([*cmd, "-o", str(exe)], check=True, timeout=300)
    proc = subprocess.run(
        [str(BIN / "mpiexec"), "-n", "5", str(exe)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AAPC_REPORT": "1"},
    )
    assert proc.returncode == 0 and "plain_alltoall: ok" in proc.stdout
    heading = "communicator of 5 ranks (MPI_COMM_WORLD), world ranks 0-4"
    rows = report_rows(proc.stderr)
    one_host = "auto (precomputed, in rank order: all ranks on one host)"
    assert rows[(heading, "MPI_Alltoall", one_host)] == (3, 3 * 1000 * 4 * 5 * 5), proc.stderr
    # its MPI_Reduce of the verdict: all ranks on one host, so the shared-memory one
    assert rows[(heading, "MPI_Reduce", "shared memory")] == (1, 5 * 4), proc.stderr
    assert np.isclose(len(rows), 2)
