"""Outputs of `aapcgen tune`: the tuned routine (templates/tuned.c.j2), decision.md and the plot.

The tuned routine is generated into a directory like `aapcgen generate` writes: the variants the
decision uses, plus aapc_<topo>_tuned.c; the registry (intercept) lists an extra entry "tuned",
the default, so ``-DAAPC_INTERCEPT`` / LD_PRELOAD make MPI_Alltoall run it and AAPC_VARIANT still
picks any other.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from aapcgen.alltoall.capacity import schedule_phases
from aapcgen.alltoall.tree import analyze
from aapcgen.alltoall.variants import DEFAULT_VARIANT, VariantSpec, split_label, variant_spec
from aapcgen.codegen.generate import empty_plan, generate
from aapcgen.codegen.render import (
    c_identifier,
    rank_tables,
    render,
    template_environment,
    topology_c_name,
)
from aapcgen.core.model import Topology
from aapcgen.tune.decide import Choice, Point, Range, is_native

TUNED = "tuned"


def spec_of(label: str) -> VariantSpec:
    name, block = split_label(label)
    return variant_spec(name, block)


def size_text(b: int | None) -> str:
    if b is None:
        return "inf"
    for unit, factor in (("M", 2**20), ("K", 1024)):
        if b >= factor and b % factor == 0:
            return f"{b // factor}{unit}"
    return str(b)


def range_text(r: Range) -> str:
    hi = "and above" if r.hi is None else f"to {r.hi - 1} B"
    return f"{r.lo} B {hi}: {r.candidate} (measured at {', '.join(map(size_text, r.measured))})"


def c_ranges(ranges: list[Range], topo_id: str) -> list[dict[str, str]]:
    """What templates/tuned.c.j2 prints for each range (all decisions made here)."""
    out = []
    for r in ranges:
        fn = (
            "native_alltoall"
            if is_native(r.candidate)
            else f"aapc_alltoall_{topo_id}_{c_identifier(r.candidate)}"
        )
        out.append(
            {
                "limit": "SIZE_MAX" if r.hi is None else f"{r.hi}u",
                "fn": fn,
                "candidate": r.candidate,
                "text": range_text(r),
            }
        )
    return out


def render_tuned(
    topo: Topology,
    ranges: list[Range],
    out_dir: Path,
    measured_on: str,
    extra: tuple[str, ...] = (),
) -> list[Path]:
    """Write the tuned routine's directory; return the files.

    generate() writes the variants the decision uses; codegen.render() then runs again with one
    more registry entry, "tuned" (the default), whose variant file is replaced by
    templates/tuned.c.j2: the header and intercept stay exactly what codegen renders. ``extra``
    variants are generated too (the validation timer compares the tuned routine with them)."""
    labels = sorted({r.candidate for r in ranges if not is_native(r.candidate)} | set(extra))
    # the registry lists at least one generated variant (AAPC_VARIANT can pick it)
    specs = [spec_of(label) for label in labels] or [variant_spec(DEFAULT_VARIANT)]
    gen = generate(topo, specs, out_dir)
    sched = schedule_phases(analyze(topo))  # as generate() scheduled it
    plain = rank_tables(sched, empty_plan(variant_spec("no-sync")))
    entry = replace(gen.variants[0], label=TUNED, ident=TUNED)
    files = render(topo, sched, plain, [*gen.variants, entry], TUNED, out_dir)
    topo_id = topology_c_name(topo.name)
    tuned = out_dir / f"aapc_{topo_id}_{TUNED}.c"
    tuned.write_text(
        template_environment()
        .get_template("tuned.c.j2")
        .render(
            topology=topo,
            topo_id=topo_id,
            ranges=c_ranges(ranges, topo_id),
            measured_on=measured_on,
        )
    )
    return sorted(set(files) | set(gen.files))


def throughput(n: int, size: int, seconds: float) -> float:
    """Aggregate MB/s (1e6 bytes) of one all-to-all of ``size`` bytes per block."""
    return n * (n - 1) * size / seconds / 1e6 if seconds > 0 else 0.0


def decision_markdown(
    title: str,
    env_lines: list[str],
    choices: list[Choice],
    ranges: list[Range],
    native_ranges: list[Range],
    by_key: dict[tuple[str, int], Point],
    n: int,
    peak: float,
    validation: list[dict[str, object]],
) -> str:
    lines = [f"# Tuning decision: {title}", ""]
    lines += [f"- {x}" for x in env_lines]
    lines += [
        "",
        "Rule: lowest median time per size; candidates within the noise guard (the best's relative",
        "spread, at most 5 %) tie, and the simplest of them wins (docs/tuning.md).",
        "",
        "| size | chosen | MB/s | % of peak | best (lowest median) | guard | tied |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in choices:
        tput = throughput(n, c.bytes, c.median)
        lines.append(
            f"| {size_text(c.bytes)} | {c.candidate} | {tput:.2f} | {100 * tput * 1e6 / peak:.1f} "
            f"| {c.best} | {100 * c.guard:.1f}% | {', '.join(c.tied)} |"
        )
    lines += ["", "Ranges of the tuned routine (bytes per block):", ""]
    lines += [f"- {range_text(r)}" for r in ranges]
    lines += ["", "Native tuning files (native algorithms only):", ""]
    lines += [f"- {range_text(r)}" for r in native_ranges]
    if validation:
        lines += [
            "",
            "Validation (one MPI job per point, per round: the tuned routine and the library default",
            "at every size, each size's best and chosen candidates; throughput ratios of medians):",
            "",
            "| size | tuned MB/s | best candidate | tuned / best | native-default MB/s | tuned / native |",
            "|---|---|---|---|---|---|",
        ]
        for v in validation:
            lines.append(
                f"| {size_text(int(v['bytes']))} | {float(v['tuned_MBps']):.2f} | {v['best']} "  # type: ignore[arg-type]
                f"| {float(v['tuned_vs_best']):.2f}x | {float(v['native_MBps']):.2f} "  # type: ignore[arg-type]
                f"| {float(v['tuned_vs_native']):.2f}x |"  # type: ignore[arg-type]
            )
    return "\n".join(lines) + "\n"


def plot_tune(
    pts: list[Point],
    choices: list[Choice],
    n: int,
    peak: float,
    title: str,
    path: Path,
    tuned: dict[int, float] | None = None,
) -> None:
    """Throughput vs size per candidate, the tuned envelope (the chosen candidates, or the measured
    tuned routine when validated) and the peak (seed 002 Figures 7-13)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 5.5))
    for cand in sorted({p.candidate for p in pts}):
        ps = sorted((p for p in pts if p.candidate == cand), key=lambda p: p.bytes)
        style = "--" if is_native(cand) else "-"
        ax.plot(
            [p.bytes for p in ps],
            [throughput(n, p.bytes, p.median) for p in ps],
            style,
            marker=".",
            linewidth=0.8,
            alpha=0.6,
            label=cand,
        )
    env = sorted(choices, key=lambda c: c.bytes)
    ax.plot(
        [c.bytes for c in env],
        [throughput(n, c.bytes, c.median) for c in env],
        color="black",
        linewidth=2.5,
        alpha=0.5,
        label="tuned envelope (chosen)",
    )
    if tuned:
        sizes = sorted(tuned)
        ax.plot(
            sizes,
            [throughput(n, s, tuned[s]) for s in sizes],
            "o-",
            color="red",
            linewidth=1.5,
            label="tuned routine (measured)",
        )
    ax.axhline(peak / 1e6, color="black", linewidth=1.2, linestyle=":", label="peak")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size per pair (bytes)")
    ax.set_ylabel("aggregate throughput (MB/s)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
