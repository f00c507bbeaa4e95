"""Reading one input file (topology, pattern, schedule, host file) safely: never a hang, never
more than ``limits.INPUT_BYTES`` in memory, every failure one line.

* a regular file: its size is checked before it is read;
* a pipe or FIFO (``/dev/stdin`` from ``cat topo.yaml |``): read to its end, at most the limit;
  a FIFO nobody writes to reads as empty instead of blocking;
* a device (``/dev/zero``, a terminal) or a folder: refused, it is no input file.
"""

from __future__ import annotations

import fcntl
import os
import stat

from aapcgen.core import limits
from aapcgen.core.errors import InputError

CHUNK = 1 << 20


def _read_stream(fd: int, allowed: int, source: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(CHUNK, allowed + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > allowed:
            raise InputError(f"{source}: {limits.exceeded(limits.INPUT_BYTES, total)}")


def read_bytes(path: str | os.PathLike[str], source: str, what: str = "file") -> bytes:
    """The bytes of input ``path``; InputError ``<source>: <why>`` when it cannot be one."""
    allowed = limits.value(limits.INPUT_BYTES)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{source}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{source}: is a directory, not a {what}") from None
    except OSError as exc:
        raise InputError(f"{source}: cannot read file: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{source}: is a directory, not a {what}")
        if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
            raise InputError(f"{source}: is a device, not a {what}")
        if stat.S_ISREG(info.st_mode):
            message = limits.exceeded(limits.INPUT_BYTES, info.st_size)
            if message is not None:
                raise InputError(f"{source}: {message}")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return _read_stream(fd, allowed, source)
    except OSError as exc:
        raise InputError(f"{source}: cannot read file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], source: str, what: str = "file") -> str:
    """The UTF-8 text of input ``path`` (see :func:`read_bytes`)."""
    data = read_bytes(path, source, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
