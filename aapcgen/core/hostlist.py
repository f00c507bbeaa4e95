"""Which machines a job runs on: Slurm-style host lists, host files, and host-name matching.

A host list is comma-separated items, each with optional bracket ranges (``n[0-3],n9,r[1-2]n[01-04]``;
commas inside brackets belong to the range, as in Slurm). A host file has one host per line
(``#`` comments; ``host:slots`` and ``host slots=N`` as MPICH and Open MPI write them). For a
job's ranks, ``host:N`` (also as a ``--hosts`` item) and a repeated host give the host several
ranks, in rank order, as mpiexec places them.

A host name H names machine m when H equals m's ``host:`` (or its ``name:`` when it has no host),
or when their short forms (up to the first '.') are equal: ``n3`` and ``n3.cluster.org`` name
the same machine. The runtime matches ``MPI_Get_processor_name`` the same way.
"""

from __future__ import annotations

import os

from aapcgen.core.errors import InputError
from aapcgen.core.inputs import read_bytes
from aapcgen.core.model import Topology
from aapcgen.core.topology import expand_ranges

MAX_HOSTS = 1_000_000


def split_hostlist(text: str) -> list[str]:
    """Top-level comma split: ``a[1,2],b`` -> ``["a[1,2]", "b"]``."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item.strip() for item in items if item.strip()]


def parse_hostlist(text: str, what: str = "--hosts") -> list[str]:
    """Expand a host list; InputError naming the bad item."""
    hosts: list[str] = []
    for item in split_hostlist(text):
        try:
            hosts += expand_ranges(item)
        except ValueError as exc:
            raise InputError(f"{what}: bad item '{item[:80]}': {exc}") from None
        if len(hosts) > MAX_HOSTS:
            raise InputError(f"{what}: more than {MAX_HOSTS} hosts")
    if not hosts:
        raise InputError(f"{what}: no hosts in '{text[:80]}'")
    return hosts


def _slots(text: str, where: str) -> int:
    """A slot count (``n0:4``, ``slots=4``): a whole number from 1 to MAX_HOSTS."""
    if not text.isdigit() or not 1 <= int(text) <= MAX_HOSTS:
        raise InputError(f"{where}: '{text[:40]}' is not a number of ranks from 1 to {MAX_HOSTS}")
    return int(text)


def read_hostfile_ranks(path: str | os.PathLike[str]) -> list[str]:
    """The host of every rank of a job started with this host file, in rank order, as mpiexec
    places them: ``host:N`` or ``host slots=N`` (MPICH, Open MPI) gives the host N consecutive
    ranks, a plain line one; a host on several lines gets ranks at each."""
    text = read_bytes(path, os.fspath(path), "host file").decode("utf-8", errors="replace")
    ranks: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].strip().split()
        if not words:
            continue
        host, _, slots = words[0].partition(":")
        where = f"{path}:{number}"
        count = _slots(slots, where) if slots else 1
        for word in words[1:]:
            if word.startswith("slots="):
                count = _slots(word.removeprefix("slots="), where)
        ranks += [host] * count
        if len(ranks) > MAX_HOSTS:
            raise InputError(f"{path}: more than {MAX_HOSTS} ranks")
    if not ranks:
        raise InputError(f"{path}: no hosts in the file")
    return ranks


def read_hostfile(path: str | os.PathLike[str]) -> list[str]:
    """Hosts of a host file, one per line, in order (a host repeated for slots counts once)."""
    return list(dict.fromkeys(read_hostfile_ranks(path)))


def parse_hostlist_ranks(text: str, what: str = "--hosts") -> list[str]:
    """The host of every rank of ``--hosts``: a host list whose items may end in ``:N`` (N
    ranks on each of its hosts); a host named again gets more ranks, in that order."""
    ranks: list[str] = []
    for item in split_hostlist(text):
        base, colon, slots = (
            item.rpartition(":")
            if item.rsplit(":", 1)[-1].isdigit()
            else (
                item,
                "",
                "",
            )
        )
        count = _slots(slots, f"{what}: item '{item[:80]}'") if colon else 1
        for host in parse_hostlist(base, what):
            ranks += [host] * count
        if len(ranks) > MAX_HOSTS:
            raise InputError(f"{what}: more than {MAX_HOSTS} ranks")
    if not ranks:
        raise InputError(f"{what}: no hosts in '{text[:80]}'")
    return ranks


def slurm_tasks_per_node(text: str, nodes: int) -> list[int]:
    """``$SLURM_TASKS_PER_NODE`` (``2(x3),1``): the ranks on each of the job's nodes."""
    counts: list[int] = []
    for item in text.split(","):
        count, _, repeat = item.strip().partition("(x")
        where = "$SLURM_TASKS_PER_NODE"
        counts += [_slots(count, where)] * (_slots(repeat.rstrip(")"), where) if repeat else 1)
    if len(counts) != nodes:
        raise InputError(
            f"$SLURM_TASKS_PER_NODE '{text[:80]}' counts {len(counts)} nodes, "
            f"$SLURM_JOB_NODELIST {nodes}"
        )
    return counts


def short_name(host: str) -> str:
    return host.split(".", 1)[0]


def machine_of_host(topo: Topology) -> dict[str, int]:
    """Every name a machine answers to (its host or name, and the short form) -> machine index;
    a short form two machines share is left out (only the full name then matches)."""
    exact: dict[str, int] = {}
    short: dict[str, int | None] = {}
    for m, (name, host) in enumerate(zip(topo.machines, topo.hosts)):
        key = host or name
        exact.setdefault(key, m)
        s = short_name(key)
        short[s] = m if s not in short else None
    return {**{s: m for s, m in short.items() if m is not None}, **exact}


def job_rank_machines(topo: Topology, ranks: list[str], what: str = "--hosts") -> list[int]:
    """The machine index of every rank of a job, from the host of every rank (several ranks on
    one host run on its machine), as the runtime places them."""
    index = machine_of_host(topo)
    machines: list[int] = []
    for host in ranks:
        m = index.get(host, index.get(short_name(host)))
        if m is None:
            raise InputError(f"{what}: host '{host}' is not a machine of {topo.name}")
        machines.append(m)
    if len(machines) < 2:
        raise InputError(f"{what}: the job has {len(machines)} rank(s); all-to-all needs 2")
    return machines


def job_machines(topo: Topology, hosts: list[str], what: str = "--hosts") -> list[str]:
    """The machine names of a job's hosts, in the job's order (each machine once)."""
    index = machine_of_host(topo)
    machines: list[str] = []
    seen: set[int] = set()
    for host in hosts:
        m = index.get(host, index.get(short_name(host)))
        if m is None:
            raise InputError(f"{what}: host '{host}' is not a machine of {topo.name}")
        if m not in seen:
            seen.add(m)
            machines.append(topo.machines[m])
    if len(machines) < 2:
        raise InputError(f"{what}: the job has {len(machines)} machine(s); all-to-all needs 2")
    return machines
