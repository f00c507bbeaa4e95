"""Issue 19: interrupted runs leave nothing behind (aapcgen/measure/cleanup.py).

The fast tests check the parts (the workdir, the sweep, files in use); the MPI tests interrupt
`aapcgen bench` at random moments and kill it outright, then look for leftovers: its temporary
folder, MPICH's /dev/shm segments, Hydra's /tmp files, processes. ``AAPC_INTERRUPT_RUNS`` sets
how many random interruptions (4 in ``make test``, 50 in ``make fuzz``).
"""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from aapcgen.measure import cleanup

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FIG1 = str(ROOT / "topologies" / "paper-fig1.yaml")
RUNS = int(os.environ.get("AAPC_INTERRUPT_RUNS", "4"))


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """tempfile's folder is tmp_path/tmp: the sweep sees only this test's folders."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(folder))
    monkeypatch.setattr(cleanup, "ORPHAN_GLOBS", (str(tmp_path / "orphan_*"),))
    monkeypatch.setattr(cleanup, "_stale_emulations", lambda: [])
    return folder


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# --------------------------------------------------------------------------- the parts


def test_workdir_removes_itself_and_its_files_when_interrupted(private_tmp, tmp_path):
    segment = tmp_path / "segment"
    segment.write_text("x")
    with pytest.raises(KeyboardInterrupt):
        with cleanup.workdir("aapc-bench-") as work:
            assert json.loads((work.path / "owner.json").read_text())["pid"] == os.getpid()
            work.record([str(segment)])
            assert json.loads((work.path / "owner.json").read_text())["files"] == [str(segment)]
            raise KeyboardInterrupt
    assert not work.path.exists() and not segment.exists()
    assert list(private_tmp.iterdir()) == []


def test_files_in_use_are_kept(private_tmp, tmp_path):
    used = tmp_path / "orphan_used"
    used.write_text("x")
    with open(used) as held:
        assert cleanup.in_use([str(used)]) == {str(used)}
        assert cleanup.remove_unused([str(used)]) == []
        assert used.exists()
    del held
    assert cleanup.remove_unused([str(used)]) == [str(used)]


def test_orphans_are_old_unused_files(private_tmp, tmp_path):
    old, new = tmp_path / "orphan_old", tmp_path / "orphan_new"
    old.write_text("x")
    new.write_text("x")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert cleanup.orphans() == [str(old)]


def test_a_stopped_job_removes_files_made_between_two_looks(private_tmp, tmp_path):
    # MPICH makes /dev/shm/mpich_shar_tmpXXXXXX in MPI_Init: a SIGINT there left one behind
    assert cleanup.LEFTOVER.search("/dev/shm/mpich_shar_tmpGgOKqX")
    assert cleanup.LEFTOVER.search("/dev/shm/mpich_shm_1f_3")
    assert not cleanup.LEFTOVER.search("/dev/shm/other")
    before = tmp_path / "orphan_before"
    before.write_text("x")
    os.utime(before, (time.time() - 60, time.time() - 60))
    script = f"import time; open({str(tmp_path / 'orphan_made')!r}, 'w'); time.sleep(30)"
    with cleanup.workdir("aapc-bench-") as work:
        result = cleanup.run_job([sys.executable, "-c", script], dict(os.environ), 1.0, work)
    assert result.timed_out
    assert not (tmp_path / "orphan_made").exists()  # made by the job, never looked at in use
    assert before.exists()  # older than the job: not the job's


def test_sweep_cleans_after_a_dead_owner_and_says_so_once(private_tmp, tmp_path):
    segment = tmp_path / "segment"
    segment.write_text("x")
    dead = private_tmp / "aapc-bench-dead"
    dead.mkdir()
    record = {"pid": dead_pid(), "start": 1, "files": [str(segment)]}
    (dead / "owner.json").write_text(json.dumps(record))
    alive = private_tmp / "aapc-tune-alive"
    alive.mkdir()
    mine = {"pid": os.getpid(), "start": cleanup.process_start(os.getpid()), "files": []}
    (alive / "owner.json").write_text(json.dumps(mine))
    foreign = private_tmp / "aapc-bench-noowner"  # not made by this code: left alone
    foreign.mkdir()
    said: list[str] = []
    removed = cleanup.sweep(said.append)
    assert sorted(removed) == sorted([str(segment), str(dead)])
    assert len(said) == 1 and said[0].startswith("removed what an interrupted run (pid ")
    assert alive.exists() and foreign.exists() and not dead.exists()
    assert cleanup.sweep(said.append) == [] and len(said) == 1


def test_sigterm_inside_a_workdir_unwinds_and_cleans(tmp_path):
    script = (
        "import os, signal, sys\n"
        "from aapcgen.measure import cleanup\n"
        "from aapcgen.cli import failure\n"
        "try:\n"
        "    with cleanup.workdir('aapc-bench-') as w:\n"
        "        print(w.path, flush=True)\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "except BaseException as exc:\n"
        "    sys.exit(failure.report(exc))\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 143 and proc.stderr.splitlines()[-1] == "aapcgen: terminated"
    assert not Path(proc.stdout.strip()).exists()


# --------------------------------------------------------------------------- real runs


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line (its arguments joined by blanks: /proc keeps them
    NUL-separated) contains ``text``."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                if text in line.decode(errors="replace"):
                    found.append(int(pid))
            except OSError:
                continue
    return found


def bench_argv(out: str, repeats: int = 3) -> list[str]:
    argv = [str(BIN / "aapcgen"), "bench", FIG1, "--sizes", "1K,64K", "--repeats", str(repeats)]
    return argv + ["--target-seconds", "0.05", "--max-iters", "5", "-o", out]


def bench(tmp: Path, out: Path, repeats: int = 3) -> subprocess.Popen:
    return subprocess.Popen(
        bench_argv(str(out), repeats),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
        start_new_session=True,
    )


def wait_for_job(text: str, proc: subprocess.Popen) -> bool:
    """Until a process mentioning ``text`` (the MPI job's timer) runs; False if ``proc`` ended
    first. The timer's compile alone takes about 10 s, more on a busy machine."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if processes_mentioning(text):
            return True
        time.sleep(0.05)
    return False


def wait_started(pid: int) -> None:
    """Until aapcgen's own code runs (it is loading numpy, inside main's error handling): a
    signal during the interpreter's start-up reaches CPython, not aapcgen (CPython prints a
    KeyboardInterrupt traceback there, whatever the program)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if "numpy" in Path(f"/proc/{pid}/maps").read_text():
                return
        except OSError:
            return
        time.sleep(0.01)


def kept_paths() -> list[Path]:
    """The checkout and the Python environment running the tests (its venv and the interpreter
    it was made from): a command run isolated needs them wherever they are."""
    found = {Path(p).resolve() for p in (ROOT, sys.prefix, sys.base_prefix)}
    return sorted(p for p in found if not any(q != p and q in p.parents for q in found))


def holes(private: Path, covered: Path, keep: list[Path]) -> list[tuple[Path, Path]]:
    """(path to keep, its mount point inside ``private``) for each kept path under ``covered``:
    bound there before ``private`` covers ``covered``, it stays visible at its own path."""
    return [(k, private / k.relative_to(covered)) for k in keep if covered in k.parents]


def isolation_script(folders: dict[Path, Path], keep: list[Path]) -> tuple[str, list[Path]]:
    """The shell script that covers each folder of ``folders`` (covered -> private) and binds
    the kept paths back, and the mount points it needs (made by the caller, left empty)."""
    binds, points = [], []
    for covered, private in folders.items():
        for path, point in holes(private, covered, keep):
            binds.append(f"mount --bind '{path}' '{point}'")
            points.append(point)
    covers = [f"mount --rbind '{private}' '{covered}'" for covered, private in folders.items()]
    return " && ".join([*binds, *covers, 'exec "$@"']), points


def isolated(shm: Path, tmp: Path, argv: list[str]) -> subprocess.Popen:
    """``argv`` in a mount namespace of its own whose /dev/shm and /tmp are the folders ``shm``
    and ``tmp``: whatever it leaves there is its own, whatever else runs on this machine. The
    checkout and the venv stay visible even when they live under /tmp or /dev/shm (a clone in
    /tmp): they are bound back at their own paths (empty mount points in ``shm``/``tmp``, which
    ``leftovers`` does not count)."""
    # /dev/shm first: ``shm`` may itself live under /tmp
    script, points = isolation_script({Path("/dev/shm"): shm, Path("/tmp"): tmp}, kept_paths())
    for point in points:
        point.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",  # the job's working folder must stay visible
        start_new_session=True,
    )


def leftovers(private: Path, covered: Path, allowed: tuple[str, ...] = ()) -> list[str]:
    """What a command left in its private ``covered`` folder: every file, and every folder but
    the mount points of the kept paths (which must hold nothing once the namespace is gone)."""
    points = {point for _, point in holes(private, covered, kept_paths())}
    ways = {p for point in points for p in (point, *point.parents) if private in p.parents}
    left = []
    for p in sorted(private.rglob("*")):
        rel = p.relative_to(private)
        if rel.parts[0] in allowed or (p in ways and p.is_dir() and not p.is_symlink()):
            continue
        left.append(str(rel))
    return left


def test_isolation_binds_the_checkout_back_under_a_covered_folder(tmp_path):
    """A clone under /tmp (or a venv under /dev/shm) gets a mount point in the private folder
    and is bound back; a clone elsewhere needs none."""
    tmp, shm = tmp_path / "tmp", tmp_path / "shm"
    keep = [Path("/tmp/c/aapcgen"), Path("/dev/shm/venv"), Path("/work/main")]
    script, points = isolation_script({Path("/dev/shm"): shm, Path("/tmp"): tmp}, keep)
    assert points == [shm / "venv", tmp / "c" / "aapcgen"]
    assert script.index("mount --bind '/tmp/c/aapcgen'") < script.index(f"mount --rbind '{tmp}'")
    assert "/work/main" not in script
    assert isolation_script({Path("/tmp"): tmp}, [Path("/work/main")]) == (
        f"mount --rbind '{tmp}' '/tmp' && exec \"$@\"",
        [],
    )


@pytest.mark.root
def test_isolated_command_sees_a_checkout_under_tmp_and_only_its_own_tmp(tmp_path, monkeypatch):
    """Run from a clone under /tmp: the isolated command reaches a program inside the clone,
    sees only its private /tmp and /dev/shm around it, and what it writes there is counted."""
    clone = Path(tempfile.mkdtemp(prefix="aapc-clone-", dir="/tmp"))
    try:
        tool = clone / "bin" / "tool"
        tool.parent.mkdir()
        tool.write_text(
            "#!/bin/sh\necho /tmp $(ls -A /tmp) >&2\necho /dev/shm $(ls -A /dev/shm) >&2\ntouch /tmp/made /dev/shm/made\n"
        )
        tool.chmod(0o755)
        monkeypatch.setattr(sys.modules[__name__], "ROOT", clone)
        shm, tmp = tmp_path / "shm", tmp_path / "tmp"
        shm.mkdir(mode=0o1777)
        tmp.mkdir(mode=0o1777)
        proc = isolated(shm, tmp, [str(tool)])
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        ways = {
            point.relative_to(tmp).parts[0] for _, point in holes(tmp, Path("/tmp"), kept_paths())
        }
        assert clone.name in ways  # and the venv's, when the tests themselves run from /tmp
        assert err.splitlines() == [" ".join(["/tmp", *sorted(ways)]), "/dev/shm"]
        assert leftovers(tmp, Path("/tmp")) == ["made"]
        assert leftovers(shm, Path("/dev/shm")) == ["made"]
        assert list((tmp / clone.name).iterdir()) == []  # the bind left the namespace with it
    finally:
        shutil.rmtree(clone)


@pytest.mark.mpi
@pytest.mark.root
def test_bench_interrupted_at_random_moments_leaves_nothing(tmp_path):
    """``RUNS`` benches, each stopped by SIGINT or SIGTERM at a random moment: afterwards its
    private /dev/shm and /tmp hold nothing but its -o folder, and none of its processes lives.
    Odd runs wait for the MPI job to run before their random delay (0-1 s), so the job's
    clean-up is exercised; at least one of them must have been interrupted in it."""
    rng = random.Random(int(os.environ.get("AAPC_INTERRUPT_SEED", "19")))
    in_job = 0
    for run in range(RUNS):
        shm, tmp = tmp_path / f"shm{run}", tmp_path / f"tmp{run}"
        shm.mkdir(mode=0o1777)
        tmp.mkdir(mode=0o1777)
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        during_job = run % 2 == 1
        delay = rng.uniform(0.0, 1.0 if during_job else 8.0)
        proc = isolated(shm, tmp, bench_argv("/tmp/out"))
        wait_started(proc.pid)
        if during_job:
            assert wait_for_job("alltoall_timer --bytes 1024,65536", proc), "no MPI job"
        time.sleep(delay)
        in_job += during_job and proc.poll() is None
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        what = f"run {run}: {sig.name} after {delay:.1f} s, exit {proc.returncode}: {err[-300:]}"
        # finished, interrupted (130/143), or killed by SIGTERM before it had anything to clean
        assert proc.returncode in (0, 130, 143, -signal.SIGTERM), what
        assert "Traceback" not in err, what
        assert leftovers(shm, Path("/dev/shm")) == [], what
        assert leftovers(tmp, Path("/tmp"), ("out",)) == [], what
        assert processes_mentioning("alltoall_timer --bytes 1024,65536") == [], what
    assert in_job > 0 or RUNS < 2, "no run was interrupted during its MPI job"


@pytest.mark.mpi
@pytest.mark.root
def test_tune_interrupted_leaves_nothing(tmp_path):
    """The same for `aapcgen tune` (its sweep folder aapc-tune-*, its MPI jobs): odd runs wait
    for a timer's MPI job before their delay (0-1 s); at least one must be interrupted in it."""
    rng = random.Random(int(os.environ.get("AAPC_INTERRUPT_SEED", "19")) + 1)
    runs, in_job = max(1, RUNS // 2), 0
    for run in range(runs):
        shm, tmp = tmp_path / f"shm{run}", tmp_path / f"tmp{run}"
        shm.mkdir(mode=0o1777)
        tmp.mkdir(mode=0o1777)
        argv = [str(BIN / "aapcgen"), "tune", FIG1, "--sizes", "1K,64K", "--variants", "no-sync"]
        argv += ["--natives", "brucks", "--repeats", "3", "--target-seconds", "0.05"]
        argv += ["--max-iters", "5", "--validate-repeats", "1", "-o", "/tmp/out"]
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        during_job = run % 2 == 1
        delay = rng.uniform(0.0, 1.0 if during_job else 8.0)
        proc = isolated(shm, tmp, argv)
        wait_started(proc.pid)
        if during_job:  # the timers (sweep, validation) run with --bytes; their compile does not
            assert wait_for_job("_timer --bytes", proc), "no MPI job"
        time.sleep(delay)
        in_job += during_job and proc.poll() is None
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        what = f"run {run}: {sig.name} after {delay:.1f} s, exit {proc.returncode}: {err[-300:]}"
        assert proc.returncode in (0, 130, 143, -signal.SIGTERM), what
        assert "Traceback" not in err, what
        assert leftovers(shm, Path("/dev/shm")) == [], what
        assert leftovers(tmp, Path("/tmp"), ("out",)) == [], what
        assert processes_mentioning("_timer --bytes") == [], what
    assert in_job > 0 or runs < 2, "no run was interrupted during its MPI job"


@pytest.mark.mpi
def test_sigkill_leftovers_are_removed_by_the_next_run(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = bench(tmp, tmp_path / "out", repeats=20)
    deadline = time.monotonic() + 600  # the timer is compiled: 10 s here, minutes when busy
    while time.monotonic() < deadline and not glob.glob(str(tmp / "aapc-bench-*/alltoall_timer")):
        time.sleep(0.1)
    assert glob.glob(str(tmp / "aapc-bench-*/alltoall_timer")), "the bench never got to its jobs"
    time.sleep(1.0)  # an MPI job is running
    os.killpg(proc.pid, signal.SIGKILL)  # aapcgen and everything in its session, no cleanup
    proc.communicate(timeout=60)
    left = [p for p in tmp.iterdir() if p.name.startswith("aapc-bench-")]
    assert len(left) == 1, "the killed run should have left its folder"
    recorded = json.loads((left[0] / "owner.json").read_text())["files"]
    again = bench(tmp, tmp_path / "out2", repeats=1)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    said = [line for line in err.splitlines() if "left behind" in line]
    assert len(said) == 1 and str(left[0]) in said[0], err
    assert not left[0].exists() and list(tmp.iterdir()) == []
    assert not any(os.path.exists(f) for f in recorded)


@pytest.mark.root
def test_emulation_of_a_killed_run_is_removed_by_the_next(tmp_path):
    script = (
        "import sys, time\n"
        "from aapcgen.core.topology import load_topology\n"
        "from aapcgen.platforms.emulate import emulated\n"
        "with emulated(load_topology(sys.argv[1]), prefix='aapck'):\n"
        "    print('up', flush=True)\n"
        "    time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, FIG1], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
    finally:
        proc.kill()  # SIGKILL: the namespaces stay
        proc.wait(timeout=60)
    from aapcgen.platforms import emulate

    assert emulate.emulate_status("aapck"), "the killed run should have left its namespaces"
    removed = emulate.sweep_stale()
    assert any("aapck" in r for r in removed)
    assert emulate.emulate_status("aapck") == []


def test_processes_mentioning_sees_a_running_command_line():
    """The leftover check must be able to fail: it finds a live process by its arguments."""
    proc = subprocess.Popen(["sleep", "30.123"])
    try:
        deadline = time.monotonic() + 10  # until the child has exec'd sleep
        while time.monotonic() < deadline and not processes_mentioning("sleep 30.123"):
            time.sleep(0.01)
        assert processes_mentioning("sleep 30.123") == [proc.pid]
    finally:
        proc.kill()
        proc.wait()
    assert processes_mentioning("sleep 30.123") == []
