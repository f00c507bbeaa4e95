"""The aapcgen CLI: info, schedule (text and the JSON contract), verify, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aapcgen.cli import main

ROOT = Path(__file__).resolve().parent.parent
TOPOS = sorted((ROOT / "topologies").glob("*.yaml"))
SMALL = [t for t in TOPOS if "1024" not in t.name and "4096" not in t.name]


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_info_default_topology(capsys):
    code, out, err = run(capsys, "info")
    assert code == 0
    assert "built-in example 'paper-fig1'" in err
    assert "root        s3" in out
    assert "load        6 phases" in out
    assert "41.67 MB/s" in out  # 5*4*12.5e6/6


def test_info_json(capsys):
    code, out, _ = run(capsys, "info", str(ROOT / "topologies/chain-4x4.yaml"), "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert data["load"] == 64 and data["root"] == "s1"
    assert data["peak_bytes_per_s"] == pytest.approx(16 * 15 * 12.5e6 / 64)


def test_schedule_text_is_table4_shape(capsys):
    code, out, _ = run(capsys, "schedule")
    lines = out.splitlines()
    assert code == 0
    assert lines[1].split() == [
        "phase",
        "T0->",
        "T1->",
        "T2->",
        "local",
        "T0",
        "local",
        "T1",
        "local",
        "T2",
    ]
    assert lines[2].split() == ["0", "n0->n3", "n3->n2", "n2->n1", "n1->n0"]
    assert lines[5].split() == ["3", "n0->n4", "n3->n1", "n4->n3"]
    assert len(lines) == 2 + 6


def test_schedule_json_contract(capsys):
    code, out, _ = run(capsys, "schedule", "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert data["machines"] == ["n0", "n1", "n2", "n3", "n4"]
    assert data["root"] == "s3" and data["load"] == 6
    assert data["phases"][0] == [[0, 3], [1, 0], [2, 1], [3, 2]]
    assert sum(len(p) for p in data["phases"]) == 20


@pytest.mark.parametrize("topo", SMALL, ids=lambda p: p.stem)
def test_verify_every_small_topology(capsys, topo):
    code, out, _ = run(capsys, "verify", str(topo))
    assert code == 0
    assert out.startswith(f"verified {topo.stem}") and "optimal" in out


def test_verify_external_schedule_and_reject_mutation(capsys, tmp_path):
    _, out, _ = run(capsys, "schedule", "--format", "json")
    good = tmp_path / "good.json"
    good.write_text(out)
    fig1 = str(ROOT / "topologies/paper-fig1.yaml")
    code, out2, _ = run(capsys, "verify", fig1, "--schedule", str(good))
    assert code == 0 and "verified" in out2
    data = json.loads(out)
    data["phases"][1].append(data["phases"][0].pop(0))  # n0->n3 into phase 1: contends with n1->n4
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    code, _, err = run(capsys, "verify", fig1, "--schedule", str(bad))
    assert code == 1
    assert err.startswith("aapcgen: verification FAILED: contention in phase 1")
    assert len(err.strip().splitlines()) == 1


def test_bad_schedule_file_is_one_line(capsys, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"machines": ["n0"], "phases": []}')
    fig1 = str(ROOT / "topologies/paper-fig1.yaml")
    code, _, err = run(capsys, "verify", fig1, "--schedule", str(bad))
    assert code == 2 and "does not match" in err and len(err.splitlines()) == 1
    bad.write_text("{not json")
    code, _, err = run(capsys, "verify", fig1, "--schedule", str(bad))
    assert code == 2 and "malformed JSON" in err


def test_schedule_output_file(capsys, tmp_path):
    out = tmp_path / "s.json"
    code, stdout, _ = run(capsys, "schedule", "--format", "json", "-o", str(out))
    assert code == 0 and stdout == ""
    assert json.loads(out.read_text())["load"] == 6


def test_console_script_bad_input_no_traceback(tmp_path):
    """Through a real process: one line on stderr, exit status 2, no traceback."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\nbandwidth: 100Mbit\nswitches: [s0]\nmachines:\n  - {name: n0, switch: s9}\n  - {name: n1, switch: s0}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "aapcgen", "info", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert str(bad) in proc.stderr and "s9" in proc.stderr


def test_missing_file(capsys):
    code, _, err = run(capsys, "info", "/nonexistent/topo.yaml")
    assert code == 2 and "/nonexistent/topo.yaml" in err


