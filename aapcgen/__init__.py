"""aapcgen: contention-free MPI all-to-all routines generated for one cluster's switch tree.

The Python API (aapcgen/api.py; the command line does the same work):

    import aapcgen
    topo = aapcgen.load("cluster.yaml")      # a YAML file, a shipped example's name, or None
    sched = aapcgen.schedule(topo)           # the optimal contention-free phases
    aapcgen.prove(topo, sched)               # the independent proof (aapcgen verify)
    aapcgen.generate(topo, "aapc/")          # C sources and runtime for mpicc
    aapcgen.build(topo, "libaapc.so")        # the library for LD_PRELOAD
"""

from aapcgen.api import build, generate, load, prove, schedule
from aapcgen.core.errors import AapcError, InputError, VerificationError

__version__ = "0.1.0"

__all__ = [
    "AapcError",
    "InputError",
    "VerificationError",
    "__version__",
    "build",
    "generate",
    "load",
    "schedule",
    "prove",
]
