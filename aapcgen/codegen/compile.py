"""Compile a folder of C sources one file per compiler process, several at once.

The generated folders hold up to a hundred .c files; one ``mpicc`` over all of them runs on one
core. Here each source becomes an object of its own (``jobs`` compilers at a time, by default
one per core this process may use), and the caller links or archives the objects. The first
failing compile's command and output are returned so the caller can report them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Failed:
    """A compile that did not succeed: its command and what the compiler printed."""

    cmd: list[str]
    proc: subprocess.CompletedProcess[str]


def default_jobs() -> int:
    """One compiler per core this process may run on (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def object_names(sources: Sequence[str | Path], objdir: Path) -> list[Path]:
    """One object per source in ``objdir``; sources with the same name from different folders
    get the source's index in front so no object overwrites another."""
    stems = [Path(s).stem for s in sources]
    clash = len(set(stems)) != len(stems)
    return [objdir / (f"{i}-{st}.o" if clash else f"{st}.o") for i, st in enumerate(stems)]


def compile_objects(
    compiler: str,
    flags: Sequence[str],
    sources: Sequence[str | Path],
    objdir: Path,
    jobs: int | None = None,
    timeout: float | None = None,
) -> tuple[list[Path], Failed | None]:
    """``compiler flags -c source -o objdir/<name>.o`` for every source, ``jobs`` at a time.
    Returns the objects in the sources' order and the first failed compile (None when all
    succeeded). Raises OSError when the compiler cannot be started."""
    objdir.mkdir(parents=True, exist_ok=True)
    objects = object_names(sources, objdir)
    cmds = [[compiler, *flags, "-c", str(s), "-o", str(o)] for s, o in zip(sources, objects)]

    def one(cmd: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)

    with ThreadPoolExecutor(max_workers=jobs or default_jobs()) as pool:
        procs = list(pool.map(one, cmds))
    failed = next((Failed(c, p) for c, p in zip(cmds, procs) if p.returncode != 0), None)
    return objects, failed
