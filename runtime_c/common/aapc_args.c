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
 *     zero-element MPI_Pack on a private one-rank communicator that returns errors: a duplicate
 *     of MPI_COMM_SELF once per process, or, in an MPI-4 sessions program, which has no
 *     MPI_COMM_SELF, one made from the user's communicator with MPI_Comm_create_group of this
 *     rank alone, kept with that communicator); sizes are 64-bit (MPI_Type_size_x: a derived
 *     type may be larger than INT_MAX bytes);
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
 *   - whether any rank has a byte to move: when none has, every rank returns MPI_SUCCESS;
 *   - MPI_IN_PLACE with data: whether every rank could allocate the copy of its receive buffer
 *     the executors make (one malloc of its span, freed at once: a probe). When one cannot,
 *     every rank hands the call to the library's in-place routine (which needs one block:
 *     MPICH's pairwise exchange), and rank 0 warns once, naming the rank.
 * Errors are raised with MPI_Comm_call_errhandler on the user's communicator, with a code of
 * the class above whose string says what is wrong (MPI_Add_error_code/string: one code per
 * distinct message, so an earlier code keeps its string), so MPI_ERRORS_ARE_FATAL aborts with
 * that message and MPI_ERRORS_RETURN returns the code. An error one rank meets alone after the
 * agreement (aapc_args_raise_alone: out of memory, a failed send) goes through the handler too,
 * and when the handler returns the job is aborted: the other ranks may be waiting for that
 * rank's messages.
 * Calls the library must answer: MPI_COMM_NULL, inter-communicators, and any call before
 * MPI_Init or after MPI_Finalize on MPI_COMM_WORLD or MPI_COMM_SELF go to PMPI untouched, so the
 * library reports them in its own words ("... before initializing ...").
 * Threads: the process-wide objects (probe communicator, reduction, error codes, keys) are
 * created under a lock (common/aapc_lock.h); the checks themselves touch only the call's data.
 *
 * Cost per call, p ranks: O(1) local work for MPI_Alltoall, O(p) for MPI_Alltoallv, two
 * zero-element MPI_Pack calls (tens of ns), and the agreement: one reduction of 48 bytes with
 * MPI_MAX (MPI_Alltoall) or 32 bytes with a user-defined operation (MPI_Alltoallv), about
 * lg(p) alpha (docs/measurements/argument-agreement.md: its share of a 64 KB call on the emulated 4+4 tree).
 * AAPC_AGREE=0 leaves the agreement out: the local checks stay and are raised at once on the
 * rank that finds them, but a misuse on some ranks only, or counts that differ, can then hang.
 * AAPC_AGREE=always agrees before the way is chosen, on the calls handed to the MPI library by
 * size too (alltoall/aapc_alltoall_cluster.c): block sizes that differ across ranks by enough
 * to change the way then end in an error on every rank as well (a checking mode: one reduction
 * on every call).
 */
#include "aapc_args.h"

#include "aapc_comm.h" /* aapc_warn_fallback */
#include "aapc_lock.h"
#include "aapc_mpi.h"
#include "aapc_settings.h" /* AAPC_AGREE */
#include "aapc_wait.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h> /* FIONREAD */
#include <string.h>

/* ---- the objects of the checks ----------------------------------------------------------- */

/* The probe communicator (one rank, MPI_ERRORS_RETURN), the Alltoallv agreement's reduction
   and its datatype. World model: one set per process, freed by MPI_Finalize (an attribute of
   MPI_COMM_SELF). Sessions model: one set per user communicator (an attribute of it, freed
   with it, so before the session ends). */
struct objs {
    MPI_Comm probe;
    MPI_Op vop;
    MPI_Datatype vtype;
};

static aapc_mutex_t lock = AAPC_MUTEX_INIT;
static struct objs world = {MPI_COMM_NULL, MPI_OP_NULL, MPI_DATATYPE_NULL};
static int world_keyval = MPI_KEYVAL_INVALID; /* on MPI_COMM_SELF: frees `world` */
static int comm_keyval = MPI_KEYVAL_INVALID;  /* on a sessions communicator: its objs */

static void objs_free(struct objs *o)
{
    if (o->probe != MPI_COMM_NULL)
        PMPI_Comm_free(&o->probe);
    if (o->vop != MPI_OP_NULL)
        PMPI_Op_free(&o->vop);
    if (o->vtype != MPI_DATATYPE_NULL)
        PMPI_Type_free(&o->vtype);
    *o = (struct objs){MPI_COMM_NULL, MPI_OP_NULL, MPI_DATATYPE_NULL};
}

static int world_cleanup(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)attr;
    (void)extra;
    aapc_lock(&lock);
    objs_free(&world);
    aapc_unlock(&lock);
    return MPI_SUCCESS;
}

static int comm_cleanup(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    objs_free(attr);
    free(attr);
    return MPI_SUCCESS;
}

