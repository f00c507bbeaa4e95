"""Errors that reach the user as one line on stderr (exit status 2), never as a traceback."""

from __future__ import annotations


class AapcError(Exception):
    """Base class for errors the CLI reports as one line and exit status 2."""


class InputError(AapcError):
    """Bad user input: the message names the file and the offending element."""


class VerificationError(AapcError):
    """A schedule failed independent verification; the message names the first violation."""


class Terminated(KeyboardInterrupt):
    """SIGTERM where aapcgen has something to clean up (measure/cleanup.py): unwinds like
    Ctrl-C, so that ``finally`` blocks run."""


MESSAGE_CHARS = 200  # the longest error line the user sees (a path or a value is cut short)


def one_line(text: str, width: int = MESSAGE_CHARS) -> str:
    """``text`` on one line of at most ``width`` characters: whitespace runs become one space,
    and a longer text keeps its start (file, line, part) and its end (what is wrong)."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    head = width * 3 // 5
    tail = width - head - 5
    return f"{text[:head]} ... {text[-tail:]}"
