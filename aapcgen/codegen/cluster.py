"""The cluster's whole switch tree as C tables (runtime_c/cluster/aapc_cluster.h aapc_cluster_t).

``cluster_tables(topo)`` gives the arrays; ``render_cluster_c(tables, ident)`` writes them as C
initialisers (doubles as hex floats: the C side sees the same bits). The ctypes binding of the
run-time scheduler (aapcgen/alltoall/cjob.py) passes the same arrays to the same C code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aapcgen.core.model import Topology


@dataclass(frozen=True)
class ClusterTables:
    name: str
    machine_name: tuple[str, ...]
    machine_host: tuple[str | None, ...]
    machine_switch: np.ndarray  # int32, switch index
    machine_bw: np.ndarray  # float64, bytes/s
    switch_name: tuple[str, ...]
    link_a: np.ndarray  # int32, switch index, file order
    link_b: np.ndarray
    link_bw: np.ndarray  # float64
    reference_bw: float  # b_ref of the capacity model; 0: the slowest machine of the job
    # the per-call selection's constants measured by `aapcgen tune` (aapc_cost_model_t field
    # order, tuned = 1); None: the library's defaults (runtime_c/cluster/aapc_cluster_select.c)
    model: tuple[float, ...] | None = None
    inflight_bytes: float = 0.0  # the topology's `inflight`; 0: the library's default
    # the model's measured points (aapc_way_point_t: machines, ranks per machine, bound s/byte,
    # windows' bytes, block bytes, the bits of the way(s) fastest there), the model file's order
    points: tuple[tuple[int, int, float, float, float, int], ...] = ()


# aapc_cost_model_t's fields, in order (runtime_c/cluster/aapc_cluster.h)
COST_FIELDS = (
    "lib_alpha",
    "lib_beta",
    "phase_alpha",
    "phase_beta",
    "copy_beta",
    "round_alpha",
    "msg_alpha",
    "lib_msg_alpha",
    "lib_fwd_beta",
    "agree_alpha",
    "guard",
)


# aapc_cluster.h's AAPC_WAY_* order
WAY_NAMES = ("library", "phases", "leaders", "loground")


def way_bits(names: Iterable[str]) -> int:
    """A bit per named way (1 << AAPC_WAY_*), as aapc_way_point_t.best holds them."""
    return sum(1 << WAY_NAMES.index(w) for w in set(names))


def cluster_tables(topo: Topology, model: Mapping[str, Any] | None = None) -> ClusterTables:
    """The tables of ``topo``; ``model``: measured constants of the selection (COST_FIELDS)
    and its measured points (``points``, optional)."""
    index = {s: i for i, s in enumerate(topo.switches)}
    return ClusterTables(
        name=topo.name,
        machine_name=tuple(topo.machines),
        machine_host=tuple(topo.hosts),
        machine_switch=np.array([index[s] for s in topo.machine_switch], dtype=np.int32),
        machine_bw=np.array(topo.machine_bandwidth, dtype=np.float64),
        switch_name=tuple(topo.switches),
        link_a=np.array([index[ln.a] for ln in topo.links], dtype=np.int32),
        link_b=np.array([index[ln.b] for ln in topo.links], dtype=np.int32),
        link_bw=np.array([ln.bandwidth for ln in topo.links], dtype=np.float64),
        reference_bw=float(topo.reference_bandwidth or 0.0),
        model=None if model is None else tuple(float(model[k]) for k in COST_FIELDS),
        inflight_bytes=float(topo.inflight or 0.0),
        points=tuple(
            (int(n), int(r), float(sb), float(i), float(b), way_bits(best))
            for n, r, sb, i, b, best in (model or {}).get("points", ())
        ),
    )


def _c_string(text: str | None) -> str:
    return "NULL" if text is None else json.dumps(text)  # names are ASCII (topology loader)


def _rows(items: list[str], per_line: int) -> str:
    return ",\n".join(
        "    " + ", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)
    )


def render_cluster_c(t: ClusterTables, ident: str) -> str:
    """C definitions of the tables and ``const aapc_cluster_t IDENT`` (after ``#include
    "aapc_cluster.h"``)."""
    if not ident.isidentifier():
        raise ValueError(f"{ident!r} is not a C identifier")
    n, s, nl = len(t.machine_name), len(t.switch_name), len(t.link_a)

    def ints(a: np.ndarray) -> str:
        return _rows([str(int(v)) for v in a], 20) if len(a) else "    0"

    def doubles(a: np.ndarray) -> str:
        return _rows([float(v).hex() for v in a], 4) if len(a) else "    0"

    model = "NULL"
    out = []
    if t.model is not None:
        fields = ", ".join(f".{k} = {v.hex()}" for k, v in zip(COST_FIELDS, t.model))
        if t.points:
            rows = [
                f"{{{n}, {r}, {sb.hex()}, {i.hex()}, {b.hex()}, {best}u}}"
                for n, r, sb, i, b, best in t.points
            ]
            out.append(
                f"static const aapc_way_point_t {ident}_points[{len(rows)}] = {{\n"
                f"{_rows(rows, 2)}\n}};"
            )
            fields += f", .n_points = {len(rows)}, .points = {ident}_points"
        out.append(f"static const aapc_cost_model_t {ident}_model = {{{fields}, .tuned = 1}};")
        model = f"&{ident}_model"
    out += [
        f"static const char *const {ident}_machine_name[{n}] = {{\n"
        f"{_rows([_c_string(x) for x in t.machine_name], 8)}\n}};",
        f"static const char *const {ident}_machine_host[{n}] = {{\n"
        f"{_rows([_c_string(x) for x in t.machine_host], 8)}\n}};",
        f"static const int32_t {ident}_machine_switch[{n}] = {{\n{ints(t.machine_switch)}\n}};",
        f"static const double {ident}_machine_bw[{n}] = {{\n{doubles(t.machine_bw)}\n}};",
        f"static const char *const {ident}_switch_name[{s}] = {{\n"
        f"{_rows([_c_string(x) for x in t.switch_name], 8)}\n}};",
        f"static const int32_t {ident}_link_a[{max(nl, 1)}] = {{\n{ints(t.link_a)}\n}};",
        f"static const int32_t {ident}_link_b[{max(nl, 1)}] = {{\n{ints(t.link_b)}\n}};",
        f"static const double {ident}_link_bw[{max(nl, 1)}] = {{\n{doubles(t.link_bw)}\n}};",
        f"const aapc_cluster_t {ident} = {{{_c_string(t.name)}, {n}, {s}, {nl}, "
        f"{ident}_machine_name, {ident}_machine_host, {ident}_machine_switch, {ident}_machine_bw, "
        f"{ident}_switch_name, {ident}_link_a, {ident}_link_b, {ident}_link_bw, "
        f"{float(t.reference_bw).hex()}, {model}, {float(t.inflight_bytes).hex()}}};",
    ]
    return "\n".join(out) + "\n"
