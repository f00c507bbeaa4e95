"""Resource guards: how big an input may be, checked before anything that size is allocated.

Each limit has a default that keeps a run within a few seconds and about 1 GiB on the
largest input it lets through (measured in docs/topology.md, "Limits"), and an environment
variable that overrides it (``AAPC_MAX_MACHINES=8192 aapcgen schedule big.yaml``). A value
over a limit is an :class:`InputError` that names the input, the value, the limit and the
variable; nothing is truncated silently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from aapcgen.core.errors import InputError


@dataclass(frozen=True)
class Limit:
    """One guard: ``env`` overrides ``default``; ``what`` names the counted thing (plural)."""

    env: str
    default: int
    what: str


# The largest topology shipped (topologies/three-level-4096.yaml) is within every default.
MACHINES = Limit("AAPC_MAX_MACHINES", 4096, "machines")
SWITCHES = Limit("AAPC_MAX_SWITCHES", 4096, "switches")
# MPI ranks (machines x ranks_per_machine) for the rank-level proof of `verify` (it holds every
# rank pair: about 200 bytes each, 0.85 GiB at 4096 ranks).
RANKS = Limit("AAPC_MAX_RANKS", 4096, "MPI ranks (machines x ranks_per_machine)")
# Phases x machines for the commands that build per-phase tables of every machine (sync,
# generate, build, bench, tune): two-level-1024 has 3.3e7; two switches of 362 machines each
# (1.3e8, 131044 phases) generate in about 15 s and 0.5 GiB.
PHASE_SLOTS = Limit("AAPC_MAX_PHASE_SLOTS", 2**27, "phase x machine slots")
# YAML nodes after alias expansion (a 4096-machine file written out in full has about 60000).
YAML_NODES = Limit("AAPC_MAX_YAML_NODES", 250_000, "YAML nodes")
# YAML nesting depth (a topology file needs 4).
YAML_DEPTH = Limit("AAPC_MAX_YAML_DEPTH", 64, "levels of YAML nesting")
# Bytes of one input file (topology, pattern, schedule JSON) read into memory.
INPUT_BYTES = Limit("AAPC_MAX_INPUT_BYTES", 256 * 2**20, "bytes")

ALL = (MACHINES, SWITCHES, RANKS, PHASE_SLOTS, YAML_NODES, YAML_DEPTH, INPUT_BYTES)


def value(limit: Limit) -> int:
    """The limit in force: the environment variable when set (a positive whole number)."""
    text = os.environ.get(limit.env, "").strip()
    if not text:
        return limit.default
    if not text.isdigit() or len(text) > 18 or int(text) < 1:
        raise InputError(f"${limit.env}: expected a positive whole number, got '{text[:40]}'")
    return int(text)


def exceeded(limit: Limit, count: int) -> str | None:
    """The message for ``count`` over ``limit`` (None when within it)."""
    allowed = value(limit)
    if count <= allowed:
        return None
    shown = f"{count:,}" if count < 10**15 else "more than 10^15"
    return (
        f"{shown} {limit.what} exceed the limit of {allowed:,} "
        f"(set {limit.env} to raise it; docs/topology.md, 'Limits')"
    )


def check(limit: Limit, count: int, where: str) -> None:
    """Raise InputError ``<where>: <message>`` when ``count`` is over ``limit``."""
    message = exceeded(limit, count)
    if message is not None:
        raise InputError(f"{where}: {message}")
