"""Bandwidth strings such as ``100Mbit``, ``1.5Gbit``, ``125MB/s`` <-> bytes per second.

A bandwidth is a positive number followed by a unit: an optional prefix and a base.

* prefixes: SI ``k``/``K`` (1e3), ``M`` (1e6), ``G`` (1e9), ``T`` (1e12) and binary
  ``Ki`` (2**10), ``Mi`` (2**20), ``Gi`` (2**30), ``Ti`` (2**40);
* bits: ``b``, ``bit``, ``bits``, ``bps``, ``b/s``, ``bit/s``, ``bits/s``;
* bytes: ``B``, ``Bps``, ``B/s``, ``byte``, ``bytes``, ``byte/s``, ``bytes/s``.

The one-letter forms are case-sensitive (``Mbps`` is megabits, ``MBps`` megabytes); the
spelled-out words ``bit`` and ``byte`` are not (``GBit`` is gigabits), and with them a lower-case
``m``, ``g`` or ``t`` is mega, giga or tera as in ``tc`` (``100mbit``: no network runs at
millibits). ``100mbps`` and ``100mb`` are refused as ambiguous (tc reads ``mbps`` as megabytes).
Space between the number and the unit is allowed.
"""

from __future__ import annotations

import math
import re

_NUMBER_UNIT = re.compile(
    r"\s*(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>\S*)\s*"
)

# Longest first so that "Ki" wins over "K".
_PREFIXES: tuple[tuple[str, float], ...] = (
    ("Ki", 2.0**10),
    ("Mi", 2.0**20),
    ("Gi", 2.0**30),
    ("Ti", 2.0**40),
    ("k", 1e3),
    ("K", 1e3),
    ("M", 1e6),
    ("G", 1e9),
    ("T", 1e12),
    ("", 1.0),
)

# Base unit -> bytes per unit.
_CASE_SENSITIVE_BASES = {"b": 1 / 8, "bps": 1 / 8, "b/s": 1 / 8, "B": 1.0, "Bps": 1.0, "B/s": 1.0}
_WORD_BASES = {
    "bit": 1 / 8,
    "bits": 1 / 8,
    "bit/s": 1 / 8,
    "bits/s": 1 / 8,
    "byte": 1.0,
    "bytes": 1.0,
    "byte/s": 1.0,
    "bytes/s": 1.0,
}

_EXAMPLES = "e.g. 100Mbit, 1Gbit, 125MB/s"
# Lower-case prefixes, accepted before the spelled-out words only (``100mbit``, as tc writes it).
_WORD_PREFIXES: tuple[tuple[str, float], ...] = (("m", 1e6), ("g", 1e9), ("t", 1e12))
SHOWN_CHARS = 40  # characters of the user's text quoted in a message

# Prefixes used by format_bandwidth, largest first (decimal, in bits per second).
_FORMAT_PREFIXES: tuple[tuple[str, float], ...] = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def _base_factor(base: str) -> float | None:
    if base in _CASE_SENSITIVE_BASES:
        return _CASE_SENSITIVE_BASES[base]
    return _WORD_BASES.get(base.lower())


def _unit_factor(unit: str) -> float | None:
    """Bytes per second of one ``unit`` (e.g. ``Mbit`` -> 125000.0), or None if unknown."""
    for prefix, scale in _PREFIXES:
        if unit.startswith(prefix):
            factor = _base_factor(unit[len(prefix) :])
            if factor is not None:
                return scale * factor
    for prefix, scale in _WORD_PREFIXES:
        if unit.startswith(prefix) and unit[1:].lower() in _WORD_BASES:
            return scale * _WORD_BASES[unit[1:].lower()]
    return None


def shown_text(text: str) -> str:
    """The user's text quoted for a one-line error, cut to SHOWN_CHARS."""
    return repr(text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "...")


def parse_bandwidth(text: str) -> float:
    """Return the bandwidth ``text`` (e.g. ``"100Mbit"``) in bytes per second.

    Raises ValueError with a short reason for a bare number, a non-positive value or an
    unknown unit.
    """
    if not isinstance(text, str):
        raise ValueError(f"{shown_text(repr(text))} is not a bandwidth string ({_EXAMPLES})")
    match = _NUMBER_UNIT.fullmatch(text)
    if match is None:
        raise ValueError(f"{shown_text(text)} is not a bandwidth ({_EXAMPLES})")
    number = float(match["number"])
    unit = match["unit"]
    if not unit:
        raise ValueError(f"{shown_text(text)} has no unit ({_EXAMPLES})")
    factor = _unit_factor(unit)
    if factor is None and any(unit == prefix for prefix, _ in _PREFIXES):
        raise ValueError(f"{shown_text(text)}: write {unit}bit or {unit}B (bits or bytes?)")
    if factor is None and unit.lower() in ("mb", "mbps", "gb", "gbps", "kb", "kbps", "tb", "tbps"):
        big = unit[0].upper() if unit[0] != "k" else "k"
        raise ValueError(
            f"{shown_text(text)} is ambiguous: write {match['number']}{big}bit or "
            f"{match['number']}{big}B/s"
        )
    if factor is None:
        raise ValueError(f"{shown_text(text)} has an unknown unit {shown_text(unit)} ({_EXAMPLES})")
    value = number * factor
    if not math.isfinite(value):
        raise ValueError(f"{shown_text(text)} is too large")
    if not value > 0:
        raise ValueError(f"{shown_text(text)} is not a positive bandwidth")
    return value


def _format_number(value: float) -> str:
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def format_bandwidth(bytes_per_s: float) -> str:
    """Return ``bytes_per_s`` as a bit rate with an SI prefix, e.g. ``"100 Mbit/s"``.

    ``parse_bandwidth(format_bandwidth(x))`` gives back ``x`` up to rounding in the last bits.
    """
    bits = bytes_per_s * 8
    for prefix, scale in _FORMAT_PREFIXES:
        if bits >= scale:
            return f"{_format_number(bits / scale)} {prefix}bit/s"
    return f"{_format_number(bits)} bit/s"


def parse_rate_option(text: str | None, option: str = "--rate") -> float | None:
    """A link-speed option (``--rate 100Mbit``) -> bytes/s; None or "" stays None; a bad value is
    a one-line InputError naming the option."""
    from aapcgen.core.errors import InputError

    if not text:
        return None
    try:
        return parse_bandwidth(text)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None
