"""Tests for the topology loader (aapcgen.core.topology) and bandwidth units (aapcgen.core.units)."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aapcgen.core.errors import InputError
from aapcgen.core.model import Link, Topology
from aapcgen.core.resources import resource_dir
from aapcgen.core.topology import builtin_topology, expand_ranges, load_topology, parse_topology
from aapcgen.core.units import format_bandwidth, parse_bandwidth

MBIT = 1e6 / 8
GBIT = 1e9 / 8

PAPER_FIG1 = """\
name: paper-fig1
bandwidth: 100Mbit
switches: [s0, s1, s2, s3, s4, s5]
machines:
  - {name: n0, switch: s0}
  - {name: n1, switch: s4}
  - {name: n2, switch: s3}
  - {name: n3, switch: s5}
  - {name: n4, switch: s5}
links:
  - [s0, s4]
  - [s0, s1]
  - [s1, s2]
  - [s2, s3]
  - [s3, s5]
"""

# A small valid file that the error tests modify one element at a time.
BASE = """\
name: t
bandwidth: 100Mbit
switches: [s0, s1, s2]
machines:
  - {name: n0, switch: s0}
  - {name: n1, switch: s1}
  - {name: n2, switch: s2}
links:
  - [s0, s1]
  - [s1, s2]
"""


def write(tmp_path: Path, text: str, name: str = "topo.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(tmp_path: Path, text: str) -> Topology:
    return load_topology(write(tmp_path, text))


def error(tmp_path: Path, text: str) -> str:
    """Load ``text`` expecting an InputError; return its message without the file name."""
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_topology(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path)), message
    rest = message[len(str(path)) :]
    # a check of the file's contents names its line: "<file>:<line>: <part>: <what>"
    line = re.match(r":(\d+): ", rest)
    return rest[line.end() - 2 :] if line else rest


# --------------------------------------------------------------------------- valid input


def test_paper_fig1_parses_exactly(tmp_path):
    path = write(tmp_path, PAPER_FIG1)
    topo = load_topology(path)
    assert topo == Topology(
        name="paper-fig1",
        source=str(path),
        bandwidth=100 * MBIT,
        switches=("s0", "s1", "s2", "s3", "s4", "s5"),
        machines=("n0", "n1", "n2", "n3", "n4"),
        machine_switch=("s0", "s4", "s3", "s5", "s5"),
        machine_bandwidth=(100 * MBIT,) * 5,
        hosts=(None,) * 5,
        links=(
            Link("s0", "s4", 100 * MBIT),
            Link("s0", "s1", 100 * MBIT),
            Link("s1", "s2", 100 * MBIT),
            Link("s2", "s3", 100 * MBIT),
            Link("s3", "s5", 100 * MBIT),
        ),
    )
    assert topo.n_machines == 5


def test_builtin_topology_is_paper_fig1(tmp_path):
    topo = builtin_topology()
    assert topo.source == "<built-in paper-fig1>"
    assert topo.name == "paper-fig1"
    expected = load_topology(write(tmp_path, PAPER_FIG1))
    assert topo.machines == expected.machines
    assert topo.machine_switch == expected.machine_switch
    assert topo.links == expected.links


def test_pathlike_and_default_name_from_stem(tmp_path):
    path = write(tmp_path, BASE.replace("name: t\n", ""), name="my-cluster.v2.yaml")
    topo = load_topology(path)
    assert topo.name == "my-cluster.v2"
    assert topo.source == str(path)
    assert load_topology(str(path)) == topo


def test_default_bandwidth_is_1gbit(tmp_path):
    topo = load(tmp_path, BASE.replace("bandwidth: 100Mbit\n", ""))
    assert topo.bandwidth == GBIT
    assert set(topo.machine_bandwidth) == {GBIT}
    assert {link.bandwidth for link in topo.links} == {GBIT}


def test_link_mapping_form_and_machine_bandwidth(tmp_path):
    topo = load(
        tmp_path,
        """\
        switches: [s0, s1]
        machines:
          - {name: a, switch: s0, bandwidth: 1Gbit, host: a.example.org}
          - {name: b, switch: s1}
        links:
          - {ends: [s0, s1], bandwidth: 10Gbit}
        """,
    )
    assert topo.name == "topo"
    assert topo.links == (Link("s0", "s1", 10 * GBIT),)
    assert topo.machine_bandwidth == (GBIT, GBIT)  # b gets the default 1Gbit
    assert topo.hosts == ("a.example.org", None)


def test_machine_attached_by_link(tmp_path):
    topo = load(
        tmp_path,
        """\
        bandwidth: 100Mbit
        switches: [s0, s1]
        machines:
          - {name: a}
          - {name: b, switch: s1, bandwidth: 1Gbit}
          - {name: c}
        links:
          - [s0, s1]
          - {ends: [a, s0], bandwidth: 1Gbit}
          - [s1, c]
        """,
    )
    assert topo.machine_switch == ("s0", "s1", "s1")
    assert topo.machine_bandwidth == (GBIT, GBIT, 100 * MBIT)
    assert topo.links == (Link("s0", "s1", 100 * MBIT),)


def test_explicit_ranks_and_fill_in(tmp_path):
    topo = load(
        tmp_path,
        """\
        switches: [s0]
        machines:
          - {name: a, switch: s0}
          - {name: b, switch: s0, rank: 0}
          - {name: c, switch: s0, host: hc}
          - {name: d, switch: s0, rank: 2}
        """,
    )
    assert topo.machines == ("b", "a", "d", "c")
    assert topo.hosts == (None, None, None, "hc")


def test_range_expansion_of_machines_hosts_and_switches(tmp_path):
    topo = load(
        tmp_path,
        """\
        switches: [core, "e[0-1]"]
        machines:
          - {name: "node[08-11]", switch: e0, host: "h3-[008-011]"}
          - {name: "x[1-2,7]", switch: e1}
        links:
          - [core, "e[0-1]"]
        """,
    )
    assert topo.switches == ("core", "e0", "e1")
    assert topo.machines == ("node08", "node09", "node10", "node11", "x1", "x2", "x7")
    assert topo.hosts[:4] == ("h3-008", "h3-009", "h3-010", "h3-011")
    assert topo.links == (Link("core", "e0", GBIT), Link("core", "e1", GBIT))


def test_switch_range_spreads_machines_in_blocks(tmp_path):
    topo = load(
        tmp_path,
        """\
        switches: [core, "e[0-2]"]
        machines:
          - {name: "n[0-5]", switch: "e[0-2]"}
        links:
          - {ends: [core, "e[0-2]"], bandwidth: 10Gbit}
        """,
    )
    assert topo.machine_switch == ("e0", "e0", "e1", "e1", "e2", "e2")


def test_expand_ranges():
    assert expand_ranges("plain") == ["plain"]
    assert expand_ranges("n[00-02,7,09]") == ["n00", "n01", "n02", "n7", "n09"]
    assert expand_ranges("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    assert expand_ranges("[8-10]x") == ["8x", "9x", "10x"]


def test_machineless_switches_are_legal(tmp_path):
    topo = load(
        tmp_path,
        """\
        switches: [core, agg, e0, e1]
        machines:
          - {name: a, switch: e0}
          - {name: b, switch: e1}
        links:
          - [core, agg]
          - [agg, e0]
          - [core, e1]
        """,
    )
    assert topo.switches == ("core", "agg", "e0", "e1")
    assert set(topo.machine_switch) == {"e0", "e1"}


def test_links_empty_or_null_for_one_switch(tmp_path):
    text = "switches: [s0]\nmachines: [{name: a, switch: s0}, {name: b, switch: s0}]\n"
    assert load(tmp_path, text).links == ()
    assert load(tmp_path, text + "links:\n").links == ()
    assert load(tmp_path, text + "links: []\n").links == ()


def test_parse_topology_from_data():
    data = {
        "name": "d",
        "switches": ["s0"],
        "machines": [{"name": "a", "switch": "s0"}, {"name": "b", "switch": "s0"}],
    }
    topo = parse_topology(data, "<data>")
    assert topo.source == "<data>"
    assert topo.machines == ("a", "b")


SHIPPED = {
    # file: (switches, machines, links, machines per switch (sorted set), link bandwidths)
    "paper-fig1": (6, 5, 5, {1, 2}, {100 * MBIT}),
    "single-8": (1, 8, 0, {8}, set()),
    "single-16": (1, 16, 0, {16}, set()),
    "single-32": (1, 32, 0, {32}, set()),
    "two-switch-4-4": (2, 8, 1, {4}, {100 * MBIT}),
    "chain-4x4": (4, 16, 3, {4}, {100 * MBIT}),
    "chain-4x8": (4, 32, 3, {8}, {20 * MBIT}),
    "tree-24": (8, 24, 7, {3, 4, 6, 8}, {100 * MBIT}),
    "deep-unbalanced": (9, 22, 8, {1, 2, 3, 4, 5, 7}, {100 * MBIT}),
    "two-level-1024": (33, 1024, 32, {32}, {10 * GBIT}),
    "three-level-4096": (137, 4096, 136, {32}, {10 * GBIT, 40 * GBIT}),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_topologies(name):
    path = resource_dir("topologies") / f"{name}.yaml"
    topo = load_topology(path)
    n_switches, n_machines, n_links, per_switch, link_bandwidths = SHIPPED[name]
    assert topo.name == name
    assert len(topo.switches) == n_switches
    assert topo.n_machines == n_machines
    assert len(topo.links) == n_links
    counts = {s: topo.machine_switch.count(s) for s in set(topo.machine_switch)}
    assert set(counts.values()) == per_switch
    assert {link.bandwidth for link in topo.links} == link_bandwidths
    # rank order: machines listed switch by switch
    seen: list[str] = []
    for switch in topo.machine_switch:
        if not seen or seen[-1] != switch:
            assert switch not in seen
            seen.append(switch)


def test_shipped_special_cases():
    topologies = resource_dir("topologies")
    two = load_topology(topologies / "two-switch-4-4.yaml")
    assert two.machine_switch[:4] == ("s0",) * 4
    tree = load_topology(topologies / "tree-24.yaml")
    assert {"core", "agg0", "agg1"}.isdisjoint(tree.machine_switch)
    deep = load_topology(topologies / "deep-unbalanced.yaml")
    assert len(set(deep.switches) - set(deep.machine_switch)) >= 2
    for name in ("two-level-1024", "three-level-4096"):
        topo = load_topology(topologies / f"{name}.yaml")
        assert set(topo.machine_bandwidth) == {GBIT}
    big = load_topology(topologies / "three-level-4096.yaml")
    assert Link("a0", "a0e15", 10 * GBIT) in big.links
    assert Link("a7", "a7e00", 10 * GBIT) in big.links
    assert Link("core", "a3", 40 * GBIT) in big.links


# --------------------------------------------------------------------------- bad input


def test_malformed_yaml_reports_line_and_column(tmp_path):
    message = error(tmp_path, "switches: [s0, s1\nmachines: []\n")
    assert message.startswith(":")
    assert "malformed YAML" in message
    line, column = message.split(":")[1:3]
    assert int(line) >= 1 and int(column) >= 1


def test_file_not_found(tmp_path):
    path = tmp_path / "missing.yaml"
    with pytest.raises(InputError, match=r"missing\.yaml: file not found$"):
        load_topology(path)


def test_file_unreadable(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        load_topology(tmp_path)
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(InputError, match="not UTF-8"):
        load_topology(path)


def test_empty_file(tmp_path):
    assert error(tmp_path, "") == ": empty file"
    assert error(tmp_path, "# only a comment\n") == ": empty file"


def test_top_level_not_a_mapping(tmp_path):
    message = error(tmp_path, "- s0\n- s1\n")
    assert "top level" in message and "must be a mapping" in message and "a list" in message


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("switches: [s0, s1, s2]", "switches: s0", ["switches", "must be a list", "a string"]),
        ("- {name: n1, switch: s1}", "- [n1, s1]", ["machines[1]", "must be a mapping"]),
        ("name: t", "name: [t]", ["name", "must be a string"]),
        ("{name: n1, switch: s1}", "{name: 7, switch: s1}", ["machines[1]", "string", "7"]),
        ("{name: n1, switch: s1}", "{name: n1, switch: s1, rank: x}", ["rank", "integer"]),
        ("{name: n1, switch: s1}", "{name: n1, switch: s1, rank: true}", ["rank", "boolean"]),
        ("- [s0, s1]", "- 5", ["links[0]", "must be a list"]),
        ("- [s0, s1]", "- [s0, s1, s2]", ["links[0]", "exactly 2 ends", "3"]),
        ("- [s0, s1]", "- [s0, 1]", ["links[0]", "link end", "string"]),
    ],
)
def test_wrong_types(tmp_path, old, new, words):
    assert old in BASE
    message = error(tmp_path, BASE.replace(old, new, 1))
    for word in words:
        assert word in message, message


def test_lists_of_wrong_type(tmp_path):
    message = error(tmp_path, "switches: [s0]\nmachines: {a: 1}\n")
    assert message == ": machines: must be a list of machine entries, got a mapping"
    message = error(tmp_path, BASE.replace("links:\n  - [s0, s1]\n  - [s1, s2]\n", "links: 3\n"))
    assert message == ": links: must be a list of links, got an integer"


def test_unknown_top_level_key(tmp_path):
    message = error(tmp_path, BASE.replace("bandwidth:", "bandwith:"))
    assert "top level: unknown key 'bandwith'" in message
    assert "did you mean 'bandwidth'?" in message
    assert "allowed: bandwidth, inflight, links, machines, name, ranks_per_machine, switches" in (
        message
    )


@pytest.mark.parametrize(
    ("value", "expected"), [("64KiB", 65536), ("16MiB", 1 << 24), ("16M", 1 << 24), (4096, 4096)]
)
def test_inflight_is_a_number_of_bytes(tmp_path, value, expected):
    assert load(tmp_path, f"inflight: {value}\n" + BASE).inflight == expected
    assert load(tmp_path, BASE).inflight is None


@pytest.mark.parametrize("value", ["0", "-1", "yes", "16Mbit", "2TiB", "[1]", "1.5"])
def test_inflight_that_is_not_a_number_of_bytes_names_the_key(tmp_path, value):
    message = error(tmp_path, f"inflight: {value}\n" + BASE)
    assert ": inflight: must be a number of bytes from 1 to 1TiB" in message, message


def test_unknown_entry_key(tmp_path):
    message = error(tmp_path, BASE.replace("{name: n1, switch: s1}", "{name: n1, swich: s1}"))
    assert "machines[1] (n1): unknown key 'swich'" in message
    assert "allowed: bandwidth, host, name, rank, switch" in message
    message = error(tmp_path, BASE.replace("- [s0, s1]", "- {ends: [s0, s1], bw: 1Gbit}"))
    assert "links[0]: unknown key 'bw'" in message and "allowed: bandwidth, ends" in message


def test_missing_required_keys(tmp_path):
    assert "missing required key 'switches'" in error(tmp_path, "machines: []\n")
    assert "machines[1]: missing required key 'name'" in error(
        tmp_path, BASE.replace("{name: n1, switch: s1}", "{switch: s1}")
    )


def test_duplicate_yaml_key(tmp_path):
    message = error(tmp_path, BASE.replace("name: t\n", "name: t\nname: u\n"))
    assert message.startswith(":2:1:")
    assert "duplicate key 'name'" in message and "line 1" in message
    message = error(tmp_path, BASE.replace("{name: n1, switch: s1}", "{name: n1, name: n9}"))
    assert "duplicate key 'name'" in message and message.startswith(":6:")


def test_unknown_switch(tmp_path):
    message = error(tmp_path, BASE.replace("{name: n2, switch: s2}", "{name: n2, switch: s9}"))
    assert message == ": machines[2] (n2): unknown switch 's9'"
    message = error(tmp_path, BASE.replace("{name: n2, switch: s2}", "{name: n2, switch: n0}"))
    assert "machines[2] (n2): switch 'n0' is a machine" in message


def test_duplicate_names(tmp_path):
    message = error(tmp_path, BASE.replace("{name: n2,", "{name: n0,"))
    assert "machines[2] (n0): duplicate machine name 'n0'" in message and "machines[0]" in message
    message = error(tmp_path, BASE.replace("[s0, s1, s2]", "[s0, s1, s2, s1]"))
    assert "switches[3] (s1): duplicate switch name 's1'" in message
    assert "switches[1]" in message
    message = error(tmp_path, BASE.replace("{name: n2,", "{name: s1,"))
    assert "machines[2] (s1): name 's1' is already used by a switch" in message


def test_machine_on_two_switches(tmp_path):
    message = error(tmp_path, BASE + "  - [n0, s1]\n")
    assert message == ": links[2] [n0, s1]: machine n0 is on two switches (s0, s1)"
    text = BASE.replace("{name: n0, switch: s0}", "{name: n0}")
    message = error(tmp_path, text + "  - [n0, s1]\n  - [s2, n0]\n")
    assert "links[3] [s2, n0]: machine n0 is on two switches (s1, s2)" in message
    message = error(tmp_path, BASE + "  - [n0, s0]\n")
    assert "links[2] [n0, s0]: machine n0 is already attached to s0" in message


def test_machine_on_no_switch(tmp_path):
    message = error(tmp_path, BASE.replace("{name: n1, switch: s1}", "{name: n1}"))
    assert message.startswith(": machines[1] (n1): not attached to any switch")


def test_machine_to_machine_link(tmp_path):
    message = error(tmp_path, BASE + "  - [n0, n1]\n")
    assert "links[2] [n0, n1]: links two machines (n0, n1)" in message


def test_link_to_unknown_node(tmp_path):
    message = error(tmp_path, BASE.replace("[s1, s2]", "[s1, s7]"))
    assert message == ": links[1] [s1, s7]: unknown node 's7'"


def test_self_link(tmp_path):
    message = error(tmp_path, BASE.replace("[s1, s2]", "[s0, s0]"))
    assert "links[1] [s0, s0]: self-link" in message


def test_duplicate_link(tmp_path):
    message = error(tmp_path, BASE + "  - [s1, s0]\n")
    assert "links[2] [s1, s0]: duplicate link (also links[0] [s0, s1])" in message


def test_cycle(tmp_path):
    text = BASE.replace("[s0, s1, s2]", "[s0, s1, s2, s3]").replace(
        "  - [s1, s2]\n", "  - [s1, s2]\n  - [s2, s3]\n  - [s3, s1]\n"
    )
    message = error(tmp_path, text)
    assert message == ": links[3] [s3, s1]: links form a cycle: s1 - s2 - s3 - s1"


def test_disconnected(tmp_path):
    message = error(tmp_path, BASE.replace("  - [s1, s2]\n", ""))
    assert "switches[2] (s2): switch 's2' is not connected to 's0'" in message
    message = error(tmp_path, BASE.replace("[s0, s1, s2]", "[s0, s1, s2, lonely]"))
    assert "switch 'lonely' is not connected" in message


def test_fewer_than_two_machines(tmp_path):
    text = "switches: [s0]\nmachines:\n  - {name: a, switch: s0}\n"
    assert "machines: needs at least 2 machines, found 1" in error(tmp_path, text)
    assert "found 0" in error(tmp_path, "switches: [s0]\nmachines: []\n")


@pytest.mark.parametrize(
    ("old", "new", "where", "words"),
    [
        ("bandwidth: 100Mbit", "bandwidth: 100", ": bandwidth:", "has no unit"),
        ("bandwidth: 100Mbit", "bandwidth: 100Mbix", ": bandwidth:", "unknown unit 'Mbix'"),
        ("bandwidth: 100Mbit", "bandwidth: 0Mbit", ": bandwidth:", "not a positive"),
        ("bandwidth: 100Mbit", "bandwidth: -1Gbit", ": bandwidth:", "not a positive"),
        ("bandwidth: 100Mbit", "bandwidth: fast", ": bandwidth:", "not a bandwidth"),
        ("- [s0, s1]", "- {ends: [s0, s1], bandwidth: 1Gbt}", ": links[0]:", "unknown unit"),
        (
            "{name: n1, switch: s1}",
            "{name: n1, switch: s1, bandwidth: 10}",
            ": machines[1] (n1):",
            "has no unit",
        ),
        (
            "{name: n1, switch: s1}",
            "{name: n1, switch: s1, bandwidth: yes}",
            ": machines[1] (n1):",
            "boolean",
        ),
    ],
)
def test_bad_bandwidth(tmp_path, old, new, where, words):
    message = error(tmp_path, BASE.replace(old, new, 1))
    assert message.startswith(where), message
    assert words in message, message


def test_duplicate_rank(tmp_path):
    text = BASE.replace("{name: n0, switch: s0}", "{name: n0, switch: s0, rank: 1}")
    text = text.replace("{name: n2, switch: s2}", "{name: n2, switch: s2, rank: 1}")
    message = error(tmp_path, text)
    assert "machines[2] (n2): duplicate rank 1 (also machines[0] (n0))" in message


def test_rank_out_of_range(tmp_path):
    message = error(
        tmp_path, BASE.replace("{name: n1, switch: s1}", "{name: n1, switch: s1, rank: 3}")
    )
    assert "machines[1] (n1): rank 3 is out of range [0, 3)" in message
    message = error(
        tmp_path, BASE.replace("{name: n1, switch: s1}", "{name: n1, switch: s1, rank: -1}")
    )
    assert "rank -1 is out of range" in message


def test_rank_not_allowed_on_range(tmp_path):
    message = error(tmp_path, BASE.replace("{name: n1,", "{name: 'm[0-1]', rank: 0,"))
    assert "machines[1] (m[0-1]): rank is not allowed on a range entry" in message


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("n[3-1]", "goes backwards"),
        ("n[1-x]", "'1-x' is not a number"),
        ("n[]", "empty brackets"),
        ("n[1-2", "unbalanced"),
        ("n1-2]", "unbalanced"),
        ("n[[1-2]]", "unbalanced or nested"),
        ("n[1,,2]", "'' is not a number"),
    ],
)
def test_bad_range_expression(tmp_path, pattern, reason):
    message = error(tmp_path, BASE.replace("{name: n1,", f"{{name: '{pattern}',"))
    assert message.startswith(f": machines[1] ({pattern}): bad range in name '{pattern}'")
    assert reason in message
    message = error(tmp_path, BASE.replace("[s0, s1, s2]", f"[s0, s1, s2, '{pattern}']"))
    assert message.startswith(": switches[3]: bad range in switch name")


def test_bad_names(tmp_path):
    message = error(tmp_path, BASE.replace("name: t", "name: 'a b'"))
    assert "name: bad topology name 'a b'" in message
    message = error(tmp_path, BASE.replace("{name: n1,", "{name: 'n 1',"))
    assert "bad machine name 'n 1'" in message
    path = write(tmp_path, BASE.replace("name: t\n", ""), name="has space.yaml")
    with pytest.raises(InputError, match="file stem 'has space' is not a valid name"):
        load_topology(path)


def test_mismatched_host_range(tmp_path):
    text = BASE.replace("{name: n1, switch: s1}", "{name: 'm[0-3]', switch: s1, host: 'h[0-2]'}")
    message = error(tmp_path, text)
    assert "machines[1] (m[0-3]): host 'h[0-2]' expands to 3 names but name 'm[0-3]' to 4" in (
        message
    )


def test_uneven_switch_range(tmp_path):
    text = BASE.replace("{name: n1, switch: s1}", "{name: 'm[0-2]', switch: 's[1-2]'}")
    assert "do not divide the 3 machines evenly" in error(tmp_path, text)
    text = BASE.replace("- [s1, s2]", "- ['s[0-1]', 's[0-2]']")
    assert "links[1]: link ends: 2 and 3 names cannot be paired evenly" in error(tmp_path, text)


def test_duplicate_host(tmp_path):
    text = BASE.replace("switch: s0}", "switch: s0, host: h}").replace(
        "switch: s2}", "switch: s2, host: h}"
    )
    message = error(tmp_path, text)
    assert "machines[2] (n2): duplicate host 'h' (also the host of machines[0] (n0))" in message


def test_conflicting_machine_bandwidth(tmp_path):
    text = BASE.replace("{name: n0, switch: s0}", "{name: n0, bandwidth: 1Gbit}")
    message = error(tmp_path, text + "  - {ends: [n0, s0], bandwidth: 10Gbit}\n")
    assert "links[2] [n0, s0]: machine n0 gets different bandwidths" in message


# --------------------------------------------------------------------------- units


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100Mbit", 100 * MBIT),
        ("1Gbit", GBIT),
        ("10Gbit", 10 * GBIT),
        ("125MBps", 125e6),
        ("1.5Gbit", 1.5 * GBIT),
        ("100 Mbit/s", 100 * MBIT),
        ("100Mbps", 100 * MBIT),
        ("125MB/s", 125e6),
        ("8kbit", 1e3),
        ("8Kb/s", 1e3),
        ("1Tbit", 1e12 / 8),
        ("1KiB", 1024.0),
        ("8Mibit", 2.0**20),
        ("1GiB/s", 2.0**30),
        ("2 GBit", 2 * GBIT),
        ("3 bytes/s", 3.0),
        (".5MB", 5e5),
    ],
)
def test_parse_bandwidth(text, expected):
    assert math.isclose(parse_bandwidth(text), expected, rel_tol=1e-12)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("100", "has no unit"),
        ("0Mbit", "not a positive"),
        ("-5Gbit", "not a positive"),
        ("5 furlongs", "unknown unit"),
        ("100mbps", "write 100Mbit or 100MB/s"),
        ("100M", "bits or bytes"),
        ("Gbit", "not a bandwidth"),
        ("", "not a bandwidth"),
        ("1e999Gbit", "too large"),
    ],
)
def test_parse_bandwidth_errors(text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_bandwidth(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (100 * MBIT, "100 Mbit/s"),
        (GBIT, "1 Gbit/s"),
        (1.5 * GBIT, "1.5 Gbit/s"),
        (40 * GBIT, "40 Gbit/s"),
        (20 * MBIT, "20 Mbit/s"),
        (125.0, "1 kbit/s"),
        (1.0, "8 bit/s"),
    ],
)
def test_format_bandwidth(value, text):
    assert format_bandwidth(value) == text


positive_floats = st.floats(min_value=1e-6, max_value=1e18, allow_nan=False, allow_infinity=False)


@given(positive_floats)
def test_format_parse_round_trip(value):
    assert math.isclose(parse_bandwidth(format_bandwidth(value)), value, rel_tol=1e-12)


@given(
    st.integers(min_value=1, max_value=10**6),
    st.sampled_from(["", "k", "K", "M", "G", "T", "Ki", "Mi", "Gi"]),
    st.sampled_from(["bit", "bps", "bit/s", "b", "B", "Bps", "B/s", "byte"]),
    st.sampled_from(["", " "]),
)
def test_parse_format_round_trip(number, prefix, base, space):
    value = parse_bandwidth(f"{number}{space}{prefix}{base}")
    assert value > 0
    text = format_bandwidth(value)
    assert text.endswith("bit/s")
    assert parse_bandwidth(text) == pytest.approx(value, rel=1e-12)
    assert format_bandwidth(parse_bandwidth(text)) == text
