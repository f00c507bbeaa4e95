"""The synchronisation variants of seed 002 Table 5: one table, every other fact derived from it.

The CLI help (``--variant``), the sync planner (``VariantSpec``), code generation (the C enums),
``aapcgen tune`` (the simplicity order) and the default variant all read ``TABLE``; nothing else
lists variant names.

Columns:

* ``kind``: what fires the pair-wise syncs: ``none``, ``sender`` (a send completes) or
  ``receiver`` (a receive completes);
* ``scope``: which phases they order: ``none``, ``all`` (every phase), ``cross`` (only across
  blocks of ``block_size`` phases), ``within`` (only inside a block; barriers order the rest);
* ``barrier``: ``none``, ``phase`` (after every phase) or ``block`` (after every block);
* ``dummy``: dummy messages keep every link busy instead of syncs;
* ``simplicity``: rank in ``aapcgen tune``'s tie-breaking (simplest first: least added
  synchronisation);
* ``runtime_c``: the C enum of the run-time synchronisation (``aapc_vtables.h``) when Alltoallv
  levels 1 and 2 can run it, else None;
* ``alltoallv``: level 3 (a compiled Alltoallv pattern) can run it (dummies cannot: Alltoallv
  counts leave no room for them).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from aapcgen.core.errors import InputError


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str
    scope: str
    barrier: str
    dummy: bool
    simplicity: int
    runtime_c: str | None
    alltoallv: bool
    summary: str

    @property
    def blocked(self) -> bool:
        """Takes ``--block-size`` (phases per block)."""
        return "partial" in self.name


TABLE: tuple[Variant, ...] = (
    Variant("no-sync", "none", "none", "none", False, 0, "AAPC_VSYNC_NONE", True,
            "all phases posted at once"),
    Variant("dummy", "none", "none", "none", True, 1, None, False,
            "dummy messages instead of syncs"),
    Variant("sender-all", "sender", "all", "none", False, 4, "AAPC_VSYNC_SENDER", True,
            "pair-wise syncs fired by sends, every phase"),
    Variant("sender-partial", "sender", "cross", "none", False, 6, None, True,
            "sender syncs across blocks only"),
    Variant("receiver-all", "receiver", "all", "none", False, 5, "AAPC_VSYNC_RECEIVER", True,
            "pair-wise syncs fired by receives, every phase"),
    Variant("receiver-partial", "receiver", "cross", "none", False, 7, None, True,
            "receiver syncs across blocks only"),
    Variant("barrier-all", "none", "none", "phase", False, 2, "AAPC_VSYNC_BARRIER", True,
            "a barrier after every phase"),
    Variant("barrier-partial-none", "none", "none", "block", False, 3, None, True,
            "a barrier after every block"),
    Variant("barrier-partial-sender", "sender", "within", "block", False, 8, None, True,
            "barriers between blocks, sender syncs inside"),
    Variant("barrier-partial-receiver", "receiver", "within", "block", False, 9, None, True,
            "barriers between blocks, receiver syncs inside"),
)  # fmt: skip

BY_NAME: dict[str, Variant] = {v.name: v for v in TABLE}
VARIANTS: tuple[str, ...] = tuple(v.name for v in TABLE)
BLOCKED = frozenset(v.name for v in TABLE if v.blocked)
# tune's tie-break among generated variants, simplest first
SIMPLICITY_ORDER: tuple[str, ...] = tuple(v.name for v in sorted(TABLE, key=lambda v: v.simplicity))
# the default routine among those generated: receiver-all won on every measured tree
# (docs/performance.md, docs/measurements/evaluation.md); seed 002 preferred sender-all on its 2005 MPICH
DEFAULT_PREFERENCE = ("receiver-all", "sender-all")
DEFAULT_VARIANT = DEFAULT_PREFERENCE[0]
# C enum of each sync kind in the executor tables (runtime_c aapc_phased.h)
KIND_C = {"none": "AAPC_SYNC_NONE", "sender": "AAPC_SYNC_SENDER", "receiver": "AAPC_SYNC_RECEIVER"}
# the run-time synchronisations of Alltoallv levels 1 and 2, label -> C enum
RUNTIME_SYNC_C: dict[str, str] = {v.name: v.runtime_c for v in TABLE if v.runtime_c is not None}


# MPI_Alltoall routines scheduled at run time for any communicator (runtime_c/alltoall/
# aapc_alltoall_cluster.c): one per run-time synchronisation, labelled "runtime-<variant>"
RUNTIME_PREFIX = "runtime-"


def runtime_label(name: str) -> str:
    return RUNTIME_PREFIX + name


# MPI_Alltoall's default in a generated library: the run-time routine when every rank's machine
# is known, else the precomputed default variant (docs/generate.md)
AUTO = "auto"


def precomputed_name(name: str) -> str:
    """The precomputed variant a routine name of AAPC_VARIANT stands for: ``auto`` -> the
    default variant, ``runtime-receiver-all`` -> ``receiver-all``; other names unchanged.
    InputError for ``runtime-X`` when X has no run-time routine."""
    if name == AUTO:
        return DEFAULT_VARIANT
    if name.startswith(RUNTIME_PREFIX):
        base = name.removeprefix(RUNTIME_PREFIX)
        if base not in RUNTIME_SYNC_C:
            choices = ", ".join(runtime_label(v) for v in RUNTIME_SYNC_C)
            raise InputError(f"unknown run-time routine '{name}' (choose from: {choices})")
        return base
    return name


def routine_names() -> list[str]:
    """Every name AAPC_VARIANT and ``--variant`` take, besides a variant's label with a block
    size or a window (``sender-partial-4``, ``receiver-all-w4``)."""
    return [*VARIANTS, *(runtime_label(v) for v in RUNTIME_SYNC_C), AUTO, "all"]


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a close name, else ``""``."""
    close = difflib.get_close_matches(word, list(names), n=2, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"'{c}'" for c in close) + "?)"


