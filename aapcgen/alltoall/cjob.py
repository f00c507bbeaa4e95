"""Python's door to the run-time scheduler in C (runtime_c/cluster/): the phases the generated
library computes at the first MPI_Alltoall on a communicator, for tests, ``aapcgen schedule
--hosts`` and benchmarks.

The C sources are compiled once into a shared library in a cache folder keyed by their hash
(``$AAPC_CACHE``, else ``$XDG_CACHE_HOME/aapcgen``, else ``~/.cache/aapcgen``), with ``$CC`` or
``cc``.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from ctypes import byref
from dataclasses import astuple, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from aapcgen.alltoall.phases import Schedule
from aapcgen.codegen.cluster import COST_FIELDS, WAY_NAMES, cluster_tables, way_bits
from aapcgen.core.errors import AapcError, InputError
from aapcgen.core.model import Topology
from aapcgen.core.resources import resource_dir

_I32 = ctypes.POINTER(ctypes.c_int32)
_F64 = ctypes.POINTER(ctypes.c_double)
_STRS = ctypes.POINTER(ctypes.c_char_p)


class _Cluster(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("n_machines", ctypes.c_int32),
        ("n_switches", ctypes.c_int32),
        ("n_links", ctypes.c_int32),
        ("machine_name", _STRS),
        ("machine_host", _STRS),
        ("machine_switch", _I32),
        ("machine_bw", _F64),
        ("switch_name", _STRS),
        ("link_a", _I32),
        ("link_b", _I32),
        ("link_bw", _F64),
        ("reference_bw", ctypes.c_double),
        ("model", ctypes.c_void_p),  # const aapc_cost_model_t *: NULL, the defaults
        ("inflight_bytes", ctypes.c_double),
    ]


class _WayPoint(ctypes.Structure):
    _fields_ = [
        ("machines", ctypes.c_int32),
        ("per_machine", ctypes.c_int32),
        ("s_per_byte", ctypes.c_double),
        ("inflight", ctypes.c_double),
        ("bytes", ctypes.c_double),
        ("best", ctypes.c_uint32),
    ]


class _CostModel(ctypes.Structure):
    _fields_ = [(name, ctypes.c_double) for name in COST_FIELDS] + [
        ("tuned", ctypes.c_int),
        ("n_points", ctypes.c_int32),
        ("points", ctypes.POINTER(_WayPoint)),
    ]


MAX_DIGITS = 16  # AAPC_MAX_DIGITS (aapc_cluster.h)


class _Digits(ctypes.Structure):
    _fields_ = [
        ("levels", ctypes.c_int32),
        ("radix", ctypes.c_int32 * MAX_DIGITS),
        ("cap", ctypes.c_int32 * MAX_DIGITS),
        ("groups", ctypes.c_int32 * MAX_DIGITS),
    ]


class _Shape(ctypes.Structure):
    _fields_ = [
        ("ranks", ctypes.c_int32),
        ("machines", ctypes.c_int32),
        ("max_per_machine", ctypes.c_int32),
        ("equal_per_machine", ctypes.c_int32),
        ("rank_phases", ctypes.c_double),
        ("machine_phases", ctypes.c_double),
        ("bound_s_per_byte", ctypes.c_double),
        ("machine_load", ctypes.c_double),
        ("rank_load", ctypes.c_double),
        ("unit_s_per_byte", ctypes.c_double),
        ("machine_streamed", ctypes.c_int32),
        ("inflight", ctypes.c_double),
        ("digits", _Digits),
        ("rank_digits", _Digits),
    ]


class _Phases(ctypes.Structure):
    _fields_ = [
        ("n_ranks", ctypes.c_int32),
        ("n_phases", ctypes.c_int32),
        ("n_messages", ctypes.c_int64),
        ("phase", _I32),
        ("src", _I32),
        ("dst", _I32),
        ("lower_bound", ctypes.c_int32),
        ("root", ctypes.c_int32),
        ("bottleneck_a", ctypes.c_int32),
        ("bottleneck_b", ctypes.c_int32),
        ("error", ctypes.c_char * 160),
    ]


def cache_dir() -> Path:
    if os.environ.get("AAPC_CACHE"):
        return Path(os.environ["AAPC_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aapcgen"


@lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """The compiled run-time scheduler (built on first use)."""
    src = resource_dir("runtime_c") / "cluster"
    sources = sorted(src.glob("*.c"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(src.glob("*.[ch]"))))
    out = cache_dir() / f"libaapc_cluster-{digest.hexdigest()[:16]}.so"
    if not out.exists():
        cc = os.environ.get("CC") or "cc"
        if shutil.which(cc) is None:
            raise AapcError(f"no C compiler '{cc}' for the run-time scheduler (set CC)")
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
            part = Path(tmp) / out.name
            cmd = [cc, "-std=c11", "-O2", "-shared", "-fPIC", *map(str, sources), "-o", str(part)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                raise AapcError(f"compiling the run-time scheduler failed: {proc.stderr[-300:]}")
            os.replace(part, out)
    lib = ctypes.CDLL(str(out))
    lib.aapc_job_phases.argtypes = [
        ctypes.POINTER(_Cluster),
        _I32,
        ctypes.c_int32,
        ctypes.POINTER(_Phases),
    ]
    lib.aapc_job_phases.restype = ctypes.c_int
    lib.aapc_job_phases_unit.argtypes = lib.aapc_job_phases.argtypes
    lib.aapc_job_phases_unit.restype = ctypes.c_int
    lib.aapc_job_phases_free.argtypes = [ctypes.POINTER(_Phases)]
    lib.aapc_cluster_machine_of_host.argtypes = [ctypes.POINTER(_Cluster), ctypes.c_char_p]
    lib.aapc_cluster_machine_of_host.restype = ctypes.c_int32
    lib.aapc_job_shape.argtypes = [
        ctypes.POINTER(_Cluster),
        _I32,
        ctypes.c_int32,
        ctypes.POINTER(_Shape),
    ]
    lib.aapc_job_shape.restype = ctypes.c_int
    lib.aapc_way_cost.argtypes = [
        ctypes.POINTER(_CostModel),
        ctypes.POINTER(_Shape),
        ctypes.c_int,
        ctypes.c_double,
    ]
    lib.aapc_way_cost.restype = ctypes.c_double
    lib.aapc_way_choose.argtypes = [
        ctypes.POINTER(_CostModel),
        ctypes.POINTER(_Shape),
        ctypes.c_double,
        ctypes.c_uint,
    ]
    lib.aapc_way_choose.restype = ctypes.c_int
    lib.aapc_way_library_only.argtypes = [
        ctypes.POINTER(_CostModel),
        ctypes.POINTER(_Shape),
        ctypes.c_uint,
    ]
    lib.aapc_way_library_only.restype = ctypes.c_int
    lib.aapc_way_points_of.argtypes = [ctypes.POINTER(_CostModel), ctypes.POINTER(_Shape)]
    lib.aapc_way_points_of.restype = ctypes.c_int32
    lib.aapc_ways_possible.argtypes = [ctypes.POINTER(_Shape)]
    lib.aapc_ways_possible.restype = ctypes.c_uint
    lib.aapc_way_name.argtypes = [ctypes.c_int]
    lib.aapc_way_name.restype = ctypes.c_char_p
    lib.aapc_inflight_window.argtypes = [ctypes.c_double, ctypes.c_double, ctypes.c_double]
    lib.aapc_inflight_window.restype = ctypes.c_int32
    lib.aapc_cluster_machine_order.argtypes = [ctypes.POINTER(_Cluster), _I32]
    lib.aapc_cluster_machine_order.restype = ctypes.c_int
    lib.aapc_cluster_digits.argtypes = [
        ctypes.POINTER(_Cluster),
        _I32,
        ctypes.c_int32,
        ctypes.POINTER(_Digits),
    ]
    lib.aapc_cluster_digits.restype = ctypes.c_int
    return lib


def _strings(items: Sequence[str | None]) -> ctypes.Array:
    return (ctypes.c_char_p * len(items))(*[None if x is None else x.encode() for x in items])


def _c_cluster(cluster: Topology, keep: list) -> _Cluster:
    """The aapc_cluster_t of ``cluster``; ``keep`` holds the arrays it points into."""
    t = cluster_tables(cluster)

    def arr(a: np.ndarray, kind: type) -> ctypes._Pointer:
        a = np.ascontiguousarray(a)
        keep.append(a)
        return a.ctypes.data_as(ctypes.POINTER(kind))

    names, hosts, switches = (
        _strings(t.machine_name), _strings(t.machine_host), _strings(t.switch_name)
    )  # fmt: skip
    keep += [names, hosts, switches]
    return _Cluster(
        t.name.encode(), len(t.machine_name), len(t.switch_name), len(t.link_a),
        names, hosts, arr(t.machine_switch, ctypes.c_int32), arr(t.machine_bw, ctypes.c_double),
        switches, arr(t.link_a, ctypes.c_int32), arr(t.link_b, ctypes.c_int32),
        arr(t.link_bw, ctypes.c_double), t.reference_bw, None, t.inflight_bytes,
    )  # fmt: skip


def job_phases(cluster: Topology, rank_machine: Sequence[int], unit: bool = False) -> Schedule:
    """The phases the generated library computes for ranks on ``rank_machine`` (C): capacity-aware
    where switch links are faster than machine links, else seed 002's; ``unit``: seed 002's
    whatever the speeds."""
    keep: list = []  # the arrays must outlive the call
    c = _c_cluster(cluster, keep)
    rm = np.ascontiguousarray(rank_machine, dtype=np.int32)
    out = _Phases()
    lib = library()
    rm_ptr = rm.ctypes.data_as(_I32)
    run = lib.aapc_job_phases_unit if unit else lib.aapc_job_phases
    rc = run(ctypes.byref(c), rm_ptr, len(rm), ctypes.byref(out))
    if rc != 0:
        raise InputError(f"run-time scheduler: {out.error.decode(errors='replace')}")
    try:
        m = int(out.n_messages)
        take = lambda p: np.ctypeslib.as_array(p, shape=(m,)).copy()  # noqa: E731
        return Schedule(
            int(out.n_ranks), int(out.n_phases), take(out.phase), take(out.src), take(out.dst)
        )
    finally:
        lib.aapc_job_phases_free(ctypes.byref(out))


def machine_of_host(cluster: Topology, host: str) -> int:
    """The machine the runtime takes a rank on ``host`` to be on (C), or -1."""
    keep: list = []
    c = _c_cluster(cluster, keep)
    return int(library().aapc_cluster_machine_of_host(ctypes.byref(c), host.encode()))


# --------------------------------------------------------------------------- the selection


@dataclass(frozen=True)
class Digits:
    """The log-round exchange's digits over the job's machines (aapc_digits_t): radix, capacity
    and contention-free sub-phases of each level, bottom-up; empty: the tree is not uniform."""

    radix: tuple[int, ...]
    cap: tuple[int, ...]
    groups: tuple[int, ...]


def _digits_of(d: _Digits) -> Digits:
    n = int(d.levels)
    return Digits(tuple(d.radix[:n]), tuple(d.cap[:n]), tuple(d.groups[:n]))


def _c_digits(d: Digits) -> _Digits:
    pad = [0] * (MAX_DIGITS - len(d.radix))
    arr = ctypes.c_int32 * MAX_DIGITS
    return _Digits(len(d.radix), arr(*d.radix, *pad), arr(*d.cap, *pad), arr(*d.groups, *pad))


def _c_shape(shape: Shape) -> _Shape:
    values = astuple(shape)[:-2]
    return _Shape(*values, _c_digits(shape.digits), _c_digits(shape.rank_digits))


@dataclass(frozen=True)
class Shape:
    """What the per-call selection knows of a job (aapc_job_shape_t)."""

    ranks: int
    machines: int
    max_per_machine: int
    equal_per_machine: bool
    rank_phases: float
    machine_phases: float
    bound_s_per_byte: float
    machine_load: float
    rank_load: float
    unit_s_per_byte: float
    machine_streamed: int
    inflight: float = 65536.0  # windows' budget, bytes: the topology's, or AAPC_INFLIGHT_BYTES
    digits: Digits = field(default_factory=lambda: Digits((), (), ()))
    rank_digits: Digits = field(default_factory=lambda: Digits((), (), ()))


def job_shape(cluster: Topology, rank_machine: Sequence[int]) -> Shape:
    """The shape the generated library computes for ranks on ``rank_machine`` (C)."""
    keep: list = []
    c = _c_cluster(cluster, keep)
    rm = np.ascontiguousarray(rank_machine, dtype=np.int32)
    out = _Shape()
    if library().aapc_job_shape(ctypes.byref(c), rm.ctypes.data_as(_I32), len(rm), byref(out)):
        raise InputError(f"no job shape for {len(rm)} ranks on cluster {cluster.name}")
    scalars = [getattr(out, name) for name, _ in _Shape._fields_[:-2]]
    return Shape(*scalars, _digits_of(out.digits), _digits_of(out.rank_digits))


def cluster_digits(cluster: Topology, machines: Sequence[int]) -> Digits:
    """The log-round exchange's digits over ``machines`` (C: aapc_cluster_digits)."""
    keep: list = []
    c = _c_cluster(cluster, keep)
    ms = np.ascontiguousarray(machines, dtype=np.int32)
    out = _Digits()
    if library().aapc_cluster_digits(byref(c), ms.ctypes.data_as(_I32), len(ms), byref(out)):
        raise InputError(f"no digits for {len(ms)} machines on cluster {cluster.name}")
    return _digits_of(out)


