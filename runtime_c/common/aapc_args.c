/*
 * aapc_args.c: the argument checks of the generated MPI_Alltoall and MPI_Alltoallv, made
 * before any message is posted, with MPI's error semantics.
 *
 * Algorithm. On each rank, the checks MPICH makes in its bindings (plus the two marked +):
 *   - communicator: MPI_COMM_NULL and inter-communicators go to the MPI library untouched
 *     (PMPI_Alltoall/PMPI_Alltoallv), which raises MPI_ERR_COMM on the handler the library uses
 *     for a null communicator and runs inter-communicator calls itself (one fallback warning);
 *   - counts >= 0 (MPI_ERR_COUNT); count arrays not NULL (MPI_ERR_ARG); the send arguments are
 *     not looked at under MPI_IN_PLACE, as in MPICH;
 *   - datatypes not MPI_DATATYPE_NULL and committed (MPI_ERR_TYPE; "committed" is probed with a
 *     zero-element MPI_Pack on a private duplicate of MPI_COMM_SELF that returns errors);
 *   - buffers: NULL with data at address 0 (count > 0, type size > 0, true lower bound 0; in
 *     MPI_Alltoallv for a zero displacement), as MPICH; + recvbuf == MPI_IN_PLACE with data;
 *     sendbuf == recvbuf (no MPI_IN_PLACE) with data on both sides (MPI_ERR_BUFFER; + MPICH
 *     reports aliasing only when the two types and counts are equal, the standard forbids it
 *     whenever the buffers overlap);
 * then across the ranks of the communicator, one MPI_Iallreduce on it, waited for with
 * common/aapc_wait.c (the agreement):
 *   - whether any rank found an error above: every rank then raises (the first such rank's
 *     class, named in the message), so a misuse on one rank ends the call on all of them
 *     instead of leaving the others waiting for its messages;
 *   - MPI_Alltoall: the bytes of one block, sent and received, are the same on every rank
 *     (max and min of both); MPI_Alltoallv: the sum over all ranks of a 64-bit hash of each
 *     (source, destination, bytes) a rank sends, minus the same over what it expects to
 *     receive, is 0. A difference is an error on every rank: MPI_ERR_TRUNCATE;
 *   - whether any rank has a byte to move: when none has, every rank returns MPI_SUCCESS.
 * Errors are raised with MPI_Comm_call_errhandler on the user's communicator, with a code of
 * the class above whose string says what is wrong (MPI_Add_error_code/string), so
 * MPI_ERRORS_ARE_FATAL aborts with that message and MPI_ERRORS_RETURN returns the code.
 *
 * Cost per call, p ranks: O(1) local work for MPI_Alltoall, O(p) for MPI_Alltoallv, two
 * zero-element MPI_Pack calls (tens of ns), and the agreement: one reduction of 40 bytes with
 * MPI_MAX (MPI_Alltoall) or 24 bytes with a user-defined operation (MPI_Alltoallv), about
 * lg(p) alpha (docs/performance.md: its share of a 64 KB call on the emulated 4+4 tree).
 * AAPC_AGREE=0 leaves the agreement out: the local checks stay and are raised at once on the
 * rank that finds them, but a misuse on some ranks only, or counts that differ, can then hang.
 */
#include "aapc_args.h"

#include "aapc_comm.h"     /* aapc_warn_fallback */
#include "aapc_settings.h" /* AAPC_AGREE */
#include "aapc_wait.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- per-process state, freed by MPI_Finalize (attribute on MPI_COMM_SELF) ------------ */

static MPI_Comm probe_comm = MPI_COMM_NULL; /* MPI_COMM_SELF dup, MPI_ERRORS_RETURN */
static MPI_Op vop = MPI_OP_NULL;            /* the Alltoallv agreement's reduction */
static MPI_Datatype vtype = MPI_DATATYPE_NULL;
static int cleanup_keyval = MPI_KEYVAL_INVALID;

static int cleanup(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)attr;
    (void)extra;
    if (probe_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&probe_comm);
    if (vop != MPI_OP_NULL)
        PMPI_Op_free(&vop);
    if (vtype != MPI_DATATYPE_NULL)
        PMPI_Type_free(&vtype);
    probe_comm = MPI_COMM_NULL;
    vop = MPI_OP_NULL;
    vtype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}

