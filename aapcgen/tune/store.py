"""The sweep's SQLite store: every measured point at once, so an interrupted sweep resumes; the
environment it was measured in, so a changed one is discarded."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import asdict
from pathlib import Path

from aapcgen.core.model import Topology
from aapcgen.measure.bench import Measurement
from aapcgen.tune.decide import (
    Range,
)
from aapcgen.tune.render import TUNED

SWEEP, VALIDATE = "sweep", "validate"


SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    phase TEXT NOT NULL, candidate TEXT NOT NULL, bytes INTEGER NOT NULL, repeat INTEGER NOT NULL,
    seconds REAL NOT NULL, iters INTEGER NOT NULL, cpu_busy REAL NOT NULL,
    mpi TEXT NOT NULL, backend TEXT NOT NULL, rate TEXT NOT NULL, topology_hash TEXT NOT NULL,
    recorded TEXT NOT NULL, PRIMARY KEY (phase, candidate, bytes, repeat));
CREATE TABLE IF NOT EXISTS validated (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pruned (
    candidate TEXT NOT NULL, bytes INTEGER NOT NULL, after_round INTEGER NOT NULL,
    reason TEXT NOT NULL, PRIMARY KEY (candidate, bytes));
"""


def topology_hash(topo: Topology) -> str:
    """Hash of what the routine depends on (names, tree, rates), not of the file's path."""
    data = asdict(topo)
    data.pop("source")
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


class Store:
    """DIR/results.sqlite: measurements (one row per phase, candidate, size, repeat), pruning."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def check_environment(self, env: dict[str, str]) -> str | None:
        """Keep the stored rows if they were measured in ``env``; else discard them and say why."""
        old = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        message = None
        if old:
            changed = [k for k in env if old.get(k) != env[k]]
            if changed:
                n = self.db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
                what = (
                    f"topology changed (hash {old.get('topology_hash')} -> {env['topology_hash']})"
                    if "topology_hash" in changed
                    else "environment changed ("
                    + ", ".join(f"{k}: {old.get(k)} -> {env[k]}" for k in changed)
                    + ")"
                )
                message = f"{what} since the stored sweep: discarding {n} stored measurements"
                self.db.execute("DELETE FROM measurements")
                self.db.execute("DELETE FROM pruned")
        with self.db:
            self.db.execute("DELETE FROM meta")
            self.db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(env.items()))
        return message

    def add(self, phase: str, rows: list[Measurement], env: dict[str, str]) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%S")
        with self.db:
            self.db.executemany(
                "INSERT OR IGNORE INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        phase,
                        r.candidate,
                        r.bytes,
                        r.repeat,
                        r.seconds,
                        r.iters,
                        r.cpu_busy,
                        env["mpi"],
                        env["backend"],
                        env["rate"],
                        env["topology_hash"],
                        now,
                    )
                    for r in rows
                ],
            )

    def rows(self, phase: str) -> list[Measurement]:
        return [
            Measurement(*r)
            for r in self.db.execute(
                "SELECT candidate, bytes, repeat, seconds, iters, cpu_busy FROM measurements "
                "WHERE phase = ? ORDER BY bytes, candidate, repeat",
                (phase,),
            )
        ]

    def done(self, phase: str) -> set[tuple[str, int, int]]:
        return set(
            self.db.execute(
                "SELECT candidate, bytes, repeat FROM measurements WHERE phase = ?", (phase,)
            ).fetchall()
        )

    def prune(self, items: list[tuple[str, int, int, str]]) -> None:
        with self.db:
            self.db.executemany("INSERT OR IGNORE INTO pruned VALUES (?,?,?,?)", items)

    def check_decision(self, ranges: list[Range], native_file: str = "") -> str | None:
        """Keep the stored validation rows of the tuned routine only if they timed the routine
        ``ranges`` describe, with the same native tuning file text ``native_file`` (it routes the
        ranges handed to a forced native algorithm); else discard them and say why. Rows of the
        other candidates stay: they do not depend on the decision."""
        now = json.dumps([[asdict(r) for r in ranges], native_file], sort_keys=True)
        row = self.db.execute("SELECT value FROM validated WHERE key = 'ranges'").fetchone()
        message = None
        with self.db:
            if row is not None and row[0] != now:
                n = self.db.execute(
                    "SELECT COUNT(*) FROM measurements WHERE phase = ? AND candidate = ?",
                    (VALIDATE, TUNED),
                ).fetchone()[0]
                self.db.execute(
                    "DELETE FROM measurements WHERE phase = ? AND candidate = ?", (VALIDATE, TUNED)
                )
                if n:
                    message = (
                        f"the decision changed since the stored validation: discarding {n} "
                        "stored measurements of the tuned routine"
                    )
            self.db.execute("INSERT OR REPLACE INTO validated VALUES ('ranges', ?)", (now,))
        return message

    def pruned(self) -> dict[tuple[str, int], str]:
        return {
            (c, b): reason
            for c, b, reason in self.db.execute("SELECT candidate, bytes, reason FROM pruned")
        }
