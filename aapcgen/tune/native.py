"""Native tuning files from a sweep's measurements: users benefit even without the generated code.

* MPICH: a Csel JSON for ``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE``. Keys form a decision tree
  (MPICH's own maint/tuning/coll/mpir/generic.json); for MPI_Alltoall ``avg_msg_size`` is
  sendcount x type size, the bytes per block. The file replaces MPICH's whole built-in tree
  (MPI_Init asserts when a collective is missing), so it is the library's own tree, read from
  libmpi, with the alltoall subtree replaced; that keeps MPICH's rules for in-place calls,
  inter-communicators and every communicator size other than the tuned one.
* Open MPI (coll/tuned, 5.x): a classic ``rule-file-version-2`` dynamic rules file for
  ``coll_tuned_dynamic_rules_filename`` (with ``coll_tuned_use_dynamic_rules 1``). For alltoall
  its message size is type size x count x communicator size; a rule applies from its size up to
  the next one; algorithm 0 means "use the fixed decision" (the library's default).

Both are pure functions of the native-only decision (tune_decide.merge over native candidates).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from aapcgen.measure.mpi import OMPI_ALGORITHMS
from aapcgen.tune.decide import DEFAULT, NATIVE_PREFIX, Range

MPICH_ALGORITHMS = {
    "brucks": "MPIR_Alltoall_intra_brucks",
    "k_brucks": "MPIR_Alltoall_intra_k_brucks",
    "scattered": "MPIR_Alltoall_intra_scattered",
    "pairwise": "MPIR_Alltoall_intra_pairwise",
}
OMPI_ALLTOALL_ID = 3  # ALLTOALL in ompi/mca/coll/base/coll_base_functions.h


def mpich_generic_alltoall(n: int) -> dict:
    """MPICH 4.x/5.0's built-in alltoall rules for non-in-place intra-communicators of size n
    (generic.json): < 8 ranks: scattered up to 32 KiB, then pairwise; else brucks up to 256 B."""
    if n < 8:
        return {
            "avg_msg_size<=32768": {"algorithm=MPIR_Alltoall_intra_scattered": {}},
            "avg_msg_size=any": {"algorithm=MPIR_Alltoall_intra_pairwise": {}},
        }
    return {
        "avg_msg_size<=256": {"algorithm=MPIR_Alltoall_intra_brucks": {}},
        "avg_msg_size<=32768": {"algorithm=MPIR_Alltoall_intra_scattered": {}},
        "avg_msg_size=any": {"algorithm=MPIR_Alltoall_intra_pairwise": {}},
    }


def mpich_default_algorithm(n: int, size: int) -> str:
    """The algorithm MPICH's default selection runs for ``size`` bytes per block on n ranks."""
    for key, leaf in mpich_generic_alltoall(n).items():
        limit = key.split("<=")[1] if "<=" in key else None
        if limit is None or size <= int(limit):
            return next(iter(leaf)).removeprefix("algorithm=")
    raise AssertionError("generic rules end with =any")


def _mpich_algorithm(candidate: str, n: int, size: int) -> str:
    if candidate == DEFAULT:
        return mpich_default_algorithm(n, size)
    name = candidate.removeprefix(NATIVE_PREFIX)
    if name not in MPICH_ALGORITHMS:
        raise ValueError(f"'{candidate}' is not an MPICH alltoall algorithm")
    return MPICH_ALGORITHMS[name]


def _generic_limits(n: int) -> list[tuple[int | None, str]]:
    """MPICH's default as (inclusive upper limit or None, algorithm) pairs."""
    return [
        (int(k.split("<=")[1]) if "<=" in k else None, next(iter(v)).removeprefix("algorithm="))
        for k, v in mpich_generic_alltoall(n).items()
    ]


def _mpich_entries(r: Range, n: int) -> list[tuple[int | None, str]]:
    """(inclusive upper limit or None, algorithm) entries of one range; a native-default range
    keeps MPICH's own switch points inside it."""
    top = None if r.hi is None else r.hi - 1
    if r.candidate != DEFAULT:
        return [(top, _mpich_algorithm(r.candidate, n, r.lo))]
    out = [
        (limit, alg)
        for limit, alg in _generic_limits(n)
        if limit is not None and r.lo <= limit and (top is None or limit < top)
    ]
    return [*out, (top, mpich_default_algorithm(n, 2**62 if top is None else top))]


