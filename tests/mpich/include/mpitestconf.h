/* What MPICH's test/mpi configure would find on a Linux host with a C11 compiler (the
   vendored tests read only these); ours, not MPICH's (tests/mpich/README.md). */
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STDARG_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_LONG_INT 1
#define HAVE_INT64_T 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_PTHREAD_H 1
#define THREAD_PACKAGE_NAME 2 /* THREAD_PACKAGE_POSIX of mpithreadtest.h */
#endif
