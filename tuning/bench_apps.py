"""The application programs of tuning/apps/ on an emulated tree, with and without the library
(root): time to solution and the share of it in the all-to-all exchanges, side by side.

    sudo .venv/bin/python tuning/bench_apps.py [TOPO.yaml] [--rate 100Mbit]
        [--ranks-per-machine 1] [--apps is_sort,ft_fft3d,pencil_fft] [--repeats 3]
        [--is-args "--keys 1048576 --iters 5"] [--ft-args "--nx 256 --ny 256 --nz 64 --iters 3"]
        [--pencil-args "--shape 128 128 64 --iters 3"] [--lib-env AAPC_SIBLINGS=union]

pencil_fft is mpi4py-fft's pencil FFT (tuning/apps/pencil_fft.py; `make apps-deps` installs
mpi4py and mpi4py-fft into the venv), run by the venv's Python.

Builds the tree's libaapc.so (`aapcgen build`) and the programs, brings the emulation up and,
per repeat, runs each program once as it is (the MPI library's collectives) and once with the
library preloaded (LD_PRELOAD, and only the --lib-env settings), in that order. Prints one table row per
(program, way): the median over the repeats of the program's own total_s and exchange_s (the
slowest rank's), the job's CPU use as a share of the machine's cores (the whole mpiexec run:
near 100% means the ranks were waiting for a core, i.e. CPU-starved), the speed-up of the
total, and how much of the time saved was saved in the exchanges (seed 000's "share of the gain
explained by the all-to-all"). Every run must print "verified".
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aapcgen.core.topology import load_topology  # noqa: E402
from aapcgen.core.units import parse_rate_option  # noqa: E402
from aapcgen.platforms import emulate  # noqa: E402

BIN = ROOT / ".venv" / "bin"
APPS = {"is_sort": ["-lm"], "ft_fft3d": ["-lfftw3", "-lm"], "pencil_fft": None}  # None: Python
RESULT = re.compile(r"total_s (?P<total>[\d.]+) exchange_s (?P<exchange>[\d.]+).* verified$")


def build(tmp: Path, topo: Path, apps: list[str]) -> Path:
    lib = tmp / "libaapc.so"
    cmd = [str(BIN / "aapcgen"), "build", str(topo), "-o", str(lib)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    for app in (a for a in apps if APPS[a] is not None):
        src = ROOT / "tuning" / "apps" / f"{app}.c"
        cmd = [str(BIN / "mpicc"), "-std=c11", "-O2", str(src), "-o", str(tmp / app), *APPS[app]]
        subprocess.run(cmd, check=True)
    return lib


def cpu_seconds() -> float:
    """User + system seconds of the children waited for so far (mpiexec reaps its ranks)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_run(cmd: list[str], timeout: float) -> tuple[float, float, float]:
    """(total_s, exchange_s, the run's CPU use as a share of the machine's cores)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AAPC_")}
    cpu0, wall0 = cpu_seconds(), time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    share = (cpu_seconds() - cpu0) / ((time.monotonic() - wall0) * (os.cpu_count() or 1))
    line = next((ln for ln in proc.stdout.splitlines() if RESULT.search(ln)), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"bench_apps: a run failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    m = RESULT.search(line)
    assert m is not None
    print(f"#   {line.strip()}", file=sys.stderr)  # the program's own line (pencil_fft's per axis)
    return float(m["total"]), float(m["exchange"]), share


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("topology", nargs="?", default=str(ROOT / "topologies/two-switch-4-4.yaml"))
    ap.add_argument("--rate", default="100Mbit", help="every link's speed")
    ap.add_argument("--ranks-per-machine", type=int, default=1)
    ap.add_argument("--apps", default="is_sort,ft_fft3d")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--is-args", default="--keys 1048576 --iters 5")
    ap.add_argument("--ft-args", default="--nx 256 --ny 256 --nz 64 --iters 3")
    ap.add_argument("--pencil-args", default="--shape 128 128 64 --iters 3")
    ap.add_argument(
        "--lib-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the runs with the library (e.g. AAPC_SIBLINGS=union; repeatable)",
    )
    ap.add_argument("--timeout", type=float, default=1800.0)
    a = ap.parse_args()
    apps = a.apps.split(",")
    if not set(apps) <= set(APPS) or a.repeats < 1 or a.ranks_per_machine < 1:
        ap.error(f"--apps from {', '.join(APPS)}; --repeats and --ranks-per-machine >= 1")
    bad = [e for e in a.lib_env if "=" not in e or not e.startswith("AAPC_")]
    if bad:
        ap.error(f"--lib-env: '{bad[0]}' is not AAPC_NAME=VALUE (a setting of the library)")
    topo = load_topology(Path(a.topology))
    rate = parse_rate_option(a.rate, "--rate")
    args = {
        "is_sort": shlex.split(a.is_args),
        "ft_fft3d": shlex.split(a.ft_args),
        "pencil_fft": shlex.split(a.pencil_args),
    }
    times: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="aapc-apps-") as tmp:
        lib = build(Path(tmp), Path(a.topology), apps)
        with emulate.emulated(topo, rate=rate, prefix="aapcapp") as em:
            for rep in range(a.repeats):
                for app in apps:
                    with_lib = [f"LD_PRELOAD={lib}", *a.lib_env]
                    for way, pre in (("MPI library", []), ("aapcgen", with_lib)):
                        program = (
                            [str(BIN / "python"), str(ROOT / "tuning" / "apps" / f"{app}.py")]
                            if APPS[app] is None
                            else [str(Path(tmp) / app)]
                        )
                        argv = ["env", *pre, *program, *args[app]]
                        cmd = emulate.mpiexec_command(
                            em, str(BIN / "mpiexec"), argv, None, a.ranks_per_machine
                        )
                        t = one_run(cmd, a.timeout)
                        times.setdefault((app, way), []).append(t)
                        print(f"# repeat {rep + 1} {app} {way}: {t[0]:.3f} s", file=sys.stderr)
    print(
        f"{topo.name}, {a.rate}, {a.ranks_per_machine} rank(s) per machine, {a.repeats} repeats"
        + (f"; with the library: {' '.join(a.lib_env)}" if a.lib_env else "")
    )
    print(
        "| program | way | total s (median) | exchange s | exchange share | CPU use | speed-up "
        "| gain in the exchange |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for app in apps:
        med = {
            way: [statistics.median(r[k] for r in times[(app, way)]) for k in range(3)]
            for way in ("MPI library", "aapcgen")
        }
        (base, base_x, _), (ours, ours_x, _) = med["MPI library"], med["aapcgen"]
        for way, (total, exch, cpu) in med.items():
            gain = (base_x - ours_x) / (base - ours) if way == "aapcgen" and base != ours else None
            print(
                f"| {app} {' '.join(args[app])} | {way} | {total:.3f} | {exch:.3f} | "
                f"{exch / total:.0%} | {cpu:.0%} | {base / total:.2f}x | "
                f"{'' if gain is None else f'{gain:.0%}'} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
