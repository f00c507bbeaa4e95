"""MPI_Alltoallv count patterns: an N x N matrix of byte counts (row = sender, column = receiver,
rank order; the diagonal is a local copy and is set to 0).

Formats: ``.yaml``/``.yml`` (a list of N lists), ``.csv`` (N lines of N numbers), ``.npy`` (a
2-D numeric array), or ``builtin:table3`` (seed 000 Table 3). Every problem is a one-line
:class:`InputError` ``<file>[:<line>]: <what>``, found before anything of the pattern's size is
allocated where it can be: the file (core/inputs.py: its size, no device), a .npy header's shape,
the CSV rows and fields as they are read.

A count is at most ``MAX_COUNT`` bytes and all counts together at most ``MAX_TOTAL``, so that no
sum a scheduler forms overflows 64 bits.
"""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path

import numpy as np

from aapcgen.core.errors import InputError
from aapcgen.core.inputs import read_bytes, read_text
from aapcgen.core.model import Topology
from aapcgen.core.safeyaml import read_yaml

BUILTIN_PATTERNS = ("builtin:table3",)
FORMATS = (".yaml", ".yml", ".csv", ".npy")
MAX_COUNT = 2**48  # bytes of one message (256 TiB)
MAX_TOTAL = 2**62  # bytes of all messages together
NUMBER_CHARS = 40  # a CSV field longer than this is no count
CSV_FIELD_CHARS = 4096  # a longer CSV field is refused by the reader itself


def table3_pattern(n: int = 16, seed: int = 3) -> np.ndarray:
    """Seed 000 Table 3: on 16 nodes, 160 messages of 64 KB, 20 of 16 KB and 60 of 100 B, placed
    on the 240 ordered pairs by a fixed-seed random permutation (scaled proportionally for other
    ``n``)."""
    pairs = [(s, d) for s in range(n) for d in range(n) if s != d]
    total = len(pairs)
    n64 = total * 160 // 240
    n16 = total * 20 // 240
    sizes = np.array([65536] * n64 + [16384] * n16 + [100] * (total - n64 - n16), dtype=np.int64)
    order = np.random.default_rng(seed).permutation(total)
    pattern = np.zeros((n, n), dtype=np.int64)
    for (s, d), size in zip(pairs, sizes[order]):
        pattern[s, d] = size
    return pattern


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= NUMBER_CHARS else text[: NUMBER_CHARS - 3] + "..."


