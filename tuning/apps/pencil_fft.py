"""pencil_fft.py: a 3-D complex FFT with mpi4py-fft (PyPI) on a 2-D grid of pencils, as a user
of that package writes it; its transposes are MPI_Alltoallw calls on the grid's row and column
communicators, each peer's block its own subarray datatype.

Run: mpiexec -n P python tuning/apps/pencil_fft.py [--shape NX NY NZ] [--grid R C] [--iters I]

Checks, on every rank: the forward transform of a plane wave exp(2 pi i (k . x) / N) is N at k
and 0 elsewhere (each rank tests its own part of the spectrum), and the backward transform gives
the input back (max error below 1e-10). Rank 0 prints

    pencil_fft: ranks P grid RxC shape NXxNYxNZ iters I total_s T exchange_s X by_subcomm_s A,B,C
        max_error E verified

(total_s: the iterations, the slowest rank's; exchange_s: the part inside mpi4py-fft's
transfers, i.e. its MPI_Alltoallw calls, the slowest rank's; by_subcomm_s: that part per
communicator of mpi4py-fft's grid, one per axis (the last has one rank: 0), each the slowest
rank's, so they need not add up to exchange_s)

or "pencil_fft: FAILED <why>" on stderr, with exit status 1 on every rank.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from mpi4py import MPI
from mpi4py_fft import PFFT, newDistArray
from mpi4py_fft.pencil import Transfer

WAVE = (3, 5, 2)  # the plane wave's frequency on each axis


def timed_transfers(spent: list[float], by_comm: dict[int, float]) -> None:
    """Add the time of every transfer (its MPI_Alltoallw) to spent[0], and to by_comm under its
    communicator's handle."""
    for name in ("forward", "backward"):
        inner = getattr(Transfer, name)

        def wrapper(self, a, b, inner=inner):  # noqa: ANN001, ANN202
            t0 = time.perf_counter()
            inner(self, a, b)
            t = time.perf_counter() - t0
            spent[0] += t
            key = self.comm.py2f()
            by_comm[key] = by_comm.get(key, 0.0) + t

        setattr(Transfer, name, wrapper)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="pencil_fft")
    p.add_argument("--shape", type=int, nargs=3, default=(64, 64, 32))
    p.add_argument("--grid", type=int, nargs=2, default=None, help="pencil grid (rows cols)")
    p.add_argument("--iters", type=int, default=2)
    return p.parse_args(argv)


def plane_wave(u: np.ndarray, shape: tuple[int, int, int], start: tuple[int, ...]) -> None:
    """u[x] = exp(2 pi i sum_a WAVE[a] x_a / shape[a]) on this rank's part (offsets start)."""
    idx = np.meshgrid(*(np.arange(s, s + n) for s, n in zip(start, u.shape)), indexing="ij")
    u[...] = np.exp(2j * np.pi * sum(k * x / n for k, x, n in zip(WAVE, idx, shape)))


def spectrum_error(uh: np.ndarray, shape: tuple[int, int, int], start: tuple[int, ...]) -> float:
    """Largest deviation of this rank's part of the spectrum from N at WAVE and 0 elsewhere."""
    want = np.zeros(uh.shape, dtype=complex)
    at = tuple(k - s for k, s in zip(WAVE, start))
    if all(0 <= a < n for a, n in zip(at, uh.shape)):
        want[at] = np.prod(shape)
    return float(np.abs(uh - want).max()) if uh.size else 0.0


def main(argv: list[str]) -> int:
    args = parse(argv)
    comm = MPI.COMM_WORLD
    shape = tuple(args.shape)
    grid = tuple(args.grid) if args.grid else None
    spent, by_comm = [0.0], {}
    timed_transfers(spent, by_comm)  # before the plan, which keeps the transfers' bound methods
    fft = PFFT(comm, shape, axes=(0, 1, 2), dtype=complex, grid=grid)
    u = newDistArray(fft, forward_output=False)
    uh = newDistArray(fft, forward_output=True)
    plane_wave(u, shape, tuple(s.start for s in u.local_slice()))
    original = u.copy()
    spent[0] = 0.0
    by_comm.clear()
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(args.iters):
        uh = fft.forward(u, uh, normalize=False)
        u = fft.backward(uh, u, normalize=True)
    total = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    exchange = comm.allreduce(spent[0], op=MPI.MAX)
    per_axis = [comm.allreduce(by_comm.get(c.py2f(), 0.0), op=MPI.MAX) for c in fft.subcomm]
    spectral = spectrum_error(uh, shape, tuple(s.start for s in uh.local_slice()))
    round_trip = float(np.abs(u - original).max()) if u.size else 0.0
    errors = comm.allreduce(max(spectral / np.prod(shape), round_trip), op=MPI.MAX)
    dims = fft.subcomm[0].Get_size(), fft.subcomm[1].Get_size()
    if not errors < 1e-10:
        if comm.rank == 0:
            print(f"pencil_fft: FAILED max error {errors:.3g}", file=sys.stderr)
        return 1
    if comm.rank == 0:
        print(
            f"pencil_fft: ranks {comm.size} grid {dims[0]}x{dims[1]} shape "
            f"{'x'.join(map(str, shape))} iters {args.iters} total_s {total:.6f} "
            f"exchange_s {exchange:.6f} by_subcomm_s {','.join(f'{t:.3f}' for t in per_axis)} "
            f"max_error {errors:.3g} verified"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