def default_model() -> dict[str, float]:
    """The selection's constants of an untuned library (aapc_cost_model_default)."""
    m = _CostModel.in_dll(library(), "aapc_cost_model_default")
    return {name: float(getattr(m, name)) for name in COST_FIELDS}


WAYS = WAY_NAMES  # the C enum's order (aapc_cluster.h)


# A measured point (aapc_way_point_t): machines, ranks per machine, the job's bound (seconds
# per byte), its windows' budget (bytes), block bytes, the way(s) measured fastest there. A
# model dict may hold a tuple of them under "points" beside its constants
# (aapcgen/tune/model.py measured_points).
WayPoint = tuple[int, int, float, float, float, tuple[str, ...]]


def _c_model(model: Mapping[str, Any]) -> _CostModel:
    points = tuple(model.get("points", ()))
    array = (_WayPoint * max(len(points), 1))(
        *(_WayPoint(n, r, s, i, b, way_bits(best)) for n, r, s, i, b, best in points)
    )
    m = _CostModel(*(float(model[name]) for name in COST_FIELDS), 0, len(points), array)
    m._keep = array  # the points live as long as the struct
    return m


def way_costs(model: Mapping[str, Any], shape: Shape, block: float) -> dict[str, float]:
    """The model's time of every way that can run on ``shape`` for blocks of ``block`` bytes."""
    lib = library()
    m, s = _c_model(model), _c_shape(shape)
    possible = lib.aapc_ways_possible(byref(s))
    return {
        name: float(lib.aapc_way_cost(byref(m), byref(s), w, float(block)))
        for w, name in enumerate(WAYS)
        if possible & (1 << w)
    }