/* The objects for calls on comm; NULL when out of memory. Under the lock. */
static struct objs *objs_locked(MPI_Comm comm)
{
    if (aapc_world_model()) {
        if (world_keyval == MPI_KEYVAL_INVALID) {
            aapc_test_delay_keys();
            if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, world_cleanup, &world_keyval,
                                        NULL) == MPI_SUCCESS)
                PMPI_Comm_set_attr(MPI_COMM_SELF, world_keyval, NULL);
        }
        return &world;
    }
    if (comm_keyval == MPI_KEYVAL_INVALID) {
        aapc_test_delay_keys();
        if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_cleanup, &comm_keyval, NULL) !=
            MPI_SUCCESS)
            return NULL;
    }
    void *attr = NULL;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, comm_keyval, &attr, &flag) == MPI_SUCCESS && flag)
        return attr;
    struct objs *o = malloc(sizeof *o);
    if (o == NULL)
        return NULL;
    *o = (struct objs){MPI_COMM_NULL, MPI_OP_NULL, MPI_DATATYPE_NULL};
    if (PMPI_Comm_set_attr(comm, comm_keyval, o) != MPI_SUCCESS) {
        free(o);
        return NULL;
    }
    return o;
}

/* The probe communicator of calls on comm (MPI_COMM_NULL: none could be made; the committed
   check is then left to the library). */
static MPI_Comm probe_of(MPI_Comm comm)
{
    aapc_lock(&lock);
    struct objs *o = objs_locked(comm);
    MPI_Comm probe = MPI_COMM_NULL;
    if (o != NULL && o->probe == MPI_COMM_NULL) {
        aapc_test_delay_keys();
        if (o == &world) {
            if (PMPI_Comm_dup(MPI_COMM_SELF, &o->probe) != MPI_SUCCESS)
                o->probe = MPI_COMM_NULL;
        } else { /* this rank alone, from the user's communicator: local */
            MPI_Group g = MPI_GROUP_NULL, me = MPI_GROUP_NULL;
            int rank = 0;
            if (PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS &&
                PMPI_Comm_group(comm, &g) == MPI_SUCCESS &&
                PMPI_Group_incl(g, 1, &rank, &me) == MPI_SUCCESS &&
                PMPI_Comm_create_group(comm, me, 0, &o->probe) != MPI_SUCCESS)
                o->probe = MPI_COMM_NULL;
            if (me != MPI_GROUP_NULL)
                PMPI_Group_free(&me);
            if (g != MPI_GROUP_NULL)
                PMPI_Group_free(&g);
        }
        if (o->probe != MPI_COMM_NULL)
            PMPI_Comm_set_errhandler(o->probe, MPI_ERRORS_RETURN);
    }
    if (o != NULL)
        probe = o->probe;
    aapc_unlock(&lock);
    return probe;
}

/* AAPC_AGREE, a setting every rank of comm shares (common/aapc_settings.h: where its ranks
   differ, every rank runs as if unset): unset, the agreement, carried by the exchange where it
   can be; "reduce", always a reduction; "always", a reduction before the way is chosen; "0",
   none. Another value is taken as unset, and rank 0 of the first communicator that meets it
   says so once per process. */
enum agree_mode { AGREE_CARRIED, AGREE_REDUCED, AGREE_ALWAYS, AGREE_OFF };

static enum agree_mode agree_mode(MPI_Comm comm)
{
    static atomic_int warned;
    const char *e = aapc_setting(comm, "AAPC_AGREE");
    if (e == NULL || e[0] == '\0')
        return AGREE_CARRIED;
    if (strcmp(e, "0") == 0)
        return AGREE_OFF;
    if (strcmp(e, "reduce") == 0)
        return AGREE_REDUCED;
    if (strcmp(e, "always") == 0)
        return AGREE_ALWAYS;
    int rank = -1;
    if (PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank == 0 && !atomic_exchange(&warned, 1))
        fprintf(stderr,
                "aapcgen: AAPC_AGREE=%s is not one of 0, reduce, always; agreeing as when "
                "unset\n",
                e);
    return AGREE_CARRIED;
}

static int agree_enabled(MPI_Comm comm)
{
    return agree_mode(comm) != AGREE_OFF;
}

int aapc_args_carries(MPI_Comm comm)
{
    return agree_mode(comm) == AGREE_CARRIED;
}

