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
    """``text`` on one line of at most ``width`` characters: whitespace runs become one space;
    a longer text first has its paths shortened to their last parts (``.../topologies/x.yaml``),
    longest first, so the words around them survive wherever the file lives; what is still too
    long keeps its start (file, line, part) and its end (what is wrong)."""
    words = str(text).split()
    text = " ".join(words)
    for word in sorted({w for w in words if w.count("/") > 1}, key=len, reverse=True):
        if len(text) <= width:
            break
        text = text.replace(word, short_path(word))
    if len(text) <= width:
        return text
    head = width * 3 // 5
    tail = width - head - 5
    return f"{text[:head]} ... {text[-tail:]}"


def short_path(word: str, keep: int = 2) -> str:
    """A path-like word with only its last ``keep`` parts (a trailing ``:`` or ``,`` kept)."""
    body = word.rstrip(":,;")
    parts = body.split("/")
    if len(parts) <= keep + 1:
        return word
    return ".../" + "/".join(parts[-keep:]) + word[len(body) :]