def nonblocking_sync(spec: VariantSpec) -> str:
    """The run-time synchronisation (a name of RUNTIME_SYNC_C) that MPI_Ialltoall(v) and the
    persistent calls run when ``spec`` is the default routine. A non-blocking call progresses
    only inside the application's completion calls and may never wait there for the other
    ranks, so it keeps the pair-wise orderings and drops what waits for everybody: the
    default's own synchronisation when it runs at run time and has no barrier (no-sync,
    sender-all, receiver-all, with any window); the ``-all`` synchronisation of its kind for the
    partial variants (syncs every phase order at least what the partial ones order between
    barriers, so the phases stay contention-free); DEFAULT_VARIANT for barrier-all,
    barrier-partial-none and dummy (nothing pair-wise to keep)."""
    if spec.name in RUNTIME_SYNC_C and spec.barrier_every == 0:
        return spec.name
    if spec.kind in ("sender", "receiver"):
        return f"{spec.kind}-all"
    return DEFAULT_VARIANT


def default_variant(labels: Iterable[str]) -> str:
    """The variant a generated library runs unless told otherwise: the first of
    DEFAULT_PREFERENCE among ``labels``, else the first label."""
    labels = list(labels)
    return next((v for v in DEFAULT_PREFERENCE if v in labels), labels[0])


def help_text(default: str | None) -> str:
    """``--variant`` help, from the table."""
    names = ", ".join(VARIANTS)
    runtime = ", ".join(runtime_label(v) for v in RUNTIME_SYNC_C)
    return (
        f"seed 002 Table 5 variant: {names}, or all (default: {default}); "
        f"{', '.join(sorted(WINDOWED))} also with a window of w phases in flight: NAME-wW; "
        f"a partial variant with its block size: NAME-BS; every name AAPC_VARIANT takes: "
        f"{runtime} (the run-time routine, with its precomputed variant), {AUTO} (the default)"
    )


@dataclass(frozen=True)
class VariantSpec:
    name: str  # a name from VARIANTS
    block_size: int  # bs for partial variants, 1 otherwise
    kind: str  # "none", "sender" or "receiver": what fires pair-wise syncs
    scope: str  # "none", "all" (every phase), "cross" (across blocks), "within" (inside blocks)
    barrier_every: int  # 0: no barriers
    dummy: bool
    window: int = 1  # a rank keeps up to this many phases' sends in flight (WINDOWED)

    @property
    def label(self) -> str:
        """Variant name including its block size or window, e.g. ``sender-partial-4``,
        ``receiver-all-w4``."""
        if self.window > 1:
            return f"{self.name}{WINDOW_MARK}{self.window}"
        return f"{self.name}-{self.block_size}" if self.name in BLOCKED else self.name


# Variants that run with a window of w phases (label suffix -w<w>, e.g. receiver-all-w4): a rank
# starts its send of phase q once its sends and receives of phases <= q - w are complete (w = 1
# is the plain executor), and the syncs order each message on a link before the one w places
# later in the link's chain, so at most w x capacity messages are in flight per link
# (docs/scheduling.md "Windows"). Partial, barrier and dummy variants have no window.
WINDOWED = frozenset({"no-sync", "sender-all", "receiver-all"})
WINDOW_MARK = "-w"
MAX_WINDOW = 4096


def split_window(name: str) -> tuple[str, int]:
    """``receiver-all-w4`` -> (``receiver-all``, 4); any other name -> (name, 1)."""
    base, mark, tail = name.rpartition(WINDOW_MARK)
    if mark and base in WINDOWED and tail.isdigit():
        return base, int(tail)
    return name, 1


def variant_spec(name: str, block_size: int | None = None) -> VariantSpec:
    """Validate a variant name (``receiver-all``, ``receiver-all-w4``) and block size
    (InputError on bad values)."""
    name, window = split_window(name)
    variant = BY_NAME.get(name)
    if variant is None:
        hint = did_you_mean(name, routine_names())
        raise InputError(
            f"unknown variant '{name}'" + (hint or f" (choose from: {', '.join(routine_names())})")
        )
    if not 1 <= window <= MAX_WINDOW:
        raise InputError(
            f"variant '{name}{WINDOW_MARK}{window}': the window must be 1 to {MAX_WINDOW} phases"
        )
    if variant.blocked:
        if block_size is None:
            raise InputError(f"variant '{name}' needs --block-size N (phases per block)")
        if block_size < 1:
            raise InputError(f"--block-size must be at least 1, got {block_size}")
    elif block_size is not None:
        raise InputError(f"variant '{name}' takes no --block-size (only the partial variants do)")
    bs = block_size or 1
    barrier = {"none": 0, "phase": 1, "block": bs}[variant.barrier]
    return VariantSpec(name, bs, variant.kind, variant.scope, barrier, variant.dummy, window)


def split_label(label: str) -> tuple[str, int | None]:
    """``sender-partial-4`` -> (``sender-partial``, 4); ``receiver-all`` -> (``receiver-all``, None);
    ``receiver-all-w4`` -> (``receiver-all-w4``, None) (``split_window`` takes the window off)."""
    if split_window(label)[1] > 1:
        return label, None
    for name in sorted(VARIANTS, key=len, reverse=True):
        if label == name:
            return name, None
        rest = label[len(name) + 1 :]
        if label.startswith(name + "-") and rest.isdigit() and name in BLOCKED:
            return name, int(rest)
    raise ValueError(f"'{label}' is not a generated variant label")
