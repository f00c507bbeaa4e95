/*
 * ft_fft3d.c: a 3-D complex FFT in the form of NAS FT (the exchange of seed 000's FT
 * experiment), an unchanged MPI program for timing the library in an application.
 *
 * The NX x NY x NZ grid is split in slabs of NZ / P planes. A forward transform:
 *   1. FFTW's 2-D transforms of the rank's planes (x, y);
 *   2. the global transpose: every rank sends rank d the block of its planes with d's slab of x
 *      (NX / P x NY x NZ / P values), one MPI_Alltoall of blocks of equal size, as FT does;
 *   3. FFTW's 1-D transforms along z of the rank's x slab (all NY x NZ lines of it).
 * The inverse runs the same steps backwards (another MPI_Alltoall). Each iteration is one
 * forward and one inverse transform; the program then verifies its own result: after the
 * iterations (normalised) the grid must equal the initial pseudo-random one to 1e-9 relative,
 * and after the first forward transform the frequencies (0,0,0), (0,0,1), (0,1,0) and (1,0,0)
 * must equal their sums computed directly from the input (a check of the transform and of the
 * transpose's placement, not only of the round trip).
 *
 *   mpiexec -n 8 ./ft_fft3d --nx 256 --ny 256 --nz 128 --iters 3
 *
 * NX and NZ must be multiples of P. Prints on rank 0, the slowest rank's seconds:
 *   ft_fft3d: ranks P grid NXxNYxNZ iters I total_s T exchange_s X max_error E verified
 * or "ft_fft3d: FAILED <why>" and exit status 1.
 */
#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double PI = 3.14159265358979323846;

