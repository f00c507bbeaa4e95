"""Host lists, host files and host-name matching (aapcgen/core/hostlist.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aapcgen.core.errors import InputError
from aapcgen.core.hostlist import (
    job_machines,
    machine_of_host,
    parse_hostlist,
    read_hostfile,
    split_hostlist,
)
from aapcgen.core.topology import parse_topology

TOPO = parse_topology(
    {
        "name": "t",
        "switches": ["s0", "s1"],
        "links": [["s0", "s1"]],
        "machines": [
            {"name": "n[0-3]", "switch": "s0"},
            {"name": "m0", "switch": "s1", "host": "node7.cluster.org"},
            {"name": "m1", "switch": "s1", "host": "node8.cluster.org"},
        ],
    },
    "t.yaml",
)


def test_split_and_expand():
    assert split_hostlist("n[0-3,7],m[1-2] , x") == ["n[0-3,7]", "m[1-2]", "x"]
    assert parse_hostlist("n[0-1],n[07-08],r[1-2]c[1-2]") == [
        "n0", "n1", "n07", "n08", "r1c1", "r1c2", "r2c1", "r2c2",
    ]  # fmt: skip


@pytest.mark.parametrize("bad", ["n[3-1]", "n[", "n[a]", ",", ""])
def test_bad_hostlists_are_one_line_errors(bad):
    with pytest.raises(InputError, match="--hosts: "):
        parse_hostlist(bad)


@given(
    st.lists(
        st.tuples(st.integers(0, 120), st.integers(0, 12), st.integers(1, 3)),
        min_size=1,
        max_size=8,
    ),
    st.booleans(),
)
def test_ranges_expand_to_every_number(parts, one_bracket):
    """Ranges lo-hi zero-padded to a width (single numbers when lo = hi), several in one
    bracket or one bracket each: every number of every range, in order, at the range's width."""
    items, want = [], []
    for lo, span, width in parts:
        hi = lo + span
        items.append(f"{lo:0{width}d}-{hi:0{width}d}" if span else f"{lo:0{width}d}")
        want += [f"n{k:0{width}d}" for k in range(lo, hi + 1)]
    text = "n[" + ",".join(items) + "]" if one_bracket else ",".join(f"n[{i}]" for i in items)
    assert parse_hostlist(text) == want


def test_hostfile_formats(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("# comment\nn1:4\nn2 slots=2\n\nn1\nn3  # trailing\n")
    assert read_hostfile(f) == ["n1", "n2", "n3"]
    with pytest.raises(InputError, match="file not found"):
        read_hostfile(tmp_path / "missing")


def test_matching_full_and_short_names():
    index = machine_of_host(TOPO)
    assert index["n2"] == 2 and index["node7.cluster.org"] == 4 and index["node7"] == 4
    assert job_machines(TOPO, ["node8", "n0", "n0", "n3.other.domain"]) == ["m1", "n0", "n3"]
    with pytest.raises(InputError, match="host 'zz' is not a machine of t"):
        job_machines(TOPO, ["n0", "zz"])
    with pytest.raises(InputError, match="needs 2"):
        job_machines(TOPO, ["n0", "n0"])


@pytest.mark.parametrize(
    "host",
    ["n0", "n3", "n3.other.domain", "node7", "node7.cluster.org", "node8.cluster", "zz", "node"],
)
def test_the_runtime_matches_host_names_as_python_does(host):
    """One fact, two implementations (the runtime in C, --hosts in Python): the same answers."""
    from aapcgen.alltoall.cjob import machine_of_host as c_machine_of_host

    expected = machine_of_host(TOPO).get(host, machine_of_host(TOPO).get(host.split(".")[0], -1))
    assert c_machine_of_host(TOPO, host) == expected