static void at_finalize(void)
{
    if (cleanup_keyval != MPI_KEYVAL_INVALID)
        return;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, cleanup, &cleanup_keyval, NULL) ==
        MPI_SUCCESS)
        PMPI_Comm_set_attr(MPI_COMM_SELF, cleanup_keyval, NULL);
}

/* AAPC_AGREE=0 leaves the agreement out: a setting every rank of comm shares
   (common/aapc_settings.h), so where its ranks differ every rank agrees. */
static int agree_enabled(MPI_Comm comm)
{
    const char *e = aapc_setting(comm, "AAPC_AGREE");
    return !(e != NULL && strcmp(e, "0") == 0);
}

/* The agreement's reduction: nonblocking, completed with aapc_waitall, so a rank waiting for
   the others sleeps between tests instead of spinning (what MPI_Allreduce does) and leaves the
   CPU to them when ranks share cores. Errors are the library's, raised on comm.
   Under SimGrid SMPI the blocking reduction: there waiting for a nonblocking collective goes
   through SMPI's waitall over the collective's requests, built on repeated waitany (cubic), and
   1024 simulated ranks spent hours of wall time in it before the first phase (perf, 2026-11-25);
   in simulated time nothing spins, so nothing is lost. */
static int agree(void *v, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
#ifdef SMPI_SHARED_MALLOC
    return PMPI_Allreduce(MPI_IN_PLACE, v, count, type, op, comm);
#else
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = PMPI_Iallreduce(MPI_IN_PLACE, v, count, type, op, comm, &req);
    return rc != MPI_SUCCESS ? rc : aapc_waitall(1, &req);
#endif
}

/* ---- raising ------------------------------------------------------------------------------ */

/* A code of class cls whose string is msg (cls itself when the library cannot add codes). */
static int code_of(int cls, char *msg)
{
    enum { KEEP = 16 };
    static int classes[KEEP], codes[KEEP], n = 0;
    int code = -1;
    for (int i = 0; i < n; i++)
        if (classes[i] == cls)
            code = codes[i];
    if (code < 0) {
        int back = -1;
        /* a library without user codes (SimGrid's returns success and no code): the class */
        if (n == KEEP || PMPI_Add_error_code(cls, &code) != MPI_SUCCESS || code < 0 ||
            PMPI_Error_class(code, &back) != MPI_SUCCESS || back != cls)
            return cls;
        classes[n] = cls;
        codes[n++] = code;
    }
    if (PMPI_Add_error_string(code, msg) != MPI_SUCCESS)
        return cls;
    return code;
}

static int raise_on(MPI_Comm comm, int cls, const char *fmt, ...)
{
    char msg[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int code = code_of(cls, msg);
    PMPI_Comm_call_errhandler(comm, code); /* aborts under MPI_ERRORS_ARE_FATAL */
    return code;
}

int aapc_args_raise_code(MPI_Comm comm, int code)
{
    if (code != MPI_SUCCESS && comm != MPI_COMM_NULL)
        PMPI_Comm_call_errhandler(comm, code);
    return code;
}

void aapc_args_private_returns(MPI_Comm dup)
{
    if (dup != MPI_COMM_NULL)
        PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
}

/* ---- local checks ------------------------------------------------------------------------ */

/* One finding of the local checks: its class (0: none) and what it says. */
struct finding {
    int cls;
    char what[200];
};

static void found(struct finding *f, int cls, const char *fmt, ...)
{
    if (f->cls != 0)
        return; /* the first finding is reported */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->what, sizeof f->what, fmt, ap);
    va_end(ap);
    f->cls = cls;
}

/* A datatype usable for communication: not NULL, committed. *size and *tlb when it is. */
static int type_ok(MPI_Datatype t, const char *arg, struct finding *f, int *size, MPI_Aint *tlb)
{
    MPI_Aint text;
    *size = 0;
    *tlb = 0;
    if (t == MPI_DATATYPE_NULL) {
        found(f, MPI_ERR_TYPE, "%s is MPI_DATATYPE_NULL", arg);
        return 0;
    }
    if (probe_comm == MPI_COMM_NULL) {
        if (PMPI_Comm_dup(MPI_COMM_SELF, &probe_comm) == MPI_SUCCESS) {
            PMPI_Comm_set_errhandler(probe_comm, MPI_ERRORS_RETURN);
            at_finalize();
        } else {
            probe_comm = MPI_COMM_NULL;
        }
    }
    if (probe_comm != MPI_COMM_NULL) {
        char out[1];
        int pos = 0;
        if (PMPI_Pack(NULL, 0, t, out, 0, &pos, probe_comm) != MPI_SUCCESS) {
            found(f, MPI_ERR_TYPE, "%s is not a committed datatype", arg);
            return 0;
        }
    }
    if (PMPI_Type_size(t, size) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(t, tlb, &text) != MPI_SUCCESS) {
        found(f, MPI_ERR_TYPE, "%s is not a valid datatype", arg);
        return 0;
    }
    return 1;
}

