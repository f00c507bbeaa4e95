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
from pathlib import Path

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
RANKS = Limit("AAPC_MAX_RANKS", 4096, "MPI ranks")
# Phases (the capacity lower bound the pipeline schedules) x machines, for the commands that build
# per-phase tables of every machine (sync, generate, build, bench, tune). Two switches of 256
# machines (2^25): generate --variant sender-all 50 s and 1.1 GiB on 2 busy cores; two-level-1024
# has 3.3e6. Memory is guarded apart (check_memory).
PHASE_SLOTS = Limit("AAPC_MAX_PHASE_SLOTS", 2**25, "phase x machine slots")
# Messages x links they cross (2 x the sum of the link loads): the work of the proof of `verify`
# (three-level-4096: 9.6e7; a chain of 1024 switches, a machine on each: 3.6e8, 40 s).
CROSSINGS = Limit("AAPC_MAX_CROSSINGS", 2**27, "link crossings (messages x links on their path)")
# YAML nodes after alias expansion (a 4096-machine file written out in full has about 30000).
YAML_NODES = Limit("AAPC_MAX_YAML_NODES", 250_000, "YAML nodes")
# YAML nesting depth (a topology file needs 4).
YAML_DEPTH = Limit("AAPC_MAX_YAML_DEPTH", 64, "levels of YAML nesting")
# Bytes of one input file (topology, pattern, schedule JSON) read into memory.
INPUT_BYTES = Limit("AAPC_MAX_INPUT_BYTES", 256 * 2**20, "bytes")

ALL = (MACHINES, SWITCHES, RANKS, PHASE_SLOTS, CROSSINGS, YAML_NODES, YAML_DEPTH, INPUT_BYTES)


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
    return f"{shown} {limit.what} exceed the limit of {allowed:,} ({limit.env} raises it)"


def check(limit: Limit, count: int, where: str) -> None:
    """Raise InputError ``<where>: <message>`` when ``count`` is over ``limit``."""
    message = exceeded(limit, count)
    if message is not None:
        raise InputError(f"{where}: {message}")


# --------------------------------------------------------------------------- memory
# A command that would need more memory than this process may use stops at once with one line,
# instead of a MemoryError or the kernel's OOM killer half-way. What it may use: the address-space
# limit (ulimit -v) less what it already holds, and the memory the system has available;
# ``AAPC_MAX_MEMORY`` (bytes, or with K/M/G/T) sets a budget of its own.

MEMORY_ENV = "AAPC_MAX_MEMORY"
BYTES_PER_PAIR = 100  # schedule + verify: per ordered machine pair (measured: 93 at 4096 machines)
BYTES_PER_SLOT = 34  # sync planning: per phase x machine slot (measured: 26-33, docs/topology.md)
BASE_BYTES = 64 * 2**20  # the interpreter, numpy and the topology


def _meminfo(key: str) -> int | None:
    return _kib_field("/proc/meminfo", key)


def _held() -> int:
    """Bytes of address space this process holds now (VmSize)."""
    return _kib_field("/proc/self/status", "VmSize") or 0


def _kib_field(path: str, key: str) -> int | None:
    """The ``key: N kB`` field of a /proc file, in bytes."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def parse_bytes(text: str) -> int | None:
    """``2G`` -> 2147483648 (binary K, M, G, T); None if ``text`` is not such an amount."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMGT" and text else text
    if not digits.isdigit() or len(digits) > 15:
        return None
    return int(digits) * scale


def memory_budget() -> tuple[int, str] | None:
    """The bytes this process may still use and what says so; None when nothing limits it."""
    budgets: list[tuple[int, str]] = []
    text = os.environ.get(MEMORY_ENV, "").strip()
    if text:
        amount = parse_bytes(text)
        if amount is None:
            raise InputError(f"${MEMORY_ENV}: expected bytes such as 2G, got '{text[:40]}'")
        budgets.append((amount, f"${MEMORY_ENV}"))
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            budgets.append((max(0, soft - _held()), "the address-space limit (ulimit -v)"))
    except (ImportError, OSError, ValueError):
        pass
    available = _meminfo("MemAvailable")
    if available is not None:
        budgets.append((available + (_meminfo("SwapFree") or 0), "the memory available"))
    return min(budgets) if budgets else None


def _size(amount: int) -> str:
    return f"{amount / 2**30:.1f} GiB" if amount >= 2**30 else f"{amount / 2**20:.0f} MiB"


def check_memory(need: int, what: str, where: str) -> None:
    """InputError ``<where>: <what> needs about X, more than the Y ... allows`` when ``need``
    bytes are more than :func:`memory_budget`."""
    budget = memory_budget()
    if budget is not None and need > budget[0]:
        raise InputError(
            f"{where}: {what} needs about {_size(need)}, more than the {_size(budget[0])} "
            f"{budget[1]} allows"
        )
