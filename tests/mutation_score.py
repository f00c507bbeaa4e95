"""Print the mutation score of the last `mutmut run` (`make mutate`), per mutated file, and the
surviving mutants that tests/mutation-equivalent.md does not list as equivalent.

Run from the top of the repository after `mutmut run`; reads mutants/**/*.meta (mutmut's
results). Exit status 1 when a verifier's mutant (aapcgen/verify/) survives unlisted.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code  # mutmut's verdict per exit code of a mutant

# a mutant that made a test fail, ran past its time limit or crashed is dead
KILLED = {"killed", "timeout", "segfault", "caught by type check"}


def equivalent(note: Path) -> set[str]:
    """Mutant names listed in the note (one per row, in backquotes)."""
    if not note.exists():
        return set()
    return set(re.findall(r"`(aapcgen\.[\w.ǁ]+__mutmut_\d+)`", note.read_text()))


def main() -> int:
    root = Path("mutants")
    listed = equivalent(Path("tests/mutation-equivalent.md"))
    unlisted_verifier = 0
    total = Counter()
    for meta in sorted(root.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if not codes:
            continue
        source = meta.relative_to(root).with_suffix("")
        status = {k: status_by_exit_code.get(c, "not run") for k, c in codes.items()}
        counts = Counter("killed" if v in KILLED else v for v in status.values())
        alive = sorted(k for k, v in status.items() if v in ("survived", "no tests"))
        eq = [k for k in alive if k in listed]
        score = counts["killed"] / len(codes)
        print(
            f"{source}: {len(codes)} mutants, {counts['killed']} killed ({score:.1%}), "
            f"{len(alive)} alive of which {len(eq)} listed equivalent"
            + "".join(f", {n} {what}" for what, n in counts.items() if what not in ("killed",))
        )
        for k in alive:
            if k not in listed:
                print(f"    alive: {k} ({status[k]})")
                unlisted_verifier += str(source).startswith("aapcgen/verify/")
        total.update(counts)
        total["equivalent"] += len(eq)
    n = sum(v for k, v in total.items() if k not in ("equivalent", "not checked"))
    if n == 0:
        print("no results: run `mutmut run` first")
        return 1
    killable = n - total["equivalent"]
    print(
        f"mutation score of the {n} mutants tested: {total['killed']} killed "
        f"({total['killed'] / n:.1%}); {total['killed']}/{killable} of those not listed "
        f"equivalent ({total['killed'] / max(killable, 1):.1%})"
        + (f"; {total['not checked']} not tested yet" if total["not checked"] else "")
    )
    return 1 if unlisted_verifier else 0


if __name__ == "__main__":
    sys.exit(main())
