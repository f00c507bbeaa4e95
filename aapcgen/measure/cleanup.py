"""Nothing left behind by an interrupted measurement (bench, bench-alltoallv, tune).

An MPI job that is stopped abruptly leaves files that nobody removes: MPICH's shared-memory
segments ``/dev/shm/mpich_shm_*`` and ``mpich_shar_tmp*`` (the ranks remove them in MPI_Finalize) and Hydra's topology
file ``/tmp/hydra_hwloc_xmlfile_*`` (its proxy removes it when it exits normally); our own
temporary folder (``aapc-bench-*``, ``aapc-tune-*``) stays too. Three mechanisms:

* :func:`workdir`: the temporary folder of a measurement. It records its owner (pid and process
  start time) and the files the jobs' processes used in ``owner.json``; SIGTERM becomes an
  exception (:class:`Terminated`) inside it, so that ``finally`` blocks run; on the way out it
  removes those files (when no live process uses them) and itself.
* :func:`run_job`: one MPI job in its own session, its processes and their files sampled while
  it runs; on a timeout or an interruption it gets SIGINT first (Hydra then stops the ranks and
  removes its file), SIGKILL for every process of the job after ``GRACE_S``, and the recorded
  files go. ``PR_SET_PDEATHSIG`` stops the job if aapcgen itself is killed.
* :func:`sweep`: at the start of the next measurement, every folder whose owner is dead (a
  SIGKILL) is cleaned as above, and so are the emulations whose owner is dead
  (``platforms/emulate.py`` keeps their owners); one line on stderr says what was removed.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from aapcgen.core.errors import Terminated, one_line

OWNER_FILE = "owner.json"
PREFIXES = ("aapc-bench-", "aapc-tune-", "aapc-vbench-", "aapc-mcast-")  # what the sweep sees
# MPICH's segments: mpich_shm_* and, while a segment is being made, MPL's mkstemp file
# mpich_shar_tmpXXXXXX (a SIGINT during MPI_Init left one: tests/test_interrupt.py)
LEFTOVER = re.compile(r"/(dev/shm/mpich_sh(?:m_|ar_tmp)[^/\s]+|tmp/hydra_hwloc_xmlfile_[^/\s]+)$")
GRACE_S = 5.0  # seconds an interrupted job gets to stop by itself before SIGKILL
SAMPLE_S = 0.25  # seconds before the first look at a running job's processes; it doubles
SAMPLE_MAX_S = 8.0  # up to this
PR_SET_PDEATHSIG = 1


# --------------------------------------------------------------------------- processes


def process_start(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks since boot), None when it does not exist:
    with the pid it names one process, even after the pid is reused."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 else None


def _parent(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def descendants(root: int) -> set[int]:
    """Every live process below ``root`` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        parent = _parent(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _paths_of(pid: int) -> set[str]:
    """Every file process ``pid`` maps or holds open (empty when it cannot be inspected)."""
    found: set[str] = set()
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/"):
                found.add(fields[5].removesuffix(" (deleted)"))
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return found


def files_of(pid: int) -> set[str]:
    """The MPICH segments process ``pid`` maps and the Hydra files it holds open."""
    return {p for p in _paths_of(pid) if LEFTOVER.search(p)}


def in_use(paths: Iterable[str]) -> set[str]:
    """The ``paths`` some live process maps or holds open (all of them when /proc is unreadable:
    never remove what might be in use). A process this user may not inspect is another user's:
    it cannot open our files (MPICH and Hydra create them for their owner only)."""
    wanted = set(paths)
    if not wanted:
        return set()
    used: set[str] = set()
    try:
        pids = _pids()
    except OSError:
        return wanted
    for pid in pids:
        used |= _paths_of(pid) & wanted
    return used


def remove_unused(paths: Iterable[str]) -> list[str]:
    """Remove the ``paths`` that exist and that no live process uses; return those removed."""
    present = {p for p in paths if os.path.lexists(p)}
    removed = []
    for path in sorted(present - in_use(present)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            removed.append(path)
    return removed


# --------------------------------------------------------------------------- the workdir


@dataclass
class Workdir:
    """A measurement's temporary folder and what its jobs used (see the module doc)."""

    path: Path
    files: set[str] = field(default_factory=set)

    def record(self, files: Iterable[str]) -> None:
        """Remember files in owner.json (for the sweep, should this process be killed)."""
        new = set(files) - self.files
        if new:
            self.files |= new
            _write_owner(self.path, self.files)

    def env(self) -> dict[str, str]:
        """Environment for the compilers and MPI jobs: their temporary files go in here."""
        return {"TMPDIR": str(self.path)}


def _write_owner(path: Path, files: set[str]) -> None:
    data = {"pid": os.getpid(), "start": process_start(os.getpid()), "files": sorted(files)}
    tmp = path / (OWNER_FILE + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path / OWNER_FILE)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM raises Terminated in the block (SIGINT raises KeyboardInterrupt as always)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """No second interruption while cleaning up (it is short: GRACE_S at most per job)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def workdir(prefix: str, say: Callable[[str], None] | None = None) -> Iterator[Workdir]:
    """The temporary folder of one measurement; sweeps what dead runs left first."""
    sweep(say)
    path = Path(tempfile.mkdtemp(prefix=prefix))
    work = Workdir(path)
    try:
        _write_owner(path, set())
        with _signals_raise():
            yield work
    finally:
        with _signals_held():
            remove_unused(work.files)
            _rmtree(path)


# --------------------------------------------------------------------------- MPI jobs


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class JobResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _stop(
    proc: subprocess.Popen, work: Workdir | None, seen: set[int], started: float = math.inf
) -> None:
    """Stop a job: SIGINT to mpiexec (Hydra stops its ranks and removes its file), then after
    GRACE_S SIGKILL to every process of the job; then remove the files they left: the ones
    seen in use, and MPICH's and Hydra's files made since ``started`` (time.time()) that no
    live process uses (a file made between two looks, in MPI_Init)."""
    pids = seen | descendants(proc.pid)
    if work is not None:
        work.record(f for pid in pids for f in files_of(pid))
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + GRACE_S
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    pids |= descendants(proc.pid)
    _signal_all([proc.pid, *pids], signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
        proc.communicate(timeout=GRACE_S)
    deadline = time.monotonic() + GRACE_S
    while any(process_start(p) is not None for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    if work is not None:
        work.record(made_since(started - 1.0))
        remove_unused(work.files)


def run_job(
    cmd: list[str], env: dict[str, str], timeout: float, work: Workdir | None = None
) -> JobResult:
    """Run ``cmd`` to the end, or stop it cleanly on ``timeout`` seconds or an interruption
    (which is re-raised after the job is stopped and its files removed)."""
    full_env = {**env, **(work.env() if work else {})}
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=full_env,
        start_new_session=True,  # Ctrl-C reaches us, and we stop the job in order
        preexec_fn=_die_with_parent,
    )
    seen: set[int] = set()
    started = time.time()
    deadline = time.monotonic() + timeout
    wait = SAMPLE_S
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=min(wait, max(0.01, deadline - now())))
                break
            except subprocess.TimeoutExpired:
                if work is not None:
                    pids = descendants(proc.pid)
                    seen |= pids
                    work.record(f for pid in pids for f in files_of(pid))
                # the files appear in MPI_Init: look often at first, then rarely (the look
                # reads /proc and must not disturb a measurement)
                wait = min(SAMPLE_MAX_S, 2 * wait)
                if now() >= deadline:
                    with _signals_held():
                        _stop(proc, work, seen, started)
                    return JobResult(-1, "", "", True)
    except BaseException:
        with _signals_held():
            _stop(proc, work, seen, started)
        raise
    if proc.returncode != 0 and work is not None:  # a rank died: its segment may be left
        remove_unused(work.files)
    return JobResult(proc.returncode, out, err, False)


def now() -> float:
    return time.monotonic()


def run_tool(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A short tool run (a compiler) in its own process group: interrupted, the whole group is
    killed and waited for, so that no compiler child goes on writing temporary files."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    try:
        out, err = proc.communicate()
    except BaseException:
        with _signals_held():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
                proc.communicate(timeout=GRACE_S)
            _wait_group(proc.pid)
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _wait_group(pgid: int) -> None:
    """Until no process of group ``pgid`` is left (GRACE_S at most)."""
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)


def _rmtree(path: Path) -> None:
    """Remove a folder; again if a process that was just stopped still wrote into it."""
    for _ in range(20):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.1)


# --------------------------------------------------------------------------- the sweep


def _stale(folder: Path) -> dict | None:
    """The owner record of ``folder`` when its owner is dead (None: alive, or not ours)."""
    try:
        data = json.loads((folder / OWNER_FILE).read_text())
        pid, start = int(data["pid"]), data.get("start")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid == os.getpid() or (start is not None and process_start(pid) == start):
        return None
    if start is None and process_start(pid) is not None:
        return None
    return data


ORPHAN_GLOBS = ("/dev/shm/mpich_shm_*", "/dev/shm/mpich_shar_tmp*", "/tmp/hydra_hwloc_xmlfile_*")
ORPHAN_AGE_S = 300.0


def _mpi_files(keep: Callable[[os.stat_result], bool]) -> list[str]:
    """MPICH segments and Hydra files (ORPHAN_GLOBS) of this user whose lstat ``keep`` accepts."""
    found = []
    for pattern in ORPHAN_GLOBS:
        folder, _, glob = pattern.rpartition("/")
        with contextlib.suppress(OSError):
            for path in Path(folder).glob(glob):
                with contextlib.suppress(OSError):
                    info = path.lstat()
                    if info.st_uid == os.getuid() and keep(info):
                        found.append(str(path))
    return sorted(set(found))


def orphans(min_age: float = ORPHAN_AGE_S) -> list[str]:
    """MPICH segments and Hydra files of this user that no live process uses and that are older
    than ``min_age`` seconds: left by MPI jobs that were killed (ours or anybody's). A running
    job maps its segments and its proxy holds its file open from the moment they exist."""
    cutoff = time.time() - min_age
    candidates = _mpi_files(lambda info: info.st_mtime < cutoff)
    return sorted(set(candidates) - in_use(candidates))


def made_since(since: float) -> list[str]:
    """MPICH segments and Hydra files of this user made at or after ``since`` (time.time())."""
    return _mpi_files(lambda info: info.st_mtime >= since)


def sweep(say: Callable[[str], None] | None = None) -> list[str]:
    """Remove what measurements killed earlier left: their folders, the MPI files they
    recorded and their emulations, and the files of killed MPI jobs nobody uses any more
    (:func:`orphans`); say so in one line. Returns what was removed."""
    folders: list[str] = []
    files: list[str] = []
    owners: list[str] = []
    for folder in sorted(Path(tempfile.gettempdir()).glob("aapc-*-*")):
        if not folder.name.startswith(PREFIXES) or not folder.is_dir():
            continue
        data = _stale(folder)
        if data is None:
            continue
        owners.append(str(data.get("pid")))
        files += remove_unused(str(f) for f in data.get("files", []))
        _rmtree(folder)
        folders.append(str(folder))
    emulations = _stale_emulations()
    files += remove_unused(orphans())
    if folders or files or emulations:
        (say or _stderr)(_summary(owners, folders, files, emulations))
    return folders + files + emulations


def _summary(owners: list[str], folders: list[str], files: list[str], emulated: list[str]) -> str:
    """One line: whose leftovers, which folders, how many MPI files and emulation parts."""
    who = f" (pid {', '.join(owners[:3])})" if owners else ""
    parts = folders[:2] + ([f"{len(folders) - 2} more folders"] if len(folders) > 2 else [])
    if files:
        parts.append(f"{len(files)} file(s) of stopped MPI jobs in /dev/shm and /tmp")
    if emulated:
        parts.append(f"{len(emulated)} namespace(s), interface(s) and process(es) of an emulation")
    return f"removed what an interrupted run{who} left behind: {', '.join(parts)}"


def _stale_emulations() -> list[str]:
    from aapcgen.platforms import emulate

    return emulate.sweep_stale()


def _stderr(message: str) -> None:
    print(one_line(f"aapcgen: {message}"), file=sys.stderr, flush=True)
