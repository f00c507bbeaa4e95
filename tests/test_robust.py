"""Issue 19, input half: every bad topology, pattern and command line ends in exit status 2 and
one line ``aapcgen: <file>:<line>: <what is wrong>`` of at most 200 characters, checked before
anything of the input's size is allocated. One regression test per item the issue lists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aapcgen.alltoallv import pattern as pattern_module
from aapcgen.alltoallv.pattern import load_pattern
from aapcgen.cli import failure, main
from aapcgen.cli.generate import mpicc_of
from aapcgen.core import limits
from aapcgen.core.errors import MESSAGE_CHARS, AapcError, InputError, one_line
from aapcgen.core.topology import load_topology
from aapcgen.core.units import parse_bandwidth

ROOT = Path(__file__).resolve().parent.parent
FIG1 = str(ROOT / "topologies" / "paper-fig1.yaml")
TWO = str(ROOT / "topologies" / "two-switch-4-4.yaml")
BASE = "switches: [s0, s1]\nlinks: [[s0, s1]]\nmachines:\n  - {name: 'n[0-3]', switch: 's[0-1]'}\n"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def one_error(capsys, *argv: str, code: int = 2) -> str:
    """Run the CLI expecting a failure: the exit status, one line, no traceback, bounded."""
    status, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert status == code, (status, err)
    assert lines and lines[-1].startswith("aapcgen: "), err
    assert "Traceback" not in err
    assert len(lines[-1]) <= MESSAGE_CHARS, lines[-1]
    assert "ETA" not in err  # no benchmark ran
    return lines[-1]


def topo_error(tmp_path: Path, text: str, name: str = "t.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_topology(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    return message[len(str(path)) :]


# --------------------------------------------------------------------------- topology files


def test_deep_nesting_is_refused_before_parsing_it(tmp_path):
    message = topo_error(tmp_path, "switches: " + "[" * 600 + "]" * 600 + "\nmachines: []\n")
    assert message.startswith(":1: nested more than 64 levels deep")
    assert limits.YAML_DEPTH.env in message


def test_alias_bomb_is_refused_and_never_printed(tmp_path):
    items = ["&a0 [x,x,x,x,x,x,x,x,x,x]"]
    items += [f"&a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    text = "switches: [s0]\nmachines: [{name: a, switch: s0, rank: [" + ", ".join(items) + "]}]\n"
    message = topo_error(tmp_path, text)
    assert "expands to more than 250,000 nodes" in message and "x, x" not in message
    assert len(message) < MESSAGE_CHARS


def test_alias_within_the_limits_still_works(tmp_path):
    text = "bandwidth: &bw 1Gbit\nswitches: [s0]\nmachines:\n  - {name: 'n[0-1]', switch: s0, bandwidth: *bw}\n"
    (tmp_path / "ok.yaml").write_text(text)
    assert load_topology(tmp_path / "ok.yaml").n_machines == 2


def test_rank_of_5000_digits(tmp_path):
    text = "switches: [s0]\nmachines:\n  - {name: a, switch: s0, rank: " + "9" * 5000 + "}\n"
    message = topo_error(tmp_path, text + "  - {name: b, switch: s0}\n")
    assert message.startswith(":3:") and "a number of 5000 characters is too large" in message


def test_rank_too_large_but_short(tmp_path):
    text = "switches: [s0]\nmachines:\n  - {name: a, switch: s0, rank: " + "9" * 30 + "}\n"
    message = topo_error(tmp_path, text + "  - {name: b, switch: s0}\n")
    assert "out of range [0, 2)" in message


def test_machine_limit_is_checked_before_expanding(tmp_path):
    message = topo_error(
        tmp_path, "switches: [s0]\nmachines:\n  - {name: 'n[0-99999]', switch: s0}\n"
    )
    assert message.startswith(":3: machines[0] (n[0-99999]): 100,000 machines exceed the limit")
    assert "AAPC_MAX_MACHINES" in message
    # the range bound itself may be absurd: no int() of it, no list
    message = topo_error(
        tmp_path, "switches: [s0]\nmachines:\n  - {name: 'n[0-" + "9" * 5000 + "]'}\n"
    )
    assert "more than 18 digits" in message and len(message) < MESSAGE_CHARS


def test_machine_limit_counts_every_entry_and_can_be_raised(tmp_path, monkeypatch):
    monkeypatch.setenv("AAPC_MAX_MACHINES", "6")
    text = "switches: [s0]\nmachines:\n  - {name: 'a[0-3]', switch: s0}\n  - {name: 'b[0-3]', switch: s0}\n"
    assert "8 machines exceed the limit of 6" in topo_error(tmp_path, text)
    monkeypatch.setenv("AAPC_MAX_MACHINES", "8")
    (tmp_path / "ok.yaml").write_text(text)
    assert load_topology(tmp_path / "ok.yaml").n_machines == 8
    monkeypatch.setenv("AAPC_MAX_MACHINES", "lots")
    with pytest.raises(InputError, match=r"\$AAPC_MAX_MACHINES: expected a positive whole number"):
        load_topology(tmp_path / "ok.yaml")


def test_switch_limit_and_link_end_bound(tmp_path):
    message = topo_error(tmp_path, "switches: ['s[0-999999]']\nmachines: []\n")
    assert "switches exceed the limit" in message and "AAPC_MAX_SWITCHES" in message
    text = BASE + "  - {name: m, switch: s0}\n"
    message = topo_error(tmp_path, text.replace("[[s0, s1]]", "[['s[0-99999]', s1]]"))
    assert "names 100000 nodes; there are only 7" in message


def test_yaml_node_limit_can_be_raised(tmp_path, monkeypatch):
    monkeypatch.setenv("AAPC_MAX_YAML_NODES", "10")
    assert "expands to more than 10 nodes" in topo_error(tmp_path, BASE)
    monkeypatch.delenv("AAPC_MAX_YAML_NODES")
    (tmp_path / "ok.yaml").write_text(BASE)
    assert load_topology(tmp_path / "ok.yaml").n_machines == 4


def test_input_file_size_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("AAPC_MAX_INPUT_BYTES", "20")
    message = topo_error(tmp_path, BASE)
    assert "bytes exceed the limit of 20" in message and "AAPC_MAX_INPUT_BYTES" in message


def test_every_content_error_names_the_line(tmp_path):
    text = BASE + "  - {name: m, switch: s9}\n"
    assert topo_error(tmp_path, text) == ":5: machines[1] (m): unknown switch 's9'"
    assert topo_error(tmp_path, BASE.replace("links:", "lnks:")).startswith(":2: top level:")
    assert topo_error(tmp_path, BASE + "ranks_per_machine: 0\n").startswith(":5: ranks_per_machine")


def test_long_names_and_values_are_clipped(tmp_path):
    long = "n" * 100_000
    message = topo_error(tmp_path, f"switches: [s0]\nmachines:\n  - {{name: {long}, switch: s9}}\n")
    assert "unknown switch 's9'" in message and len(message) < MESSAGE_CHARS
    message = topo_error(
        tmp_path, "switches: [s0]\nmachines:\n  - {name: a, switch: [" + "x, " * 1000 + "]}\n"
    )
    assert "switch must be a string, got a list of 1000 items" in message


def test_topology_name_fits_c_names_and_file_names(tmp_path):
    message = topo_error(tmp_path, f"name: {'n' * 300}\n" + BASE)
    assert message.startswith(":1: name: 'nnn") and "longer than 64 characters" in message


def test_ranks_per_machine_guard_before_the_rank_level_proof(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = Path("rpm.yaml")
    path.write_text(
        "switches: [s0, s1]\nlinks: [[s0, s1]]\nranks_per_machine: 1024\n"
        "machines:\n - {name: 'n[0-63]', switch: 's[0-1]'}\n"
    )
    line = one_error(capsys, "verify", str(path))
    assert "65,536 MPI ranks" in line and "AAPC_MAX_RANKS" in line


def test_phase_slot_guard(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AAPC_MAX_PHASE_SLOTS", "100")
    for argv in (["sync", TWO], ["generate", TWO, "-o", str(tmp_path / "g")]):
        line = one_error(capsys, *argv)
        assert "16 phases x 8 machines" in line and "AAPC_MAX_PHASE_SLOTS" in line


def test_proof_work_guard(tmp_path, capsys):
    """A chain of 1024 switches, a machine on each: 3.6e8 link crossings to prove (40 s)."""
    path = tmp_path / "chain.yaml"
    path.write_text(
        "switches: ['c[0-1023]']\nmachines:\n  - {name: 'n[0-1023]', switch: 'c[0-1023]'}\n"
        "links:\n  - ['c[0-1022]', 'c[1-1023]']\n"
    )
    line = one_error(capsys, "verify", str(path))
    assert "360,008,704 link crossings" in line and "AAPC_MAX_CROSSINGS" in line


def test_limits_are_documented():
    doc = (ROOT / "docs" / "topology.md").read_text()
    for limit in limits.ALL:
        assert limit.env in doc, limit.env
    assert limits.MEMORY_ENV in doc


def test_memory_guard_before_scheduling(capsys, monkeypatch):
    monkeypatch.setenv("AAPC_MAX_MEMORY", "100M")
    for command in ("schedule", "verify"):
        line = one_error(capsys, command, str(ROOT / "topologies" / "two-level-1024.yaml"))
        assert line.endswith(
            "scheduling 1,024 machines needs about 164 MiB, more than the 100 MiB "
            "$AAPC_MAX_MEMORY allows"
        )
    monkeypatch.setenv("AAPC_MAX_MEMORY", "1G")
    assert run(capsys, "verify", TWO)[0] == 0
    monkeypatch.setenv("AAPC_MAX_MEMORY", "lots")
    assert "$AAPC_MAX_MEMORY: expected bytes such as 2G" in one_error(capsys, "verify", TWO)


def test_memory_guard_under_an_address_space_limit(tmp_path, capsys, monkeypatch):
    """Under ulimit -v 1 GiB, 4096 machines (1.6 GiB to schedule) stop at once, in one line."""
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda which: (2**30, resource.RLIM_INFINITY))
    monkeypatch.setattr(limits, "_held", lambda: 150 * 2**20)
    path = tmp_path / "star.yaml"
    path.write_text("switches: [s0]\nmachines:\n  - {name: 'n[0-4095]', switch: s0}\n")
    line = one_error(capsys, "verify", str(path))
    assert line.endswith(
        "scheduling 4,096 machines needs about 1.6 GiB, more than the 874 MiB the address-space "
        "limit (ulimit -v) allows"
    )


# --------------------------------------------------------------------------- patterns


def fig1_pattern_error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load_pattern(path, load_topology(FIG1))
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message
    assert len(message) < MESSAGE_CHARS + len(str(path))
    return message[len(str(path)) :]


def test_pattern_count_of_2_to_the_63(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("\n".join(",".join(["0"] * 4 + [str(2**63)]) for _ in range(5)))
    assert (
        fig1_pattern_error(path)
        == ":1: row 0, column 4: 9223372036854775808 bytes is more than the largest count 2^48"
    )
    np.save(tmp_path / "u.npy", np.full((5, 5), 2**64 - 1, dtype=np.uint64))
    assert "more than the largest count" in fig1_pattern_error(tmp_path / "u.npy")


def test_pattern_totals_cannot_overflow(tmp_path, monkeypatch):
    """No sum over the counts can pass 2^62 (here the bound is lowered to reach it with 5x5)."""
    monkeypatch.setattr(pattern_module, "MAX_TOTAL", 2**50)
    np.save(tmp_path / "t.npy", np.full((5, 5), 2**48, dtype=np.int64))
    assert fig1_pattern_error(tmp_path / "t.npy") == ": the counts add up to more than 2^50 bytes"


def test_empty_npy(tmp_path):
    (tmp_path / "e.npy").write_bytes(b"")
    assert fig1_pattern_error(tmp_path / "e.npy").startswith(": not a .npy array file")


def test_npy_shape_is_read_from_the_header_only(tmp_path):
    """A header that claims 10^5 x 10^5 is refused without reading (or allocating) data."""
    header = np.lib.format.header_data_from_array_1_0(np.zeros((1, 1)))
    header["shape"] = (100_000, 100_000)
    with open(tmp_path / "h.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
    assert fig1_pattern_error(tmp_path / "h.npy") == (
        ": pattern must be 5x5 (one row and column per machine), got 100000x100000"
    )


def test_npy_nan_and_fractions(tmp_path):
    np.save(tmp_path / "n.npy", np.full((5, 5), np.nan))
    assert "nan is not an integer byte count" in fig1_pattern_error(tmp_path / "n.npy")
    np.save(tmp_path / "f.npy", np.full((5, 5), 1.5))
    assert "1.5 is not an integer byte count" in fig1_pattern_error(tmp_path / "f.npy")


def test_csv_field_over_128_kb(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("0,0,0,0,0\n" + "1" * 200_000 + ",0,0,0,0\n")
    assert fig1_pattern_error(path).startswith(":2: malformed CSV: field larger than field limit")


def test_csv_too_many_rows_stops_reading(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("0,0,0,0,0\n" * 1000)
    assert fig1_pattern_error(path) == ":6: more than 5 rows (the pattern is 5x5)"


def test_generate_with_an_all_zero_pattern(tmp_path, capsys):
    path = tmp_path / "zero.csv"
    path.write_text("\n".join(",".join(["0"] * 5) for _ in range(5)))
    line = one_error(capsys, "generate", FIG1, "-o", str(tmp_path / "g"), "--alltoallv", str(path))
    assert "every count off the diagonal is 0" in line


# --------------------------------------------------------------------------- schedules


def test_verify_schedule_with_an_extra_empty_phase_is_not_optimal(tmp_path, capsys):
    _, out, _ = run(capsys, "schedule", FIG1, "--format", "json")
    data = json.loads(out)
    data["phases"].append([])
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    line = one_error(capsys, "verify", FIG1, "--schedule", str(path), code=1)
    assert line == (
        "aapcgen: verification FAILED: 7 phases listed (1 of them empty at the end), but the "
        "lower bound (largest link load) is 6"
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"phases": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        (
            '{"machines": ["n0","n1","n2","n3","n4"], "phases": [[[0, ' + "9" * 5000 + "]]]}",
            "malformed JSON",
        ),
        (
            '{"machines": ["n0","n1","n2","n3","n4"], "phases": [[[0, 99999999999999999999]]]}',
            "ranks 0 to 4",
        ),
    ],
)
def test_bad_schedule_json(tmp_path, capsys, text, words):
    path = tmp_path / "s.json"
    path.write_text(text)
    assert words in one_error(capsys, "verify", FIG1, "--schedule", str(path))


# --------------------------------------------------------------------------- command line


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("/proc/aapc-out", "cannot write there"),
        ("/dev/full", "No space left on device"),
        ("{tmp}/missing/s.txt", "does not exist"),
    ],
)
def test_schedule_output_paths(tmp_path, capsys, target, words):
    line = one_error(capsys, "schedule", FIG1, "-o", target.format(tmp=tmp_path))
    assert words in line


@pytest.mark.parametrize("command", ["generate", "export"])
@pytest.mark.parametrize(
    ("target", "words"), [("/proc/aapc-out", "cannot write there"), ("/dev/full", "not a folder")]
)
def test_folder_outputs(tmp_path, capsys, command, target, words):
    argv = ["export", "simgrid", FIG1] if command == "export" else ["generate", FIG1]
    assert words in one_error(capsys, *argv, "-o", target)


def test_build_into_a_missing_folder(tmp_path, capsys):
    line = one_error(capsys, "build", FIG1, "-o", str(tmp_path / "missing/dir/lib.so"))
    assert line.endswith("missing/dir does not exist")


def test_bench_output_is_checked_before_the_benchmark(capsys):
    code, _, err = run(capsys, "bench", FIG1, "-o", "/proc/aapc-bench-out", "--sizes", "1K")
    assert code == 2 and "-o /proc/aapc-bench-out: cannot write there" in err
    assert "ETA" not in err and "peak" not in err  # the benchmark did not start


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "simgrid", FIG1, "-o", "{tmp}", "--rate", "fast"],
        ["export", "simgrid", FIG1, "-o", "{tmp}", "--rate", "nan"],
        ["generate", FIG1, "-o", "{tmp}", "--variant", "sender-partial", "--block-size", "9" * 30],
        ["bench", FIG1, "--sizes", "0"],
        ["bench", FIG1, "--sizes", "3G"],
        ["bench", FIG1, "--max-iters", "0"],
        ["bench", FIG1, "--repeats", "0"],
        ["bench", FIG1, "--timeout", "-1"],
        ["bench", FIG1, "--timeout", "nan"],
        ["bench", FIG1, "--target-seconds", "inf"],
        ["bench", FIG1, "--backend", "emulate", "--prefix", "Bad-Prefix"],
        ["bench", FIG1, "--backend", "emulate", "--queue", "10"],
        ["bench", FIG1, "--backend", "emulate", "--queue", "9" * 25],
        ["tune", FIG1, "--dry-run", "--sizes", "0"],
        ["tune", FIG1, "--dry-run", "--budget", "nan"],
        ["tune", FIG1, "--dry-run", "--validate-repeats", "-1"],
        ["bench-alltoallv", FIG1, "builtin:table3", "-o", "{tmp}", "--settle", "nan"],
        ["bench-alltoallv", FIG1, "builtin:table3", "-o", "{tmp}", "--scale", "9" * 20],
        ["bench-mcast", FIG1, "--frag", "0"],
        ["bench-mcast", FIG1, "--target-seconds", "nan"],
        ["vschedule", FIG1, "builtin:table3", "--threshold", "9" * 30],
        ["emulate", "up", FIG1, "--queue", "-5"],
    ],
)
def test_values_are_checked_before_any_work(tmp_path, capsys, argv):
    line = one_error(capsys, *(a.format(tmp=tmp_path / "out") for a in argv))
    option = [a for a in argv if a.startswith("--")][-1]
    assert line.startswith("aapcgen: ") and option in line, (option, line)


def test_the_help_example_rate_is_accepted():
    assert parse_bandwidth("100mbit") == parse_bandwidth("100Mbit") == 12.5e6
    assert parse_bandwidth("1gbit") == 125e6
    with pytest.raises(ValueError, match="ambiguous"):
        parse_bandwidth("100mbps")


def test_export_simgrid_with_a_tc_style_rate(tmp_path, capsys):
    code, out, _ = run(capsys, "export", "simgrid", FIG1, "-o", str(tmp_path), "--rate", "100mbit")
    assert code == 0 and "wrote" in out


def test_two_topologies_in_one_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = "g"
    assert run(capsys, "generate", FIG1, "-o", out)[0] == 0
    line = one_error(capsys, "generate", TWO, "-o", out)
    assert "holds another topology's routine (aapc_topo_paper_fig1_intercept.c)" in line
    assert "multiple definition of MPI_Alltoall" in line
    assert run(capsys, "generate", FIG1, "-o", out)[0] == 0  # the same topology again is fine


def test_mpicc_beside_the_running_python(tmp_path, monkeypatch):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python").write_text("")
    (fake / "mpicc").write_text("#!/bin/sh\n")
    (fake / "mpicc").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake / "python"))
    monkeypatch.delenv("MPICC", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert mpicc_of(None) == str(fake / "mpicc")
    (fake / "mpicc").unlink()
    with pytest.raises(AapcError, match="mpicc not found"):
        mpicc_of(None)


@pytest.mark.mpi
@pytest.mark.slow
def test_build_without_the_venv_on_path(tmp_path):
    """The README's `.venv/bin/aapcgen build` with only the system's PATH."""
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    env.pop("MPICC", None)
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "aapcgen"),
            "build",
            FIG1,
            "-o",
            str(tmp_path / "libaapc.so"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "libaapc.so").stat().st_size > 0


def test_argparse_errors_are_one_line(capsys):
    line = one_error(capsys, "bench", FIG1, "--repeats", "many")
    assert line.startswith("aapcgen: --repeats: expected a whole number, got 'many'")
    assert line.endswith("(see aapcgen bench --help)")
    line = one_error(capsys, "nonsense")
    assert line.startswith("aapcgen: COMMAND: invalid choice: 'nonsense'")


# --------------------------------------------------------------------------- the last resort


@pytest.mark.parametrize(
    ("exc", "code", "words"),
    [
        (InputError("x.yaml:3: " + "y" * 10_000), 2, "x.yaml:3: yyy"),
        (OSError(28, "No space left on device", "/dev/full"), 2, "/dev/full: No space left"),
        (MemoryError(), 2, "out of memory"),
        (RecursionError("deep"), failure.INTERNAL, "internal error: RecursionError"),
        (KeyboardInterrupt(), 130, "interrupted"),
    ],
)
def test_failure_report_is_one_bounded_line(capsys, exc, code, words):
    assert failure.report(exc) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err.strip()) <= MESSAGE_CHARS and words in err


def test_one_line_keeps_the_start_and_the_end():
    text = "f.yaml:9: " + "x" * 1000 + " the end"
    clipped = one_line(text)
    assert (
        len(clipped) == MESSAGE_CHARS
        and clipped.startswith("f.yaml:9: ")
        and clipped.endswith("the end")
    )
    assert one_line("a\n  b") == "a b"


def test_one_line_shortens_long_paths_before_cutting_words():
    """A clone in a deep folder must not cost the message its words."""
    deep = "/tmp/aapcgen-clone.5ZfM4B/aapcgen/" + "x/" * 40 + "topologies/two-switch-4-4.yaml"
    text = f"{deep}: topology.conf puts nodes only on leaf switches; --virtual-leaves adds one"
    clipped = one_line(text)
    assert clipped == (
        ".../topologies/two-switch-4-4.yaml: topology.conf puts nodes only on leaf switches; "
        "--virtual-leaves adds one"
    )
    assert one_line("see /a/b/c/d/e/f, " + "y" * 300).startswith("see .../e/f, y")
    assert one_line(f"short {deep[:20]}") == f"short {deep[:20]}"  # fits: untouched


# --------------------------------------------------------------------------- special files


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_not_read(tmp_path, capsys, device):
    """/dev/zero never ends: reading it was a hang (then all the memory)."""
    for name in ("t.yaml", "p.csv", "p.npy", "s.json", "hosts"):
        (tmp_path / name).symlink_to(device)
    assert one_error(capsys, "info", str(tmp_path / "t.yaml")).endswith(
        "is a device, not a topology file"
    )
    for pattern in ("p.csv", "p.npy"):
        line = one_error(capsys, "vschedule", FIG1, str(tmp_path / pattern))
        assert line.endswith("is a device, not a pattern file")
    line = one_error(capsys, "verify", FIG1, "--schedule", str(tmp_path / "s.json"))
    assert line.endswith("is a device, not a schedule file")
    line = one_error(capsys, "info", FIG1, "--hostfile", str(tmp_path / "hosts"))
    assert line.endswith("is a device, not a host file")


def test_a_fifo_nobody_writes_to_is_empty(tmp_path, capsys):
    os.mkfifo(tmp_path / "t.yaml")
    assert one_error(capsys, "info", str(tmp_path / "t.yaml")).endswith("t.yaml: empty file")


def test_a_topology_through_a_pipe(capsys):
    """`cat topo.yaml | aapcgen info /dev/stdin`: a pipe is read to its end."""
    read_end, write_end = os.pipe()
    os.write(write_end, Path(FIG1).read_bytes())
    os.close(write_end)
    try:
        code, out, _ = run(capsys, "info", f"/proc/self/fd/{read_end}")
    finally:
        os.close(read_end)
    assert code == 0 and "paper-fig1" in out and "5 machines" in out