static int fail(const char *why)
{
    fprintf(stderr, "ft_fft3d: FAILED %s\n", why);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

static int parse(int argc, char **argv, long *nx, long *ny, long *nz, int *iters)
{
    for (int i = 1; i < argc; i += 2) {
        char *end = NULL;
        long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
        if (end == NULL || *end != '\0' || v < 1 || v > 4096)
            return -1;
        if (strcmp(argv[i], "--nx") == 0)
            *nx = v;
        else if (strcmp(argv[i], "--ny") == 0)
            *ny = v;
        else if (strcmp(argv[i], "--nz") == 0)
            *nz = v;
        else if (strcmp(argv[i], "--iters") == 0)
            *iters = (int)v;
        else
            return -1;
    }
    return 0;
}

/* Pack a (local z, y, x) slab array into P blocks (block d: d's x range, all y, local z). */
static void pack_xslabs(const fftw_complex *in, fftw_complex *out, long nx, long ny, long lz,
                        int p)
{
    long lx = nx / p;
    for (int d = 0; d < p; d++)
        for (long z = 0; z < lz; z++)
            for (long y = 0; y < ny; y++)
                memcpy(out + ((d * lz + z) * ny + y) * lx, in + (z * ny + y) * nx + d * lx,
                       sizeof(fftw_complex) * (size_t)lx);
}

/* The P received blocks (block s: s's planes of my x range) into (x, y, z) lines along z. */
static void unpack_zlines(const fftw_complex *in, fftw_complex *out, long ny, long nz, long lx,
                          long lz, int p)
{
    for (int s = 0; s < p; s++)
        for (long z = 0; z < lz; z++)
            for (long y = 0; y < ny; y++)
                for (long x = 0; x < lx; x++)
                    out[(x * ny + y) * nz + s * lz + z] = in[((s * lz + z) * ny + y) * lx + x];
}

/* The inverse of unpack_zlines: (x, y, z) lines into P blocks for the ranks' planes. */
static void pack_zblocks(const fftw_complex *in, fftw_complex *out, long ny, long nz, long lx,
                         long lz, int p)
{
    for (int s = 0; s < p; s++)
        for (long z = 0; z < lz; z++)
            for (long y = 0; y < ny; y++)
                for (long x = 0; x < lx; x++)
                    out[((s * lz + z) * ny + y) * lx + x] = in[(x * ny + y) * nz + s * lz + z];
}

/* The inverse of pack_xslabs. */
static void unpack_planes(const fftw_complex *in, fftw_complex *out, long nx, long ny, long lz,
                          int p)
{
    long lx = nx / p;
    for (int d = 0; d < p; d++)
        for (long z = 0; z < lz; z++)
            for (long y = 0; y < ny; y++)
                memcpy(out + (z * ny + y) * nx + d * lx, in + ((d * lz + z) * ny + y) * lx,
                       sizeof(fftw_complex) * (size_t)lx);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int p, me, iters = 3;
    long nx = 64, ny = 64, nz = 64;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (parse(argc, argv, &nx, &ny, &nz, &iters) != 0 || nx % p || nz % p) {
        if (me == 0)
            fprintf(stderr, "ft_fft3d: usage: ft_fft3d [--nx N] [--ny N] [--nz N] [--iters I] "
                            "(1..4096; NX and NZ multiples of the ranks)\n");
        MPI_Finalize();
        return 2;
    }
    long lz = nz / p, lx = nx / p, local = lz * ny * nx; /* = lx * ny * nz */
    if (local / p > 0x7fffffffL)
        return fail("a block exceeds an MPI count");
    fftw_complex *a = fftw_malloc(sizeof(fftw_complex) * (size_t)local);
    fftw_complex *b = fftw_malloc(sizeof(fftw_complex) * (size_t)local);
    fftw_complex *orig = fftw_malloc(sizeof(fftw_complex) * (size_t)local);
    if (a == NULL || b == NULL || orig == NULL)
        return fail("out of memory");
    int n2[2] = {(int)ny, (int)nx}, n1[1] = {(int)nz};
    fftw_plan f2 = fftw_plan_many_dft(2, n2, (int)lz, a, NULL, 1, (int)(ny * nx), a, NULL, 1,
                                      (int)(ny * nx), FFTW_FORWARD, FFTW_ESTIMATE);
    fftw_plan i2 = fftw_plan_many_dft(2, n2, (int)lz, a, NULL, 1, (int)(ny * nx), a, NULL, 1,
                                      (int)(ny * nx), FFTW_BACKWARD, FFTW_ESTIMATE);
    fftw_plan f1 = fftw_plan_many_dft(1, n1, (int)(lx * ny), b, NULL, 1, (int)nz, b, NULL, 1,
                                      (int)nz, FFTW_FORWARD, FFTW_ESTIMATE);
    fftw_plan i1 = fftw_plan_many_dft(1, n1, (int)(lx * ny), b, NULL, 1, (int)nz, b, NULL, 1,
                                      (int)nz, FFTW_BACKWARD, FFTW_ESTIMATE);
    uint64_t x = 0x2545F4914F6CDD1DULL * (uint64_t)(me + 1);
    /* three frequencies computed directly: (0,0,0), (0,0,1) and (0,1,0) (kx, ky, kz); and
       (1,0,0) where rank 0 holds x = 1 */
    double complex sum[4] = {0}, want[4] = {0};
    for (long i = 0; i < local; i++) { /* xorshift64*: a stream per rank */
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        double re = (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        double im = (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
        orig[i] = re + im * I;
        long gx = i % nx, gy = i / nx % ny, gz = me * lz + i / (nx * ny);
        sum[0] += orig[i];
        sum[1] += orig[i] * cexp(-2 * PI * I * (double)gz / (double)nz);
        sum[2] += orig[i] * cexp(-2 * PI * I * (double)gy / (double)ny);
        sum[3] += orig[i] * cexp(-2 * PI * I * (double)gx / (double)nx);
    }
    MPI_Allreduce(sum, want, 4, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
    memcpy(a, orig, sizeof(fftw_complex) * (size_t)local);
    int block = (int)(local / p);
    double total = 0, exch = 0, dc_error = 0; /* the frequencies' largest error */
    for (int it = 0; it < iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        fftw_execute(f2); /* forward */
        pack_xslabs(a, b, nx, ny, lz, p);
        double t1 = MPI_Wtime();
        MPI_Alltoall(b, block, MPI_C_DOUBLE_COMPLEX, a, block, MPI_C_DOUBLE_COMPLEX,
                     MPI_COMM_WORLD);
        double t2 = MPI_Wtime();
        unpack_zlines(a, b, ny, nz, lx, lz, p);
        fftw_execute(f1);
        if (it == 0 && me == 0) { /* b: (x, y, z) lines of rank 0's x slab */
            double complex got[4] = {b[0], nz > 1 ? b[1] : b[0], ny > 1 ? b[nz] : b[0],
                                     lx > 1 ? b[ny * nz] : b[0]};
            for (int k = 0; k < 4; k++)
                if ((k != 1 || nz > 1) && (k != 2 || ny > 1) && (k != 3 || lx > 1))
                    dc_error = fmax(dc_error, cabs(got[k] - want[k]) / (cabs(want[k]) + 1.0));
        }
        fftw_execute(i1); /* inverse */
        pack_zblocks(b, a, ny, nz, lx, lz, p);
        double t3 = MPI_Wtime();
        MPI_Alltoall(a, block, MPI_C_DOUBLE_COMPLEX, b, block, MPI_C_DOUBLE_COMPLEX,
                     MPI_COMM_WORLD);
        double t4 = MPI_Wtime();
        unpack_planes(b, a, nx, ny, lz, p);
        fftw_execute(i2);
        double scale = 1.0 / ((double)nx * (double)ny * (double)nz);
        for (long i = 0; i < local; i++)
            a[i] *= scale;
        double t5 = MPI_Wtime();
        total += t5 - t0;
        exch += (t2 - t1) + (t4 - t3);
    }
    double err = 0, worst_err = 0;
    for (long i = 0; i < local; i++)
        err = fmax(err, cabs(a[i] - orig[i]) / (cabs(orig[i]) + 1e-300));
    double t[2] = {total, exch}, worst[2];
    MPI_Reduce(t, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&err, &worst_err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0 && dc_error > 1e-9)
        return fail("the forward transform differs from the directly computed frequencies");
    if (worst_err > 1e-9)
        return fail("the round trip does not give the input back");
    if (me == 0)
        printf("ft_fft3d: ranks %d grid %ldx%ldx%ld iters %d total_s %.6f exchange_s %.6f "
               "max_error %.3g verified\n",
               p, nx, ny, nz, iters, worst[0], worst[1], worst_err);
    fftw_destroy_plan(f2);
    fftw_destroy_plan(i2);
    fftw_destroy_plan(f1);
    fftw_destroy_plan(i1);
    fftw_free(a);
    fftw_free(b);
    fftw_free(orig);
    fftw_cleanup();
    MPI_Finalize();
    return 0;
}