NO_WINDOWS = 1 << 16  # AAPC_WAYS_NO_WINDOWS (aapc_cluster.h)
ALLTOALLV = 1 << 17  # AAPC_WAYS_ALLTOALLV


def _ways_mask(allowed: Sequence[str], windows: bool, alltoallv: bool) -> int:
    """The ``allowed`` argument of aapc_way_choose: a bit per way and the flags."""
    mask = sum(1 << WAYS.index(w) for w in allowed) | (0 if windows else NO_WINDOWS)
    return mask | (ALLTOALLV if alltoallv else 0)


def way_chooser(
    model: Mapping[str, Any],
    shape: Shape,
    allowed: Sequence[str] = WAYS,
    windows: bool = True,
    alltoallv: bool = False,
) -> Callable[[float], str]:
    """choose_way for one model and shape at many block sizes: the C structures (the model's
    points among them) built once."""
    lib, m, s = library(), _c_model(model), _c_shape(shape)
    mask = _ways_mask(allowed, windows, alltoallv)

    def way_at(block: float) -> str:
        way = lib.aapc_way_choose(byref(m), byref(s), float(block), mask)
        return WAYS[way] if way >= 0 else "none"

    return way_at


def choose_way(
    model: Mapping[str, Any],
    shape: Shape,
    block: float,
    allowed: Sequence[str] = WAYS,
    windows: bool = True,
    alltoallv: bool = False,
) -> str:
    """The way the generated library takes for blocks of ``block`` bytes on ``shape``;
    ``windows`` False: the phased ways run one phase at a time (MPI_Alltoallv, the non-blocking
    calls); ``alltoallv``: the log rounds run among the ranks in the tree's digits or not at all
    (MPI_Alltoallv)."""
    return way_chooser(model, shape, allowed, windows, alltoallv)(block)


