"""How a failed command ends: one line on stderr and an exit status, never a traceback.

* bad input (AapcError and its InputError): exit 2, ``aapcgen: <file>:<line>: <what is wrong>``;
* a schedule that fails its proof (VerificationError): exit 1;
* an interruption: exit 130 (SIGINT), 143 (SIGTERM during bench and tune);
* a file that cannot be written (disk full, a folder in /proc): exit 2, naming the file;
* memory exhausted: exit 2, pointing at the limits (docs/topology.md, "Limits");
* anything else is a bug in aapcgen: exit 70 with the exception's type; ``AAPC_DEBUG=1`` shows
  the traceback too.

Every line is at most ``core.errors.MESSAGE_CHARS`` characters.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

from aapcgen.core.errors import AapcError, Terminated, VerificationError, one_line

INTERNAL = 70  # EX_SOFTWARE


def say(message: str) -> None:
    print(one_line(f"aapcgen: {message}"), file=sys.stderr, flush=True)


def _quiet_stdout() -> None:
    """After a broken pipe: send what is left of stdout nowhere (no second error at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Ctrl-C while the block runs (loading the commands' modules) takes effect at its end, as
    a KeyboardInterrupt: an interrupt inside an import can otherwise be printed as "Exception
    ignored" and lost, or end in a traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def report(exc: BaseException) -> int:
    """Print the one line ``exc`` deserves and return the exit status (re-raises SystemExit)."""
    if isinstance(exc, SystemExit):
        raise exc
    if isinstance(exc, VerificationError):
        say(f"verification FAILED: {exc}")
        return 1
    if isinstance(exc, AapcError):
        say(str(exc))
        return 2
    if isinstance(exc, Terminated):
        say("terminated")
        return 128 + signal.SIGTERM
    if isinstance(exc, KeyboardInterrupt):
        say("interrupted")
        return 130
    if isinstance(exc, BrokenPipeError):
        _quiet_stdout()
        return 0
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        say(f"{where}{exc.strerror or exc}")
        return 2
    if isinstance(exc, MemoryError):
        say(
            "out of memory: the input is too large for this machine; lower it or the limits "
            "(docs/topology.md, 'Limits')"
        )
        return 2
    if os.environ.get("AAPC_DEBUG"):
        import traceback

        traceback.print_exception(exc)
    say(
        f"internal error: {type(exc).__name__}: {exc} (a bug in aapcgen; please report the "
        "command; AAPC_DEBUG=1 prints the traceback)"
    )
    return INTERNAL