/* MPICH's rule for a NULL buffer: data would start at address 0. */
static int null_data(const void *buf, int count, int size, MPI_Aint tlb)
{
    return buf == NULL && count > 0 && size > 0 && tlb == 0;
}

/* ---- MPI_Alltoall ------------------------------------------------------------------------ */

static void check_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           const void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           struct finding *f, int64_t *sbytes, int64_t *rbytes)
{
    int inplace = sendbuf == MPI_IN_PLACE, ssize = 0, rsize = 0;
    MPI_Aint stlb = 0, rtlb = 0;
    *sbytes = *rbytes = 0;
    if (!inplace) {
        if (sendcount < 0)
            found(f, MPI_ERR_COUNT, "sendcount %d is negative", sendcount);
        if (type_ok(sendtype, "sendtype", f, &ssize, &stlb) &&
            null_data(sendbuf, sendcount, ssize, stlb))
            found(f, MPI_ERR_BUFFER, "sendbuf is NULL and sendcount %d", sendcount);
    }
    if (recvcount < 0)
        found(f, MPI_ERR_COUNT, "recvcount %d is negative", recvcount);
    if (type_ok(recvtype, "recvtype", f, &rsize, &rtlb) &&
        null_data(recvbuf, recvcount, rsize, rtlb))
        found(f, MPI_ERR_BUFFER, "recvbuf is NULL and recvcount %d", recvcount);
    if (recvbuf == MPI_IN_PLACE && recvcount > 0)
        found(f, MPI_ERR_BUFFER, "recvbuf is MPI_IN_PLACE (only sendbuf may be)");
    if (!inplace && sendbuf == recvbuf && sendbuf != NULL && sendcount > 0 && recvcount > 0)
        found(f, MPI_ERR_BUFFER,
              "sendbuf and recvbuf are the same buffer (aliased; pass MPI_IN_PLACE as sendbuf "
              "to exchange in place)");
    if (f->cls == 0) {
        *rbytes = (int64_t)recvcount * rsize;
        *sbytes = inplace ? *rbytes : (int64_t)sendcount * ssize;
    }
}

/* The call goes to the MPI library as it is: a null or inter-communicator (with a warning
   naming the routine, as every fallback). Sets *done. */
static int to_library(MPI_Comm comm, const char *name, const char *routine, int *done, int *rc)
{
    int inter = 0;
    *done = 0;
    if (comm == MPI_COMM_NULL) {
        *done = 1;
        return 1;
    }
    if ((*rc = PMPI_Comm_test_inter(comm, &inter)) != MPI_SUCCESS) {
        *done = 1; /* an invalid handle: the library has raised it */
        return 0;
    }
    if (inter)
        aapc_warn_fallback(comm, name, "the communicator is an inter-communicator", routine);
    *done = inter;
    return inter;
}

/* Raise the local finding, or another rank's (key = (size - rank) << 32 | class). */
static int raise_finding(MPI_Comm comm, const char *routine, const struct finding *f,
                         int64_t key, int size)
{
    if (f->cls != 0)
        return raise_on(comm, f->cls, "aapcgen %s: %s", routine, f->what);
    int rank = size - (int)(key >> 32), cls = (int)(key & 0xffffffff), len = 0;
    char what[MPI_MAX_ERROR_STRING] = "";
    PMPI_Error_string(cls, what, &len);
    return raise_on(comm, cls, "aapcgen %s: rank %d of this communicator passed invalid "
                               "arguments (%s)", routine, rank, what);
}