def points_of(model: Mapping[str, Any], shape: Shape) -> int:
    """How many of the model's measured points are of ``shape`` (C: aapc_way_points_of)."""
    return int(library().aapc_way_points_of(byref(_c_model(model)), byref(_c_shape(shape))))


def library_only(
    model: Mapping[str, Any],
    shape: Shape,
    allowed: Sequence[str] = WAYS,
    windows: bool = True,
    alltoallv: bool = False,
) -> bool:
    """Whether choose_way gives the library every block size on ``shape`` (C:
    aapc_way_library_only; MPI_Alltoallv then skips its agreement on the block)."""
    mask = _ways_mask(allowed, windows, alltoallv)
    return bool(
        library().aapc_way_library_only(byref(_c_model(model)), byref(_c_shape(shape)), mask)
    )


def inflight_window(message: float, phases: float, budget: float = 0) -> int:
    """The phases of ``message``-byte messages (a block, or a leader's aggregated block) a rank
    keeps in flight over a schedule of ``phases`` phases within ``budget`` bytes, 0 for the
    default (C: aapc_inflight_window)."""
    return int(library().aapc_inflight_window(float(message), float(phases), float(budget)))


def machine_order(cluster: Topology) -> list[int]:
    """The machines in the switch tree's order of the log-round exchange (C): machine indices by
    place (runtime_c/cluster/aapc_cluster_order.c)."""
    keep: list = []
    c = _c_cluster(cluster, keep)
    position = np.zeros(cluster.n_machines, dtype=np.int32)
    if library().aapc_cluster_machine_order(byref(c), position.ctypes.data_as(_I32)):
        raise InputError(f"cluster {cluster.name}: no tree order")
    order = [0] * cluster.n_machines
    for m, place in enumerate(position.tolist()):
        order[place] = m
    return order