int aapc_args_always(MPI_Comm comm)
{
    return agree_mode(comm) == AGREE_ALWAYS;
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

/* A code of class cls whose string is msg: one code per distinct (class, message), so the
   string of a code returned earlier stays what it said. At most KEEP of them per process; past
   that, and when the library cannot add codes (SimGrid's returns success and no code), the
   class itself (its string is the library's generic one). */
static int code_of(int cls, const char *msg)
{
    enum { KEEP = 1024 };
    static struct {
        uint64_t hash;
        int cls, code;
    } known[KEEP];
    static int n = 0;
    uint64_t h = 1469598103934665603ull;
    for (const char *p = msg; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ (uint64_t)(unsigned)cls) * 1099511628211ull;
    int code = -1;
    aapc_lock(&lock);
    for (int i = 0; i < n && code < 0; i++)
        if (known[i].hash == h && known[i].cls == cls)
            code = known[i].code;
    if (code < 0 && n < KEEP) {
        int c = -1, back = -1;
        if (PMPI_Add_error_code(cls, &c) == MPI_SUCCESS && c >= 0 &&
            PMPI_Error_class(c, &back) == MPI_SUCCESS && back == cls &&
            PMPI_Add_error_string(c, msg) == MPI_SUCCESS) {
            known[n].hash = h;
            known[n].cls = cls;
            known[n++].code = c;
            code = c;
        }
    }
    aapc_unlock(&lock);
    return code >= 0 ? code : cls;
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

int aapc_args_error_code(int cls, const char *what)
{
    return code_of(cls, what);
}

int aapc_args_raise_code(MPI_Comm comm, int code)
{
    if (code != MPI_SUCCESS && comm != MPI_COMM_NULL)
        PMPI_Comm_call_errhandler(comm, code);
    return code;
}

/* Before an abort: give the launcher up to 2 s to take what this rank wrote to stderr. Under
   MPICH's Hydra, stderr is a pipe read by the rank's proxy, and an abort that reaches the proxy
   first ends the job with the line unread (CI saw an empty stderr from a test whose rank had
   written its reason, with busy-polling ranks on the 2 cores). FIONREAD on the pipe says how many
   bytes are still unread; on a file or terminal it is 0 or fails, and nothing waits. Then a
   little more for the proxy to pass the line on. */
static void let_stderr_drain(void)
{
#ifdef FIONREAD
    for (int waited = 0; waited < 2000; waited++) {
        int unread = 0;
        if (ioctl(2, FIONREAD, &unread) != 0 || unread <= 0)
            break;
        aapc_nap_us(1000);
    }
#endif
    aapc_nap_us(50000);
}

int aapc_args_raise_alone(MPI_Comm comm, int code)
{
    if (code == MPI_SUCCESS || comm == MPI_COMM_NULL)
        return code;
    PMPI_Comm_call_errhandler(comm, code); /* aborts under MPI_ERRORS_ARE_FATAL */
    char what[MPI_MAX_ERROR_STRING] = "";
    int len = 0, rank = -1;
    PMPI_Error_string(code, what, &len);
    PMPI_Comm_rank(comm, &rank);
    fprintf(stderr,
            "aapcgen: rank %d of the communicator failed alone in a call the other ranks "
            "have begun (%s); aborting the job, since they may be waiting for this rank's "
            "messages\n",
            rank, what);
    fflush(stderr);
    let_stderr_drain();
    PMPI_Abort(comm, code);
    _Exit(EXIT_FAILURE); /* an MPI_Abort may return before the launcher ends the job (MPICH 5) */
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

/* The note of aapc_args_note, per thread (under SimGrid SMPI, whose simulated ranks share OS
   threads, per rank: its global data is privatized). */
#ifdef SMPI_SHARED_MALLOC
static struct finding noted;
#else
static _Thread_local struct finding noted;
#endif

void aapc_args_note(int cls, const char *what)
{
    noted.cls = cls;
    snprintf(noted.what, sizeof noted.what, "%s", cls != 0 && what != NULL ? what : "");
}

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

/* The common predefined datatypes: committed by definition. Compared by handle, no MPI call
   (a garbage handle must reach the probe, whose error handler returns, not a call that would
   raise on MPI_COMM_SELF's). */
static int predefined(MPI_Datatype t)
{
    static const MPI_Datatype named[] = {
        MPI_BYTE,          MPI_CHAR,          MPI_SIGNED_CHAR,  MPI_UNSIGNED_CHAR,
        MPI_SHORT,         MPI_UNSIGNED_SHORT, MPI_INT,         MPI_UNSIGNED,
        MPI_LONG,          MPI_UNSIGNED_LONG, MPI_LONG_LONG,    MPI_UNSIGNED_LONG_LONG,
        MPI_FLOAT,         MPI_DOUBLE,        MPI_LONG_DOUBLE,  MPI_INT8_T,
        MPI_INT16_T,       MPI_INT32_T,       MPI_INT64_T,      MPI_UINT8_T,
        MPI_UINT16_T,      MPI_UINT32_T,      MPI_UINT64_T,     MPI_C_BOOL,
        MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_AINT,    MPI_OFFSET,
        MPI_COUNT,         MPI_PACKED,        MPI_WCHAR,        MPI_2INT,
        MPI_DOUBLE_INT,    MPI_FLOAT_INT,     MPI_LONG_INT,     MPI_INTEGER,
        MPI_REAL,          MPI_DOUBLE_PRECISION, MPI_COMPLEX,   MPI_DOUBLE_COMPLEX};
    for (size_t i = 0; i < sizeof named / sizeof *named; i++)
        if (t == named[i])
            return 1;
    return 0;
}

int aapc_args_committed(MPI_Comm comm, MPI_Datatype t)
{
    if (predefined(t))
        return 1; /* no probe: a call the library serves pays for none */
    MPI_Comm probe = probe_of(comm);
    char out[1] = {0};
    int pos = 0;
    return probe == MPI_COMM_NULL || PMPI_Pack(out, 0, t, out, 0, &pos, probe) == MPI_SUCCESS;
}

/* The probe communicator for checks of these datatypes: none for predefined ones (committed by
   definition: a call the library serves pays for no probe). */
static MPI_Comm probe_for(MPI_Comm comm, MPI_Datatype a, MPI_Datatype b)
{
    return predefined(a) && predefined(b) ? MPI_COMM_NULL : probe_of(comm);
}

/* A datatype usable for communication: not NULL, committed. *size (64-bit) and *tlb when it
   is. */
static int type_ok(MPI_Datatype t, const char *arg, MPI_Comm probe, struct finding *f,
                   int64_t *size, MPI_Aint *tlb)
{
    MPI_Aint text;
    *size = 0;
    *tlb = 0;
    if (t == MPI_DATATYPE_NULL) {
        found(f, MPI_ERR_TYPE, "%s is MPI_DATATYPE_NULL", arg);
        return 0;
    }
    if (probe != MPI_COMM_NULL) {
        char out[1] = {0};
        int pos = 0;
        if (PMPI_Pack(out, 0, t, out, 0, &pos, probe) != MPI_SUCCESS) {
            found(f, MPI_ERR_TYPE, "%s is not a committed datatype", arg);
            return 0;
        }
    }
    if (aapc_type_size(t, size) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(t, tlb, &text) != MPI_SUCCESS) {
        found(f, MPI_ERR_TYPE, "%s is not a valid datatype", arg);
        return 0;
    }
    return 1;
}

/* MPICH's rule for a NULL buffer: data would start at address 0. */
static int null_data(const void *buf, int count, int64_t size, MPI_Aint tlb)
{
    return buf == NULL && count > 0 && size > 0 && tlb == 0;
}

/* Bytes from the lowest to the highest byte of `count` elements of t at displacement disp (in
   extents): [*lo, *hi) relative to the buffer. */
static int span_of(MPI_Datatype t, MPI_Aint disp, MPI_Aint count, MPI_Aint *lo, MPI_Aint *hi)
{
    MPI_Aint lb, ext, tlb, text, last = count - 1;
    int rc;
    if ((rc = PMPI_Type_get_extent(t, &lb, &ext)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_true_extent(t, &tlb, &text)) != MPI_SUCCESS)
        return rc;
    *lo = disp * ext + tlb + (ext < 0 ? last * ext : 0);
    *hi = disp * ext + tlb + text + (ext > 0 ? last * ext : 0);
    return MPI_SUCCESS;
}

/* The in-place probe: can this rank allocate `bytes` (the executors' copy of its receive
   buffer)? Allocated and freed at once; the executor allocates it again. */
static int can_allocate(MPI_Aint bytes)
{
    void *p = bytes > 0 ? malloc((size_t)bytes) : NULL;
    free(p);
    return bytes <= 0 || p != NULL;
}

/* ---- MPI_Alltoall ------------------------------------------------------------------------ */

static void check_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           const void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           MPI_Comm probe, struct finding *f, int64_t *sbytes, int64_t *rbytes)
{
    int inplace = sendbuf == MPI_IN_PLACE;
    int64_t ssize = 0, rsize = 0;
    MPI_Aint stlb = 0, rtlb = 0;
    *sbytes = *rbytes = 0;
    if (noted.cls != 0) { /* the converting entry point's finding comes first */
        *f = noted;
        noted.cls = 0;
    }
    if (!inplace) {
        if (sendcount < 0)
            found(f, MPI_ERR_COUNT, "sendcount %d is negative", sendcount);
        if (type_ok(sendtype, "sendtype", probe, f, &ssize, &stlb) &&
            null_data(sendbuf, sendcount, ssize, stlb))
            found(f, MPI_ERR_BUFFER, "sendbuf is NULL and sendcount %d", sendcount);
    }
    if (recvcount < 0)
        found(f, MPI_ERR_COUNT, "recvcount %d is negative", recvcount);
    if (type_ok(recvtype, "recvtype", probe, f, &rsize, &rtlb) &&
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
   naming the routine, as every fallback), and a call on MPI_COMM_WORLD or MPI_COMM_SELF
   before MPI_Init or after MPI_Finalize (the library reports it as such). Sets *done. */
static int to_library(MPI_Comm comm, const char *name, const char *routine, int *done, int *rc)
{
    int inter = 0, init = 0, fin = 0;
    *done = 0;
    PMPI_Initialized(&init);
    if (init)
        PMPI_Finalized(&fin);
    if (comm == MPI_COMM_NULL || fin ||
        (!init && (comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF))) {
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

int aapc_args_to_library(MPI_Comm comm, const char *name, const char *routine)
{
    int done = 0, rc = MPI_SUCCESS;
    return to_library(comm, name, routine, &done, &rc) || done;
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

long long aapc_args_key(int cls, int rank, int size)
{
    return cls ? (long long)(((int64_t)(size - rank) << 32) | (uint32_t)cls) : 0;
}

int aapc_args_raise_found(MPI_Comm comm, const char *routine, int cls, const char *what,
                          long long key, int size)
{
    struct finding f = {cls, ""};
    snprintf(f.what, sizeof f.what, "%s", what != NULL ? what : "");
    return raise_finding(comm, routine, &f, (int64_t)key, size);
}

/* Every rank falls back to the library for an in-place call: rank `who` could not allocate
   the copy of its receive buffer (this rank's is `bytes`). */
static void warn_inplace(MPI_Comm comm, const char *name, const char *routine, int who,
                         MPI_Aint bytes)
{
    char why[200];
    snprintf(why, sizeof why,
             "rank %d cannot allocate the copy of its receive buffer that MPI_IN_PLACE needs "
             "(%lld bytes on rank 0)",
             who, (long long)bytes);
    aapc_warn_fallback(comm, name, why, routine);
}

/* "lo" or "lo to hi". */
static void span_text(char *out, size_t n, int64_t lo, int64_t hi)
{
    if (lo == hi)
        snprintf(out, n, "%lld", (long long)lo);
    else
        snprintf(out, n, "%lld to %lld", (long long)lo, (long long)hi);
}

/* What every rank decides from the agreed vector v (the maximum over the ranks of each
   rank's {finding key, sb, -sb, rb, -rb, in-place copy failed}; `mismatch`: this rank saw a
   message longer than its block, so the block sizes differ). This rank's own finding f, sizes
   sb, rb and in-place span [lo, hi). Sets *done: 0 when the call goes on with ours. */
static int decide_alltoall(const char *name, const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, const void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm, const struct finding *f,
                           const int64_t *v, int mismatch, int64_t sb, int64_t rb, int size,
                           MPI_Aint span, int *done)
{
    *done = 1;
    if (v[0] != 0)
        return raise_finding(comm, "MPI_Alltoall", f, v[0], size);
    if (mismatch || v[1] != -v[2] || v[3] != -v[4] || v[1] != v[3]) {
        char sent[48], expected[48];
        span_text(sent, sizeof sent, -v[2], v[1]);
        span_text(expected, sizeof expected, -v[4], v[3]);
        return raise_on(comm, MPI_ERR_TRUNCATE,
                        "aapcgen MPI_Alltoall: the block size differs across ranks: blocks of %s "
                        "bytes sent, %s bytes expected (this rank sends %lld, expects %lld)",
                        sent, expected, (long long)sb, (long long)rb);
    }
    if (v[1] == 0)
        return MPI_SUCCESS; /* no rank has a byte to move */
    if (v[5] != 0) {
        warn_inplace(comm, name, "MPI_Alltoall", size - (int)v[5], span);
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, (void *)recvbuf, recvcount, recvtype,
                             comm);
    }
    *done = 0;
    return MPI_SUCCESS;
}

/* This rank's vote: {finding key, sb, -sb, rb, -rb, nomem: this rank could not allocate the
   executors' copy of its receive span (MPI_IN_PLACE)}. */
static void vote_alltoall(const struct finding *f, int64_t sb, int64_t rb, int rank, int size,
                          int nomem, int64_t v[AAPC_ARGS_VOTE])
{
    int64_t w[AAPC_ARGS_VOTE] = {(int64_t)aapc_args_key(f->cls, rank, size), sb, -sb, rb, -rb,
                                 nomem ? size - rank : 0};
    memcpy(v, w, sizeof w);
}

int aapc_args_alltoall(const char *name, const void *sendbuf, int sendcount,
                       MPI_Datatype sendtype, const void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm, int *done)
{
    struct finding f = {0, ""};
    int rc = MPI_SUCCESS, rank = 0, size = 0;
    int64_t sb, rb;
    MPI_Aint lo = 0, hi = 0;
    if (to_library(comm, name, "MPI_Alltoall", done, &rc))
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, (void *)recvbuf, recvcount, recvtype,
                             comm);
    if (*done)
        return rc;
    check_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                   probe_for(comm, sendtype, recvtype), &f, &sb, &rb);
    if (!agree_enabled(comm)) {
        *done = f.cls != 0;
        return f.cls ? raise_finding(comm, "MPI_Alltoall", &f, 0, 0) : MPI_SUCCESS;
    }
    if ((rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS) {
        *done = 1;
        return rc;
    }
    int nomem = 0; /* MPI_IN_PLACE: the executors copy the span of the P receive blocks */
    if (f.cls == 0 && sendbuf == MPI_IN_PLACE && rb > 0 &&
        span_of(recvtype, 0, (MPI_Aint)size * recvcount, &lo, &hi) == MPI_SUCCESS)
        nomem = !can_allocate(hi - lo);
    int64_t v[AAPC_ARGS_VOTE];
    vote_alltoall(&f, sb, rb, rank, size, nomem, v);
    if ((rc = agree(v, AAPC_ARGS_VOTE, MPI_INT64_T, MPI_MAX, comm)) != MPI_SUCCESS) {
        *done = 1; /* raised by the library on comm */
        return rc;
    }
    return decide_alltoall(name, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                           comm, &f, v, 0, sb, rb, size, hi - lo, done);
}

int aapc_args_alltoall_carried(const char *name, const void *sendbuf, int sendcount,
                               MPI_Datatype sendtype, const void *recvbuf, int recvcount,
                               MPI_Datatype recvtype, MPI_Comm comm, aapc_args_carry_fn carry,
                               void *ctx, int *done)
{
    struct finding f = {0, ""};
    int rc = MPI_SUCCESS, rank = 0, size = 0, mismatch = 0;
    int64_t sb, rb;
    if (to_library(comm, name, "MPI_Alltoall", done, &rc))
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, (void *)recvbuf, recvcount, recvtype,
                             comm);
    if (*done)
        return rc;
    check_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                   probe_for(comm, sendtype, recvtype), &f, &sb, &rb);
    *done = 1;
    if ((rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS)
        return rc;
    int64_t v[AAPC_ARGS_VOTE];
    vote_alltoall(&f, sb, rb, rank, size, 0, v); /* the carried exchange copies nothing aside */
    if ((rc = carry(ctx, f.cls != 0, v, &mismatch)) != MPI_SUCCESS)
        return aapc_args_raise_alone(comm, rc); /* this rank alone: a failed send, no memory */
    return decide_alltoall(name, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                           comm, &f, v, mismatch, sb, rb, size, 0, done);
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

/* The Alltoallv vote: {error key, hash, any data, in-place copy failed (key), in place, bytes
   sent, bytes received}. "In place": 1 from a rank that passed MPI_IN_PLACE. The two byte
   counts are the busiest rank's (the selection's, aapc_args_alltoallv_most; 0 otherwise),
   doubles >= 0 kept in their bits, which order as the int64 they read as. */
enum { VLEN = 8, V_KEY = 0, V_HASH, V_DATA, V_NOMEM, V_INPLACE, V_SENT, V_RECV, V_LARGEST };

/* Reduction of the vote: the maximum of each element but the hash, summed modulo 2^64. */
static void vreduce(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int k = 0; k < *len; k++) {
        int64_t a[VLEN], b[VLEN];
        memcpy(a, (char *)in + (size_t)k * sizeof a, sizeof a);
        memcpy(b, (char *)inout + (size_t)k * sizeof b, sizeof b);
        uint64_t h = (uint64_t)a[V_HASH] + (uint64_t)b[V_HASH];
        for (int e = 0; e < VLEN; e++)
            b[e] = a[e] > b[e] ? a[e] : b[e];
        memcpy(&b[V_HASH], &h, sizeof h);
        memcpy((char *)inout + (size_t)k * sizeof b, b, sizeof b);
    }
}

/* The Alltoallv agreement's operation and datatype for calls on comm. */
static int vagree_setup(MPI_Comm comm, MPI_Op *op, MPI_Datatype *type)
{
    int rc = MPI_ERR_NO_MEM;
    aapc_lock(&lock);
    struct objs *o = objs_locked(comm);
    if (o != NULL && o->vop != MPI_OP_NULL) {
        rc = MPI_SUCCESS;
    } else if (o != NULL) {
        aapc_test_delay_keys();
        if ((rc = PMPI_Type_contiguous(VLEN, MPI_INT64_T, &o->vtype)) != MPI_SUCCESS ||
            (rc = PMPI_Type_commit(&o->vtype)) != MPI_SUCCESS ||
            (rc = PMPI_Op_create(vreduce, 1, &o->vop)) != MPI_SUCCESS) {
            if (o->vtype != MPI_DATATYPE_NULL)
                PMPI_Type_free(&o->vtype);
            o->vtype = MPI_DATATYPE_NULL;
            o->vop = MPI_OP_NULL;
        }
    }
    if (rc == MPI_SUCCESS) {
        *op = o->vop;
        *type = o->vtype;
    }
    aapc_unlock(&lock);
    return rc;
}

/* Local checks of one side (send or receive) of MPI_Alltoallv; adds its hashes to *h and
   sets *others to its bytes to or from the other ranks (what a count or type it refuses
   counts as 0). */
static void check_side(int send, const void *buf, const int counts[], const int displs[],
                       MPI_Datatype type, int rank, int size, MPI_Comm probe, struct finding *f,
                       uint64_t *h, int *data, double others[2])
{
    const char *side = send ? "send" : "recv";
    int64_t tsize = 0;
    MPI_Aint tlb = 0;
    char arg[16];
    if (counts == NULL || displs == NULL) {
        found(f, MPI_ERR_ARG, "%scounts or %s is NULL", side, send ? "sdispls" : "rdispls");
        return;
    }
    snprintf(arg, sizeof arg, "%stype", side);
    int typed = type_ok(type, arg, probe, f, &tsize, &tlb);
    others[0] = others[1] = 0; /* the bytes to or from the others, and the largest block */
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
        double b = i != rank ? (double)counts[i] * (double)tsize : 0;
        others[0] += b;
        others[1] = b > others[1] ? b : others[1];
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

/* The bytes of the span of every receive block with data (what the in-place executor copies). */
static MPI_Aint vspan(const int counts[], const int displs[], MPI_Datatype type, int size)
{
    MPI_Aint lo = 0, hi = 0;
    int any = 0;
    for (int i = 0; i < size; i++) {
        MPI_Aint a, b;
        if (counts[i] <= 0 || span_of(type, displs[i], counts[i], &a, &b) != MPI_SUCCESS)
            continue;
        lo = any && lo < a ? lo : a;
        hi = any && hi > b ? hi : b;
        any = 1;
    }
    return hi - lo;
}

/* This rank's checks of an MPI_Alltoallv (rank of size) and its vote: the in-place copy left
   0, its bytes sent to and received from the other ranks as the busiest. */
static void vote_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                           MPI_Datatype sendtype, const void *recvbuf, const int recvcounts[],
                           const int rdispls[], MPI_Datatype recvtype, int rank, int size,
                           MPI_Comm probe, struct finding *f, int64_t v[VLEN])
{
    int data = 0, inplace = sendbuf == MPI_IN_PLACE;
    uint64_t h = 0;
    double sent[2] = {0, 0}, recv[2] = {0, 0};
    if (inplace)
        check_side(1, recvbuf, recvcounts, rdispls, recvtype, rank, size, probe, f, &h, &data,
                   sent);
    else
        check_side(1, sendbuf, sendcounts, sdispls, sendtype, rank, size, probe, f, &h, &data,
                   sent);
    check_side(0, recvbuf, recvcounts, rdispls, recvtype, rank, size, probe, f, &h, &data, recv);
    double largest = sent[1] > recv[1] ? sent[1] : recv[1];
    if (recvbuf == MPI_IN_PLACE && any_positive(recvcounts, size))
        found(f, MPI_ERR_BUFFER, "recvbuf is MPI_IN_PLACE (only sendbuf may be)");
    if (!inplace && sendbuf == recvbuf && sendbuf != NULL && any_positive(sendcounts, size) &&
        any_positive(recvcounts, size))
        found(f, MPI_ERR_BUFFER,
              "sendbuf and recvbuf are the same buffer (aliased; pass MPI_IN_PLACE as sendbuf "
              "to exchange in place)");
    int64_t w[VLEN] = {f->cls ? ((int64_t)(size - rank) << 32) | (uint32_t)f->cls : 0, 0, data,
                       0, inplace, 0, 0, 0};
    memcpy(&w[V_HASH], &h, sizeof h);
    /* nonnegative doubles: their bits order as the numbers do, so MAX over int64 is theirs */
    memcpy(&w[V_SENT], &sent[0], sizeof sent[0]);
    memcpy(&w[V_RECV], &recv[0], sizeof recv[0]);
    memcpy(&w[V_LARGEST], &largest, sizeof largest);
    memcpy(v, w, sizeof w);
}

/* The vote's reduction on comm (*done = 1 when it failed: the library raised it on comm). */
static int vagree(MPI_Comm comm, int64_t v[VLEN], int *done)
{
    MPI_Op vop = MPI_OP_NULL;
    MPI_Datatype vtype = MPI_DATATYPE_NULL;
    int rc = vagree_setup(comm, &vop, &vtype);
    *done = rc != MPI_SUCCESS;
    if (rc != MPI_SUCCESS) /* every rank: the same local objects fail the same way */
        return aapc_args_raise_code(comm, rc);
    rc = agree(v, 1, vtype, vop, comm);
    *done = rc != MPI_SUCCESS;
    return rc;
}

/* What every rank decides from the agreed vote v (this rank's finding f; copy: the span of its
   in-place copy, for the warning). */
static int decide_alltoallv(const char *name, const void *sendbuf, const int sendcounts[],
                            const int sdispls[], MPI_Datatype sendtype, const void *recvbuf,
                            const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm, const struct finding *f, const int64_t v[VLEN],
                            int size, MPI_Aint copy, int *done)
{
    *done = 1;
    if (v[V_KEY] != 0)
        return raise_finding(comm, "MPI_Alltoallv", f, v[V_KEY], size);
    if (v[V_HASH] != 0)
        return raise_on(comm, MPI_ERR_TRUNCATE,
                        "aapcgen MPI_Alltoallv: counts do not match across ranks: for some "
                        "ranks i and j, sendcounts[j] x size of sendtype on rank i differs from "
                        "recvcounts[i] x size of recvtype on rank j");
    if (v[V_DATA] == 0)
        return MPI_SUCCESS; /* no rank has a byte to move */
    if (v[V_NOMEM] != 0) {
        warn_inplace(comm, name, "MPI_Alltoallv", size - (int)v[V_NOMEM], copy);
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, (void *)recvbuf,
                              recvcounts, rdispls, recvtype, comm);
    }
    *done = 0;
    return MPI_SUCCESS;
}

/* The copy of this rank's receive span an in-place call's executors make: can it be made?
   (0 when the call is not in place, has no data, or failed a check.) */
static MPI_Aint vcopy(const void *sendbuf, const int recvcounts[], const int rdispls[],
                      MPI_Datatype recvtype, int size, const struct finding *f)
{
    MPI_Aint copy = f->cls == 0 && sendbuf == MPI_IN_PLACE && any_positive(recvcounts, size)
                        ? vspan(recvcounts, rdispls, recvtype, size)
                        : 0;
    return copy;
}

/* The start of the Alltoallv checks: a call the library takes untouched goes to it (*done =
   1, its result returned: MPI_COMM_NULL, inter-communicators, outside MPI_Init..MPI_Finalize);
   otherwise this rank's rank and size, its finding f and its vote v. */
static int vstart(const char *name, const void *sendbuf, const int sendcounts[],
                  const int sdispls[], MPI_Datatype sendtype, const void *recvbuf,
                  const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                  MPI_Comm comm, struct finding *f, int64_t v[VLEN], int *rank, int *size,
                  int *done)
{
    int rc = MPI_SUCCESS;
    if (to_library(comm, name, "MPI_Alltoallv", done, &rc))
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, (void *)recvbuf,
                              recvcounts, rdispls, recvtype, comm);
    if (*done)
        return rc;
    if ((rc = PMPI_Comm_rank(comm, rank)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_size(comm, size)) != MPI_SUCCESS) {
        *done = 1;
        return rc;
    }
    vote_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                   recvtype, *rank, *size, probe_for(comm, sendtype, recvtype), f, v);
    return MPI_SUCCESS;
}