/* "lo" or "lo to hi". */
static void span(char *out, size_t n, int64_t lo, int64_t hi)
{
    if (lo == hi)
        snprintf(out, n, "%lld", (long long)lo);
    else
        snprintf(out, n, "%lld to %lld", (long long)lo, (long long)hi);
}

int aapc_args_alltoall(const char *name, const void *sendbuf, int sendcount,
                       MPI_Datatype sendtype, const void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm, int *done)
{
    struct finding f = {0, ""};
    int rc = MPI_SUCCESS, rank = 0, size = 0;
    int64_t sb, rb;
    if (to_library(comm, name, "MPI_Alltoall", done, &rc))
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, (void *)recvbuf, recvcount, recvtype,
                             comm);
    if (*done)
        return rc;
    check_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, &f, &sb, &rb);
    if (!agree_enabled(comm)) {
        *done = f.cls != 0;
        return f.cls ? raise_finding(comm, "MPI_Alltoall", &f, 0, 0) : MPI_SUCCESS;
    }
    if ((rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS) {
        *done = 1;
        return rc;
    }
    int64_t v[5] = {f.cls ? ((int64_t)(size - rank) << 32) | (uint32_t)f.cls : 0, sb, -sb, rb,
                    -rb};
    if ((rc = agree(v, 5, MPI_INT64_T, MPI_MAX, comm)) != MPI_SUCCESS) {
        *done = 1; /* raised by the library on comm */
        return rc;
    }
    *done = 1;
    if (v[0] != 0)
        return raise_finding(comm, "MPI_Alltoall", &f, v[0], size);
    if (v[1] != -v[2] || v[3] != -v[4] || v[1] != v[3]) {
        char sent[48], expected[48];
        span(sent, sizeof sent, -v[2], v[1]);
        span(expected, sizeof expected, -v[4], v[3]);
        return raise_on(comm, MPI_ERR_TRUNCATE,
                        "aapcgen MPI_Alltoall: the block size differs across ranks: blocks of %s "
                        "bytes sent, %s bytes expected (this rank sends %lld, expects %lld)",
                        sent, expected, (long long)sb, (long long)rb);
    }
    if (v[1] == 0)
        return MPI_SUCCESS; /* no rank has a byte to move */
    *done = 0;
    return MPI_SUCCESS;
}

/* ---- MPI_Alltoallv ----------------------------------------------------------------------- */

/* splitmix64's finaliser. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The hash of one message: from rank i to rank j, `bytes` long. */
static uint64_t msg_hash(int i, int j, int64_t bytes)
{
    return mix(mix(((uint64_t)(uint32_t)i << 32) | (uint32_t)j) ^ (uint64_t)bytes);
}

/* Reduction of {error key, hash, any data}: max, sum modulo 2^64, max. */
static void vreduce(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int k = 0; k < *len; k++) {
        int64_t a[3], b[3];
        memcpy(a, (char *)in + (size_t)k * sizeof a, sizeof a);
        memcpy(b, (char *)inout + (size_t)k * sizeof b, sizeof b);
        uint64_t h = (uint64_t)a[1] + (uint64_t)b[1];
        b[0] = a[0] > b[0] ? a[0] : b[0];
        memcpy(&b[1], &h, sizeof h);
        b[2] = a[2] > b[2] ? a[2] : b[2];
        memcpy((char *)inout + (size_t)k * sizeof b, b, sizeof b);
    }
}

static int vagree_setup(void)
{
    int rc;
    if (vop != MPI_OP_NULL)
        return MPI_SUCCESS;
    if ((rc = PMPI_Type_contiguous(3, MPI_INT64_T, &vtype)) != MPI_SUCCESS ||
        (rc = PMPI_Type_commit(&vtype)) != MPI_SUCCESS ||
        (rc = PMPI_Op_create(vreduce, 1, &vop)) != MPI_SUCCESS) {
        if (vtype != MPI_DATATYPE_NULL)
            PMPI_Type_free(&vtype);
        vtype = MPI_DATATYPE_NULL;
        vop = MPI_OP_NULL;
        return rc;
    }
    at_finalize();
    return MPI_SUCCESS;
}

