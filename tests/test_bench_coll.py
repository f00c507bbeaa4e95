"""tuning/bench_coll.py's pure parts: the candidates per mode, the calls chosen on one machine,
the arguments the one-machine mode refuses, and the tables' precision (no MPI, no root)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tuning"))

import bench_coll as bc  # noqa: E402


def test_one_machine_runs_only_the_ways_that_mean_something_there() -> None:
    names = [
        c.name for c in bc.candidates("bcast", bc.MPICH_ALGORITHMS["bcast"], bc.OURS_ONE_MACHINE)
    ]
    assert names[0] == "native-default" and names[-2:] == ["hier", "auto"]
    assert not {"ring", "mcast", "phased"} & set(names)
    scatter = [c for c in bc.candidates("scatter", ("binomial",), bc.OURS) if c.name == "mcast"]
    assert scatter and dict(scatter[0].env) == {"AAPC_SCATTER": "mcast"}


def test_calls_on_one_machine_follow_the_cores() -> None:
    """Oversubscribed: at least 2 ms a call, times ranks / cores; a core each: microseconds."""
    over = bc.expected_seconds_one_machine("barrier", 0, 8, 2)
    assert over == pytest.approx(bc.MIN_CALL_S * 4)
    alone = bc.expected_seconds_one_machine("bcast", 8, 2, 2)
    assert alone == pytest.approx(bc.MIN_CALL_ONE_MACHINE_S)
    big = bc.expected_seconds_one_machine("allgather", 1 << 20, 2, 2)
    assert big == pytest.approx((1 << 20) * 2 * 2 / bc.MACHINE_BPS)
    assert bc.choose_calls(alone, 0.25, 20000) == (20000, 1)


@pytest.mark.parametrize("flag", [["--rate", "1Gbit"], ["--ranks-per-machine", "4"]])
def test_one_machine_refuses_the_emulation_settings(monkeypatch, capsys, flag) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_coll.py", "--one-machine", "4", *flag])
    with pytest.raises(SystemExit) as e:
        bc.parse_args()
    assert e.value.code == 2
    assert "is for the emulation, not with --one-machine" in capsys.readouterr().err


def test_tables_show_microseconds() -> None:
    assert bc.ms(0.00068) == "0.00068" and bc.ms(16.75) == "16.750"