int aapc_args_alltoallv(const char *name, const void *sendbuf, const int sendcounts[],
                        const int sdispls[], MPI_Datatype sendtype, const void *recvbuf,
                        const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                        MPI_Comm comm, int *done)
{
    struct finding f = {0, ""};
    int rank = 0, size = 0;
    int64_t v[VLEN];
    int rc = vstart(name, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                    recvtype, comm, &f, v, &rank, &size, done);
    if (*done)
        return rc;
    if (!agree_enabled(comm)) {
        *done = f.cls != 0;
        return f.cls ? raise_finding(comm, "MPI_Alltoallv", &f, 0, 0) : MPI_SUCCESS;
    }
    MPI_Aint copy = vcopy(sendbuf, recvcounts, rdispls, recvtype, size, &f);
    v[V_NOMEM] = can_allocate(copy) ? 0 : size - rank;
    if ((rc = vagree(comm, v, done)) != MPI_SUCCESS || *done)
        return rc;
    return decide_alltoallv(name, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                            rdispls, recvtype, comm, &f, v, size, copy, done);
}

int aapc_args_alltoallv_most(const char *name, const void *sendbuf, const int sendcounts[],
                             const int sdispls[], MPI_Datatype sendtype, const void *recvbuf,
                             const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                             MPI_Comm comm, double most[3], int *copies, int *done)
{
    struct finding f = {0, ""};
    int rank = 0, size = 0;
    int64_t v[VLEN];
    *copies = 0;
    int rc = vstart(name, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                    recvtype, comm, &f, v, &rank, &size, done);
    if (*done)
        return rc;
    memcpy(&most[0], &v[V_SENT], sizeof most[0]);
    memcpy(&most[1], &v[V_RECV], sizeof most[1]);
    memcpy(&most[2], &v[V_LARGEST], sizeof most[2]);
    if (!agree_enabled(comm)) { /* the bytes alone, then this rank's checks */
        rc = PMPI_Allreduce(MPI_IN_PLACE, most, 3, MPI_DOUBLE, MPI_MAX, comm);
        *done = rc != MPI_SUCCESS || f.cls != 0;
        if (rc != MPI_SUCCESS || f.cls == 0)
            return rc;
        return raise_finding(comm, "MPI_Alltoallv", &f, 0, 0);
    }
    if ((rc = vagree(comm, v, done)) != MPI_SUCCESS || *done)
        return rc;
    memcpy(&most[0], &v[V_SENT], sizeof most[0]);
    memcpy(&most[1], &v[V_RECV], sizeof most[1]);
    memcpy(&most[2], &v[V_LARGEST], sizeof most[2]);
    *copies = v[V_INPLACE] != 0;
    return decide_alltoallv(name, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                            rdispls, recvtype, comm, &f, v, size, 0, done);
}

int aapc_args_alltoallv_inplace(const char *name, const void *sendbuf, const int sendcounts[],
                                const int sdispls[], MPI_Datatype sendtype, const void *recvbuf,
                                const int recvcounts[], const int rdispls[],
                                MPI_Datatype recvtype, MPI_Comm comm, int *done)
{
    struct finding f = {0, ""};
    int rc = MPI_SUCCESS, rank = 0, size = 0;
    *done = 0;
    if (!agree_enabled(comm))
        return MPI_SUCCESS;
    if ((rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS) {
        *done = 1;
        return rc;
    }
    MPI_Aint copy = vcopy(sendbuf, recvcounts, rdispls, recvtype, size, &f);
    int64_t v[VLEN] = {0, 0, 1, can_allocate(copy) ? 0 : size - rank, 0, 0, 0, 0};
    if ((rc = vagree(comm, v, done)) != MPI_SUCCESS || *done)
        return rc;
    return decide_alltoallv(name, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                            rdispls, recvtype, comm, &f, v, size, copy, done);
}
