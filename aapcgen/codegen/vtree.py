"""The tree tables the C Alltoallv schedulers need (runtime_c/vsched/aapc_vsched.h).

``vtree_tables(topo, with_template)`` computes, exactly as ``vschedule.py`` does, the arrays of
an ``aapc_vtree``: ``parent`` (``tree.hang``), ``up_bw`` (bytes/s of each node's link to its
parent, 0 at the root) and ``template_phase`` (n*n, the phase of src*n+dst in the optimal AAPC
schedule of ``phases.build_phases``, -1 on the diagonal). ``render_vtree_c`` writes them as C
initialisers; doubles are written as C99 hex floats so the C side sees the same bits.
"""

from __future__ import annotations

import numpy as np

from aapcgen.alltoall.phases import build_phases
from aapcgen.alltoall.tree import analyze, hang, uplink_bandwidths
from aapcgen.core.model import Topology


def template_phase_table(topo: Topology) -> np.ndarray:
    """n*n int64: phase of message src*n+dst in ``build_phases``; -1 on the diagonal."""
    n = topo.n_machines
    table = np.full(n * n, -1, dtype=np.int64)
    if n < 2:
        return table
    sched = build_phases(analyze(topo))
    table[sched.src.astype(np.int64) * n + sched.dst] = sched.phase
    return table


def vtree_tables(topo: Topology, with_template: bool) -> dict[str, np.ndarray | int | None]:
    """``n_machines``, ``n_nodes``, ``parent`` (int64), ``up_bw`` (float64) and
    ``template_phase`` (int64 n*n, or None without the template)."""
    tree = hang(topo)
    return {
        "n_machines": topo.n_machines,
        "n_nodes": len(tree.names),
        "parent": tree.parent.astype(np.int64),
        "up_bw": uplink_bandwidths(topo, tree).astype(np.float64),
        "template_phase": template_phase_table(topo) if with_template else None,
    }


def _c_ints(values: np.ndarray, per_line: int = 20) -> str:
    items = [str(int(v)) for v in values]
    return ",\n".join(
        "    " + ", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)
    )


def _c_doubles(values: np.ndarray, per_line: int = 4) -> str:
    items = [float(v).hex() for v in values]
    return ",\n".join(
        "    " + ", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)
    )


def render_vtree_c(tables: dict[str, np.ndarray | int | None], name: str) -> str:
    """C definitions ``static const int NAME_parent[]``, ``static const double NAME_up_bw[]``,
    ``static const int NAME_template_phase[]`` (when present) and ``static const aapc_vtree
    NAME`` (needs ``#include "aapc_vsched.h"`` before it)."""
    if not name.isidentifier():
        raise ValueError(f"{name!r} is not a C identifier")
    n, nn = int(tables["n_machines"]), int(tables["n_nodes"])
    parent = np.asarray(tables["parent"])
    up_bw = np.asarray(tables["up_bw"])
    template = tables["template_phase"]
    out = [
        f"static const int {name}_parent[{nn}] = {{\n{_c_ints(parent)}\n}};",
        f"static const double {name}_up_bw[{nn}] = {{\n{_c_doubles(up_bw)}\n}};",
    ]
    tmpl_ref = "NULL"
    if template is not None:
        out.append(
            f"static const int {name}_template_phase[{n * n}] = {{\n"
            f"{_c_ints(np.asarray(template))}\n}};"
        )
        tmpl_ref = f"{name}_template_phase"
    out.append(
        f"static const aapc_vtree {name} = {{{n}, {nn}, {name}_parent, {name}_up_bw, {tmpl_ref}}};"
    )
    return "\n".join(out) + "\n"


def render_vtree_text(tables: dict[str, np.ndarray | int | None]) -> str:
    """The tree part of tests/c/vsched_driver.c's input format (same exact hex doubles)."""
    template = tables["template_phase"]
    lines = [
        "aapc-vsched 1",
        f"{int(tables['n_machines'])} {int(tables['n_nodes'])}",
        " ".join(str(int(v)) for v in np.asarray(tables["parent"])),
        " ".join(float(v).hex() for v in np.asarray(tables["up_bw"])),
        "0" if template is None else "1",
    ]
    if template is not None:
        lines.append(" ".join(map(str, np.asarray(template).tolist())))
    return "\n".join(lines) + "\n"