def test_help_everywhere(capsys):
    for argv in (["--help"], ["info", "--help"], ["schedule", "--help"], ["verify", "--help"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and "usage: aapcgen" in out


def test_generate_warns_when_the_phases_cannot_reach_the_bound(capsys, tmp_path):
    """Uplinks 1.5x the machine links carry one message per phase (floor(1.5) = 1): each
    phase is as slow as a machine link, so the phases cannot use the uplinks' extra half;
    generate says so (and how far off). With 10x uplinks the capacity-aware phases reach the
    bound and there is no warning."""

    def fat(speed: str) -> Path:
        topo = tmp_path / f"fat{speed}.yaml"
        topo.write_text(
            f"name: fat{speed}\nbandwidth: 1Gbit\nswitches: [core, a, b]\n"
            "machines:\n  - {name: 'n[0-3]', switch: a}\n  - {name: 'm[0-3]', switch: b}\n"
            f"links:\n  - {{ends: [core, a], bandwidth: {speed}}}\n"
            f"  - {{ends: [core, b], bandwidth: {speed}}}\n"
        )
        return topo

    code, out, err = run(capsys, "generate", str(fat("1500Mbit")), "-o", str(tmp_path / "g"))
    assert code == 0 and "wrote" in out
    # 16 phases at 1/1G each against the uplink's 16 messages / 1.5G: 1.5x, 67%
    assert "the contention-free phases, run back to back, need at least 1.5x" in err
    assert "at most 67% of the peak" in err
    code, out, err = run(capsys, "generate", str(fat("10Gbit")), "-o", str(tmp_path / "f"))
    assert code == 0 and "warning" not in err
    code, out, err = run(
        capsys,
        "generate",
        str(ROOT / "topologies" / "two-switch-4-4.yaml"),
        "-o",
        str(tmp_path / "h"),
    )
    assert code == 0 and "warning" not in err


def test_job_views_and_their_bad_input(capsys, tmp_path):
    chain = str(ROOT / "topologies/chain-4x4.yaml")
    code, out, _ = run(capsys, "info", chain, "--hosts", "n[0-1],n5,n9,n13")
    assert code == 0 and "5 machines" in out and "load        6 phases" in out
    code, _, err = run(capsys, "schedule", chain, "--hosts", "n0,zz")
    assert code == 2 and err.strip() == "aapcgen: --hosts: host 'zz' is not a machine of chain-4x4"
    sched = tmp_path / "s.json"
    code, _, _ = run(capsys, "schedule", chain, "--format", "json", "-o", str(sched))
    code, _, err = run(capsys, "verify", chain, "--schedule", str(sched), "--hosts", "n0,n1")
    assert code == 2 and "drop --hosts/--hostfile" in err and len(err.splitlines()) == 1


def test_info_of_a_job_with_several_ranks_per_host_selects_as_the_runtime_does(capsys):
    """`aapcgen info --hosts 'n[0-7]:2'` (two ranks on each host, as $SLURM_TASKS_PER_NODE
    gives them) accounts for the selection of the job the runtime sees: 16 ranks, 2 per
    machine, the leaders among the ways; the same lines as the cluster declared with
    ranks_per_machine: 2. It used to price every rank as a machine of its own."""
    code, by_hosts, _ = run(
        capsys, "info", str(ROOT / "topologies/two-switch-4-4.yaml"), "--hosts", "n[0-7]:2"
    )
    assert code == 0
    code, declared, _ = run(capsys, "info", str(ROOT / "topologies/two-switch-4-4-2ppn.yaml"))
    assert code == 0

    def selection(out: str) -> list[str]:
        lines = out.splitlines()
        return lines[next(i for i, ln in enumerate(lines) if ln.startswith("selection")) :]

    assert selection(by_hosts) == selection(declared)
    assert "16 ranks (2 per machine)" in selection(by_hosts)[0] and "leaders" in by_hosts
    code, uneven, _ = run(
        capsys, "info", str(ROOT / "topologies/two-switch-4-4.yaml"), "--hosts", "n[0-3]:2,n[4-7]"
    )
    assert code == 0 and "12 ranks (1 to 2 per machine)" in uneven
    assert "among the ranks" in uneven and "the leaders'" not in uneven  # no aggregation
