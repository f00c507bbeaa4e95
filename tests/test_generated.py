"""generated/ holds the generator's output for the example topologies and never drifts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tuning"))

from regenerate import EXAMPLES, regenerate  # noqa: E402


def test_generated_directory_matches_the_generator(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    regenerate(tmp_path)
    for name in EXAMPLES:
        fresh = {p.name: p.read_text() for p in (tmp_path / name).iterdir()}
        committed_dir = ROOT / "generated" / name
        assert committed_dir.is_dir(), f"generated/{name} is missing: run `make generated`"
        committed = {p.name: p.read_text() for p in committed_dir.iterdir()}
        assert sorted(committed) == sorted(fresh), (
            f"generated/{name}: file list drifted; run `make generated`"
        )
        for file, text in fresh.items():
            assert committed[file] == text, f"generated/{name}/{file} drifted; run `make generated`"
    assert os.path.isdir(ROOT / "generated")
