"""Errors that reach the user as one line on stderr (exit status 2), never as a traceback."""

from __future__ import annotations


class AapcError(Exception):
    """Base class for errors the CLI reports as one line and exit status 2."""


class InputError(AapcError):
    """Bad user input: the message names the file and the offending element."""


class VerificationError(AapcError):
    """A schedule failed independent verification; the message names the first violation."""
