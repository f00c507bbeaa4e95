"""The per-call selection's cost model, fitted to measured calls (runtime_c/cluster/
aapc_cluster_select.c holds the model; this module only fits its constants).

Every way's time is linear in the constants (``lib_alpha lg P + lib_beta S b`` and so on), so the
feature of a constant for one call is the C cost function evaluated with that constant 1 and the
others 0: the formulas exist once, in C, and Python never restates them. The library's two
constants are fitted to the library's own calls (its default algorithm, what ``PMPI_Alltoall``
runs); ours jointly to the calls of every way of ours. The fit is a least-squares fit of the
relative error (each call's residual divided by its time), with every constant >= 0.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aapcgen.alltoall.cjob import WAYS, Shape, WayPoint, default_model, way_costs
from aapcgen.codegen.cluster import COST_FIELDS
from aapcgen.core.errors import InputError
from aapcgen.core.inputs import read_bytes

LIBRARY_FIELDS = ("lib_alpha", "lib_beta", "lib_msg_alpha", "lib_fwd_beta")
OURS_FIELDS = ("phase_alpha", "phase_beta", "copy_beta", "round_alpha", "msg_alpha", "agree_alpha")
# constants a model file written before they existed may lack: read as 0 (msg_alpha: the
# per-message part of a phase, counted in phase_alpha by those files)
OPTIONAL_FIELDS = ("msg_alpha", "lib_msg_alpha", "lib_fwd_beta", "agree_alpha", "guard")
# the guard is not a cost: ours is taken only where it is below (1 - guard) times the library's
# (runtime_c/cluster/aapc_cluster_select.c), guard = the fit's median relative error, at most
MAX_GUARD = 0.5


@dataclass(frozen=True)
class Call:
    """One measured way: its job's shape, block size (bytes) and median seconds per call."""

    shape: Shape
    way: str  # library, phases, leaders, loground (cjob.WAYS)
    bytes: int
    seconds: float


def features(call: Call, fields: Sequence[str]) -> np.ndarray:
    """d time / d constant for each of ``fields`` (the cost is linear in them)."""
    out = []
    for name in fields:
        unit = {k: 1.0 if k == name else 0.0 for k in COST_FIELDS}
        out.append(way_costs(unit, call.shape, call.bytes).get(call.way, 0.0))
    return np.array(out)