def mpich_builtin_tree(library: Path) -> dict:
    """MPICH's compiled-in MPIR selection tree (generic.json), read from its shared library.

    MPICH asserts at MPI_Init when the tuning file lacks a collective it needs, so the file must be
    the whole tree; the library's own copy keeps every other collective exactly as it was."""
    try:
        data = library.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {library}: {exc.strerror}") from None
    for m in re.finditer(rb'\{"collective=', data):
        end = data.find(b"\0", m.start())
        try:
            tree = json.loads(data[m.start() : end])
        except ValueError:
            continue
        if "MPIR_Alltoall_intra" in json.dumps(tree.get("collective=alltoall", {})):
            return tree
    raise ValueError(f"no MPIR collective selection tree found in {library}")


def mpich_csel_json(ranges: list[Range], n: int, base: dict | None = None) -> str:
    """The Csel JSON: ``base`` (MPICH's built-in tree) with the alltoall subtree replaced.

    On intra-communicators of exactly n ranks, not in place, each range becomes
    ``avg_msg_size<=hi-1`` with its native algorithm; in-place calls, inter-communicators and
    every other communicator size keep the built-in rules (MPICH 4.x/5.0's when no base)."""
    tuned: dict[str, dict] = {}
    for r in ranges:
        for limit, alg in _mpich_entries(r, n):
            key = "avg_msg_size=any" if limit is None else f"avg_msg_size<={limit}"
            tuned[key] = {f"algorithm={alg}": {}}
    generic: dict = {
        "comm_size<8": mpich_generic_alltoall(1),
        "comm_size=any": mpich_generic_alltoall(8),
    }
    inplace: dict = {"algorithm=MPIR_Alltoall_intra_pairwise_sendrecv_replace": {}}
    inter: dict = {"algorithm=MPIR_Alltoall_inter_pairwise_exchange": {}}
    old = (base or {}).get("collective=alltoall", {})
    intra = old.get("comm_type=intra", {})
    if "is_sendbuf_inplace=no" in intra and "is_sendbuf_inplace=yes" in intra:
        generic, inplace = intra["is_sendbuf_inplace=no"], intra["is_sendbuf_inplace=yes"]
    inter = old.get("comm_type=inter", inter)
    alltoall = {
        "comm_type=intra": {
            "is_sendbuf_inplace=yes": inplace,
            # only "<=" keys: MPICH 5.0.2 evaluates "comm_size<N" as <= N (seen in its
            # MPIR_Csel prune step; tests/test_tune.py probes the selected sizes)
            "is_sendbuf_inplace=no": {
                f"comm_size<={n - 1}": generic,
                f"comm_size<={n}": tuned,
                "comm_size=any": generic,
            },
        },
        "comm_type=inter": inter,
    }
    tree = {k: v for k, v in (base or {}).items()}
    tree["collective=alltoall"] = alltoall
    return json.dumps(tree, indent=1) + "\n"


def ompi_algorithm(candidate: str) -> int:
    if candidate == DEFAULT:
        return 0
    name = candidate.removeprefix(NATIVE_PREFIX)
    if name not in OMPI_ALGORITHMS:
        raise ValueError(f"'{candidate}' is not an Open MPI coll/tuned alltoall algorithm")
    return OMPI_ALGORITHMS[name]


def ompi_rules_file(ranges: list[Range], n: int) -> str:
    """coll/tuned dynamic rules (classic format, version 2) for communicators of n ranks; larger
    communicators fall back to the fixed decision (algorithm 0), smaller ones have no rule."""
    lines = [
        "rule-file-version-2",
        "1 # collectives with rules",
        f"{OMPI_ALLTOALL_ID} # alltoall",
        "2 # communicator sizes",
        f"{n} # tuned communicator size",
        f"{len(ranges)} # message size rules (bytes = block bytes x {n})",
    ]
    for r in ranges:
        lines.append(
            f"{r.lo * n} {ompi_algorithm(r.candidate)} 0 0 0 # {r.candidate} from {r.lo} B per block"
        )
    lines += [f"{n + 1} # larger communicators", "1", "0 0 0 0 0 # fixed decision"]
    return "\n".join(lines) + "\n"