def _count(value: object, where: str) -> int:
    """One matrix entry as a byte count, or InputError naming ``where``."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int:
        raise InputError(f"{where}: {_shown(value)} is not an integer byte count")
    if value < 0:
        raise InputError(f"{where}: negative byte count {_shown(value)}")
    if value > MAX_COUNT:
        raise InputError(f"{where}: {_shown(value)} bytes is more than the largest count 2^48")
    return value


def _check_total(matrix: np.ndarray, source: str) -> np.ndarray:
    np.fill_diagonal(matrix, 0)
    if float(matrix.sum(dtype=np.float64)) > MAX_TOTAL:
        raise InputError(
            f"{source}: the counts add up to more than 2^{MAX_TOTAL.bit_length() - 1} bytes"
        )
    return matrix


def validate_pattern(
    data: object, n: int, source: str, lines: dict[int, int] | None = None
) -> np.ndarray:
    """An N x N matrix of non-negative integers -> int64 array with a zero diagonal.
    ``lines[i]`` is the file line of row i, for messages."""
    if isinstance(data, np.ndarray):
        return _validate_array(data, n, source)
    rows = data
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise InputError(f"{source}: pattern must be a list of {n} rows of {n} byte counts")
    if len(rows) != n or any(len(r) != n for r in rows):
        widths = sorted({len(r) for r in rows})
        got = f"{len(rows)}x{widths[0]}" if len(widths) == 1 else f"{len(rows)} rows of {widths}"
        if len(got) > 60:
            got = f"{len(rows)} rows of {len(widths)} different lengths"
        raise InputError(
            f"{source}: pattern must be {n}x{n} (one row and column per machine), got {got}"
        )
    out = np.zeros((n, n), dtype=np.int64)
    for i, row in enumerate(rows):
        line = f":{lines[i]}" if lines and i in lines else ""
        for j, v in enumerate(row):
            out[i, j] = _count(v, f"{source}{line}: row {i}, column {j}")
    return _check_total(out, source)


def _validate_array(arr: np.ndarray, n: int, source: str) -> np.ndarray:
    """A .npy array: 2-D, N x N, numeric, every entry a count (checked without a Python loop)."""
    if arr.ndim != 2:
        raise InputError(f"{source}: pattern must be a 2-D array, got {arr.ndim}-D")
    if arr.shape != (n, n):
        raise InputError(
            f"{source}: pattern must be {n}x{n} (one row and column per machine), "
            f"got {arr.shape[0]}x{arr.shape[1]}"
        )
    if arr.dtype.kind not in "iuf":
        raise InputError(f"{source}: pattern dtype {arr.dtype} is not numeric")
    bad = np.zeros(arr.shape, dtype=bool)
    if arr.dtype.kind == "f":
        bad |= ~np.isfinite(arr)
        bad |= np.where(bad, False, np.floor(np.nan_to_num(arr)) != np.nan_to_num(arr))
    bad |= np.nan_to_num(arr) < 0
    bad |= np.nan_to_num(arr) > MAX_COUNT
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        value = arr[i, j].item()
        _count(value, f"{source}: row {i}, column {j}")  # raises with the reason
    return _check_total(arr.astype(np.int64), source)


def _npy(path: str, n: int) -> np.ndarray:
    """Read a .npy pattern after checking its header: an N x N numeric array."""
    data = read_bytes(path, path, "pattern file")
    with io.BytesIO(data) as f:
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, _, dtype = np.lib.format.read_array_header_2_0(f)
        except (ValueError, EOFError, OSError) as exc:
            raise InputError(f"{path}: not a .npy array file ({_reason(exc)})") from None
    if len(shape) != 2:
        raise InputError(f"{path}: pattern must be a 2-D array, got {len(shape)}-D")
    if tuple(shape) != (n, n):
        raise InputError(
            f"{path}: pattern must be {n}x{n} (one row and column per machine), "
            f"got {shape[0]}x{shape[1]}"
        )
    if dtype.kind not in "iuf":
        raise InputError(f"{path}: pattern dtype {dtype} is not numeric")
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError, OSError) as exc:
        raise InputError(f"{path}: not a readable .npy array ({_reason(exc)})") from None


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _csv_value(text: str) -> object:
    text = text.strip()
    if len(text) > NUMBER_CHARS:
        return text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _csv(text: str, source: str, n: int) -> tuple[list[list[object]], dict[int, int]]:
    """The rows of a CSV pattern (blank lines skipped) and the line of each row."""
    rows: list[list[object]] = []
    lines: dict[int, int] = {}
    reader = csv.reader(io.StringIO(text, newline=""))
    previous = csv.field_size_limit(CSV_FIELD_CHARS)
    try:
        for row in reader:
            if not row or not any(c.strip() for c in row):
                continue
            if len(rows) == n or len(row) > n:
                what = "rows" if len(rows) == n else "numbers in a row"
                raise InputError(
                    f"{source}:{reader.line_num}: more than {n} {what} (the pattern is {n}x{n})"
                )
            lines[len(rows)] = reader.line_num
            rows.append([_csv_value(c) for c in row])
    except csv.Error as exc:
        raise InputError(f"{source}:{reader.line_num}: malformed CSV: {_reason(exc)}") from None
    finally:
        csv.field_size_limit(previous)
    return rows, lines


def load_pattern(source: str | os.PathLike[str], topo: Topology) -> np.ndarray:
    """Read a pattern (YAML list of lists, CSV, or .npy) or ``builtin:table3``."""
    source = os.fspath(source)
    n = topo.n_machines
    if source == "builtin:table3":
        return table3_pattern(n)
    ext = Path(source).suffix.lower()
    if ext not in FORMATS:
        shown = ext if len(ext) <= 20 else ext[:17] + "..."
        raise InputError(
            f"{source}: unknown pattern format '{shown}' (use .yaml, .yml, .csv or .npy)"
        )
    if ext == ".npy":
        return _validate_array(_npy(source, n), n, source)
    text = read_text(source, source, "pattern file")
    if ext == ".csv":
        rows, lines = _csv(text, source, n)
        return validate_pattern(rows, n, source, lines)
    data, where = read_yaml(text, source, max_nodes=(n + 1) * (n + 1) + 64)
    lines = {int(k[1:-1]): v for k, v in where.items() if k.startswith("[")}
    return validate_pattern(data, n, source, lines)