/* Local checks of one side (send or receive) of MPI_Alltoallv; adds its hashes to *h. */
static void check_side(int send, const void *buf, const int counts[], const int displs[],
                       MPI_Datatype type, int rank, int size, struct finding *f, uint64_t *h,
                       int *data)
{
    const char *side = send ? "send" : "recv";
    int tsize = 0;
    MPI_Aint tlb = 0;
    char arg[16];
    if (counts == NULL || displs == NULL) {
        found(f, MPI_ERR_ARG, "%scounts or %s is NULL", side, send ? "sdispls" : "rdispls");
        return;
    }
    snprintf(arg, sizeof arg, "%stype", side);
    int typed = type_ok(type, arg, f, &tsize, &tlb);
    for (int i = 0; i < size; i++) {
        if (counts[i] < 0) {
            found(f, MPI_ERR_COUNT, "%scounts[%d] = %d is negative", side, i, counts[i]);
            continue;
        }
        if (typed && displs[i] == 0 && null_data(buf, counts[i], tsize, tlb))
            found(f, MPI_ERR_BUFFER, "%sbuf is NULL and %scounts[%d] = %d", side, side, i,
                  counts[i]);
        int64_t bytes = (int64_t)counts[i] * tsize;
        *data |= bytes > 0;
        uint64_t x = send ? msg_hash(rank, i, bytes) : msg_hash(i, rank, bytes);
        *h = send ? *h + x : *h - x;
    }
}

static int any_positive(const int counts[], int size)
{
    for (int i = 0; counts != NULL && i < size; i++)
        if (counts[i] > 0)
            return 1;
    return 0;
}

int aapc_args_alltoallv(const char *name, const void *sendbuf, const int sendcounts[],
                        const int sdispls[], MPI_Datatype sendtype, const void *recvbuf,
                        const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                        MPI_Comm comm, int *done)
{
    struct finding f = {0, ""};
    int rc = MPI_SUCCESS, rank = 0, size = 0, data = 0, inplace = sendbuf == MPI_IN_PLACE;
    uint64_t h = 0;
    if (to_library(comm, name, "MPI_Alltoallv", done, &rc))
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, (void *)recvbuf,
                              recvcounts, rdispls, recvtype, comm);
    if (*done)
        return rc;
    if ((rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS) {
        *done = 1;
        return rc;
    }
    if (inplace)
        check_side(1, recvbuf, recvcounts, rdispls, recvtype, rank, size, &f, &h, &data);
    else
        check_side(1, sendbuf, sendcounts, sdispls, sendtype, rank, size, &f, &h, &data);
    check_side(0, recvbuf, recvcounts, rdispls, recvtype, rank, size, &f, &h, &data);
    if (recvbuf == MPI_IN_PLACE && any_positive(recvcounts, size))
        found(&f, MPI_ERR_BUFFER, "recvbuf is MPI_IN_PLACE (only sendbuf may be)");
    if (!inplace && sendbuf == recvbuf && sendbuf != NULL && any_positive(sendcounts, size) &&
        any_positive(recvcounts, size))
        found(&f, MPI_ERR_BUFFER,
              "sendbuf and recvbuf are the same buffer (aliased; pass MPI_IN_PLACE as sendbuf "
              "to exchange in place)");
    if (!agree_enabled(comm)) {
        *done = f.cls != 0;
        return f.cls ? raise_finding(comm, "MPI_Alltoallv", &f, 0, 0) : MPI_SUCCESS;
    }
    if ((rc = vagree_setup()) != MPI_SUCCESS) {
        *done = 1;
        return aapc_args_raise_code(comm, rc);
    }
    int64_t v[3] = {f.cls ? ((int64_t)(size - rank) << 32) | (uint32_t)f.cls : 0, 0, data};
    memcpy(&v[1], &h, sizeof h);
    if ((rc = agree(v, 1, vtype, vop, comm)) != MPI_SUCCESS) {
        *done = 1;
        return rc;
    }
    *done = 1;
    if (v[0] != 0)
        return raise_finding(comm, "MPI_Alltoallv", &f, v[0], size);
    if (v[1] != 0)
        return raise_on(comm, MPI_ERR_TRUNCATE,
                        "aapcgen MPI_Alltoallv: counts do not match across ranks: for some "
                        "ranks i and j, sendcounts[j] x size of sendtype on rank i differs from "
                        "recvcounts[i] x size of recvtype on rank j");
    if (v[2] == 0)
        return MPI_SUCCESS; /* no rank has a byte to move */
    *done = 0;
    return MPI_SUCCESS;
}
