"""aapcgen: contention-free MPI all-to-all routines generated for one cluster's switch tree."""

__version__ = "0.1.0"
