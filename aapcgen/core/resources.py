"""Locate the data directories (templates/, runtime_c/, topologies/).

In an installed wheel they are inside the package (``aapcgen/templates`` ...); in a source
checkout or an editable install they sit at the top of the repository.
"""

from __future__ import annotations

from pathlib import Path

from aapcgen.core.errors import AapcError

_PACKAGE = Path(__file__).resolve().parent.parent


def resource_dir(name: str) -> Path:
    """Return the directory ``name`` (``templates``, ``runtime_c`` or ``topologies``)."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise AapcError(f"aapcgen installation is incomplete: data directory '{name}' not found")