def nonnegative_fit(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """min |a x - y| with x >= 0, for a few columns: the best unconstrained fit over every subset
    of columns whose solution is nonnegative (the others 0)."""
    n = a.shape[1]
    best, best_err = np.zeros(n), float(np.sum(y * y))
    for k in range(1, n + 1):
        for cols in itertools.combinations(range(n), k):
            x, *_ = np.linalg.lstsq(a[:, cols], y, rcond=None)
            if np.any(x < 0):
                continue
            err = float(np.sum((a[:, cols] @ x - y) ** 2))
            if err < best_err:
                best, best_err = np.zeros(n), err
                best[list(cols)] = x
    return best


def fit_group(calls: Sequence[Call], fields: Sequence[str]) -> dict[str, float]:
    """The constants of ``fields`` fitted to ``calls`` (relative least squares, >= 0); a constant
    no call depends on keeps the default."""
    defaults = default_model()
    if not calls:
        return {k: defaults[k] for k in fields}
    a = np.array([features(c, fields) / c.seconds for c in calls])
    x = nonnegative_fit(a, np.ones(len(calls)))
    used = np.any(a != 0, axis=0)
    return {k: float(x[i]) if used[i] else defaults[k] for i, k in enumerate(fields)}


def fit_model(calls: Iterable[Call]) -> dict[str, Any]:
    """Every constant of the model from measured calls of the library and of our ways, the
    guard (the median of the fitted costs' relative errors, at most MAX_GUARD) and the measured
    points (measured_points)."""
    calls = [c for c in calls if c.seconds > 0]
    library = [c for c in calls if c.way == "library"]
    ours = [c for c in calls if c.way != "library"]
    model = {**fit_group(library, LIBRARY_FIELDS), **fit_group(ours, OURS_FIELDS), "guard": 0.0}
    guard = guard_of(relative_errors(model, calls))
    return {**model, "guard": guard, "points": measured_points(calls)}


def measured_points(calls: Iterable[Call]) -> tuple[WayPoint, ...]:
    """Each measured point (a job shape with the same ranks on every machine, its windows'
    budget, a block size) where the library's routine and one of our ways were measured, with
    the way measured fastest there (each way's least time; several on a tie), sorted as
    aapc_way_point_t requires. The generated library takes it at that size, and between two
    measured sizes at most a factor 2 apart the model's choice between their fastest
    (runtime_c/cluster/aapc_cluster_select.c)."""
    best: dict[tuple[int, int, float, float, float], dict[str, float]] = {}
    for c in calls:
        if c.seconds <= 0 or not c.shape.equal_per_machine or c.way not in WAYS:
            continue
        sh = c.shape
        key = (sh.machines, sh.max_per_machine, sh.bound_s_per_byte, sh.inflight, float(c.bytes))
        times = best.setdefault(key, {})
        times[c.way] = min(times.get(c.way, c.seconds), c.seconds)
    points = []
    for key, times in sorted(best.items()):
        if "library" in times and len(times) > 1:
            fastest = min(times.values())
            points.append((*key, tuple(w for w in WAYS if times.get(w) == fastest)))
    return tuple(points)


def model_lines(model: dict[str, Any]) -> list[str]:
    """The constants, one per line, and how many measured points the model holds."""
    lines = [f"  {k} = {v:.4g}" for k, v in model.items() if k != "points"]
    return lines + [f"  points = {len(model.get('points', ()))} measured points"]


def guard_of(errors: Sequence[float]) -> float:
    """The margin by which ours must win: the median |relative error|, at most MAX_GUARD."""
    if not errors:
        return 0.0
    return min(MAX_GUARD, float(np.median(np.abs(np.asarray(errors, dtype=float)))))


def relative_errors(model: dict[str, Any], calls: Iterable[Call]) -> list[float]:
    """(predicted - measured) / measured for each call."""
    return [
        way_costs(model, c.shape, c.bytes)[c.way] / c.seconds - 1.0
        for c in calls
        if c.way in way_costs(model, c.shape, c.bytes)
    ]


# --------------------------------------------------------------------------- model files


def write_model(path: Path, model: dict[str, Any], calls: Sequence[Call], source: str) -> None:
    """DIR/model.json: the fitted constants (what ``--model`` compiles into a library), the calls
    they were fitted to and each call's relative error."""
    errors = relative_errors(model, calls)
    path.write_text(
        json.dumps(
            {
                "model": model,
                "source": source,
                "calls": [{**asdict(c), "error": e} for c, e in zip(calls, errors)],
            },
            indent=1,
        )
    )


MAX_POINTS = 4096  # measured points a model file may hold (the generated table's rows)


def read_model(path: str) -> dict[str, Any]:
    """The constants of a model file (``aapcgen tune`` wrote it) and its measured points
    (``points``, optional: a file written before them has none); one-line errors."""
    try:
        data = json.loads(read_bytes(path, path, "model file").decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a model file (malformed JSON: {exc})") from None
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict):
        raise InputError(f"{path}: not a model file (no 'model' object)")
    out = {}
    for k in COST_FIELDS:
        v = model.get(k, 0.0 if k in OPTIONAL_FIELDS else None)
        if k == "guard" and (type(v) not in (int, float) or not (0 <= v <= MAX_GUARD)):
            raise InputError(
                f"{path}: model.guard must be a fraction in [0, {MAX_GUARD}], got {v!r}"
            )
        if type(v) not in (int, float) or not (0 <= v < 1e6):
            raise InputError(f"{path}: model.{k} must be a number of seconds >= 0, got {v!r}")
        out[k] = float(v)
    return {**out, "points": read_points(path, model.get("points", []))}


def read_points(path: str, points: object) -> tuple[WayPoint, ...]:
    """model.points of a model file: [machines, ranks per machine, bound s/byte, windows'
    bytes, block bytes, [the fastest way(s)]] each, at most MAX_POINTS, in aapc_way_point_t's order;
    one-line errors naming the entry."""
    if not isinstance(points, list) or len(points) > MAX_POINTS:
        raise InputError(f"{path}: model.points must be a list of at most {MAX_POINTS} entries")
    out = []
    for i, p in enumerate(points):
        ok = isinstance(p, list) and len(p) == 6
        if ok:
            n, r, s, budget, b, best = p
            ok = type(n) is int and type(r) is int and n >= 1 and r >= 1
            ok = ok and all(type(v) in (int, float) and 0 <= v < 1e18 for v in (s, budget, b))
            ok = ok and isinstance(best, list) and len(best) > 0 and all(w in WAYS for w in best)
        if not ok:
            raise InputError(
                f"{path}: model.points[{i}] must be [machines, ranks per machine, seconds per "
                f"byte, inflight bytes, block bytes, [ways among {', '.join(WAYS)}]], got {p!r}"
            )
        out.append((n, r, float(s), float(budget), float(b), tuple(best)))
    if out != sorted(out, key=lambda q: q[:5]) or len({q[:5] for q in out}) < len(out):
        raise InputError(f"{path}: model.points must be sorted and unique by their first five")
    return tuple(out)
