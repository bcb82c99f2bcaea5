"""Plots of an evaluation (``hsched evaluate``), matplotlib with the Agg backend.

* ``plot_decision_vs_jct``: per scenario, one point per policy — mean decision time per round
  (log x) against the seed-averaged average JCT over the common jobs (those every policy of
  the seed finished, as in the table's ``JCT ×LP``); the trade-off a ranker tries to win.
* ``plot_jct_cdf``: per scenario, the distribution of job completion times of each policy
  (jobs of every seed pooled).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np


#: Half the width of a plotted point's marker, in points (``scatter``'s ``s`` of 50–60 is the
#: marker's area in points², about 7–8 points across).
MARKER_RADIUS_PT = 4.0


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _axes(plt, n: int, width: float = 5.6, height: float = 4.2):
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axes.flat)


#: Characters a panel title's line may hold (a 5.6-inch panel at font size 9 holds about 60
#: beside its neighbours' titles).
TITLE_WIDTH = 52


def panel_title(scenario: dict) -> str:
    """A panel's title, ``NAME (first H h): WORKLOAD`` (the window when the scenario has a
    ``max_time_s``: the table's header says it, a plot did not), broken after commas of the
    workload spec into lines of at most ``TITLE_WIDTH`` characters where it can be (a long
    spec ran into the next panel's title or past the figure's edge)."""
    limit = scenario.get("max_time_s")
    name = f"{scenario['name']} (first {limit / 3600:g} h)" if limit else scenario["name"]
    text = f"{name}: {scenario['workload']}"
    if len(text) <= TITLE_WIDTH:
        return text
    lines, line = [], f"{name}:"
    for part in str(scenario['workload']).split(","):
        piece = part if line.endswith(",") else " " + part
        if len(line) + len(piece) + 1 > TITLE_WIDTH:      # (+1: the comma after it)
            lines.append(line)
            line = part
        else:
            line += piece
        line += ","
    lines.append(line.rstrip(","))
    return "\n".join(lines)


def _plain_log_ticks(axis) -> None:
    """Label a log axis's ticks as plain numbers (``105`` and ``0.1``, not ``1.05×10²`` or
    ``1e-01``; the former's minor labels overlap within one decade); minor ticks are labelled
    only where the axis spans less than a decade (matplotlib's ``LogFormatter`` thresholds),
    so wide axes stay clean."""
    from matplotlib.ticker import LogFormatter

    class PlainLogFormatter(LogFormatter):
        def __call__(self, x, pos=None):            # LogFormatter decides which ticks get one
            return f"{x:g}" if super().__call__(x, pos) else ""

    axis.set_major_formatter(PlainLogFormatter())
    axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False))


def _label_side(ax, x: float) -> tuple[int, str]:
    """Where a point's label goes: right of the point, or left of it in the axis's last
    quarter (measured on the axis's own scale, log or linear), so that no label runs past the
    axes' edge. Call after every point is drawn (the limits are then final)."""
    f = math.log10 if ax.get_xscale() == "log" else (lambda v: v)
    lo, hi = (f(v) for v in ax.get_xlim())
    right_part = (f(x) - lo) / (hi - lo) if hi > lo else 0.0
    return (-5, "right") if right_part > 0.75 else (5, "left")


def _colors(plt, labels):
    return {name: plt.cm.tab10(i % 10) for i, name in enumerate(labels)}


def quality_axis(rows: list[dict]) -> tuple[str, str]:
    """The row key and y-axis label of ``plot_decision_vs_jct`` for one scenario's rows: the
    avg JCT over the common jobs when every row with runs has it, else the time in system
    of every job."""
    ran = [r for r in rows if r["seeds"]]
    if ran and all(math.isfinite(r.get("avg_jct_common_s", math.nan)) for r in ran):
        return ("avg_jct_common_s", f"average JCT (h) of the jobs every policy\nfinished "
                                    f"({ran[0]['common_jobs']} over the seeds)")
    return "avg_time_in_system_s", "average time in system, all jobs (h)"


def decision_points(row: dict) -> list[float]:
    """Where a row sits on the plot's decision-time axis (ms): its mean decision time, and for
    a ranker that ranked some rounds also its decision time with the observations it scored
    (``decision_with_observation_mean_s``), which a deployment pays too."""
    xs = [max(row["decision_time_mean_s"] * 1e3, 1e-3)]
    if row.get("observation_time_mean_s"):
        xs.append(max(row["decision_with_observation_mean_s"] * 1e3, 1e-3))
    return xs


def draw_decision_vs_jct(ax, rows: list[dict], colors: dict) -> list[tuple]:
    """One scenario's panel of ``plot_decision_vs_jct`` without its labels: a point per
    policy (a ranker's star, and a hollow one with its observations), the x-axis (log, or
    linear from 0 when every point lies within a factor of 3) and its titles; a y-axis at
    least 5% of its middle value tall, so that JCTs 0.1% apart do not look far apart. Returns the labels to draw, ``(text, x, y, above, fontsize)``, for
    ``place_labels`` once the figure's layout is final."""
    key, ylabel = quality_axis(rows)
    labels = []
    for i, r in enumerate(rows):
        y = r[key] / 3600 if math.isfinite(r[key]) else math.nan
        if not math.isfinite(y):
            continue
        x, *with_obs = decision_points(r)
        ax.scatter([x], [y], s=50, color=colors[r["policy"]],
                   marker="*" if r["kind"] == "ranker" else "o", zorder=3)
        labels.append((r["policy"], x, y, i % 2 == 0, 8))
        for xo in with_obs:
            ax.plot([x, xo], [y, y], color=colors[r["policy"]], linewidth=0.8, zorder=2)
            ax.scatter([xo], [y], s=60, marker="*", facecolors="none",
                       edgecolors=colors[r["policy"]], zorder=3)
            labels.append(("+ observations", xo, y, i % 2 != 0, 7))
    xs = [x for _, x, _, _, _ in labels]
    if xs and max(xs) < 3 * min(xs):
        ax.set_xlim(0.0, max(xs) * 1.15)  # within a factor of 3: a linear axis from 0 reads
    else:                                 # as it is (a log one would show one or two ticks)
        ax.set_xscale("log")
    ax.margins(x=0.08, y=0.12)      # room for the labels of the outermost points
    lo, hi = ax.get_ylim()
    mid = (lo + hi) / 2
    if labels and hi - lo < 0.05 * abs(mid):        # JCTs within a few per cent of each
        ax.set_ylim(mid - 0.025 * abs(mid), mid + 0.025 * abs(mid))   # other: no magnified gap
    if ax.get_xscale() == "log":
        _plain_log_ticks(ax.xaxis)
    ax.set_xlabel("decision time per round, mean (ms)")
    ax.set_ylabel(ylabel)
    return labels


def place_labels(ax, labels: list[tuple]) -> None:
    """Draw each point's label beside it, inside the axes and clear of the labels drawn
    before it where one of twelve nearby spots allows, nearest first: just above or below the
    point (by ``above``) on its preferred side (right of it, or left of it in the axes' last
    quarter, ``_label_side``), then on the other side, then twice further up or down the same
    way (the third height since session 51: a crowded `large-family` panel had none clear).
    A spot is clear when it covers neither a label drawn before it nor another point's
    marker (a label beside a neighbour's marker reads as the neighbour's); where no spot is,
    the first one clear of the labels alone, else the first spot. A label placed further
    than the first two heights gets a leader line to its point. Call when the figure's
    layout is final (after ``tight_layout``): the spots are tested in display
    coordinates."""
    from matplotlib.transforms import Bbox
    renderer = ax.figure.canvas.get_renderer()
    box = ax.get_window_extent(renderer)
    r = MARKER_RADIUS_PT * ax.figure.dpi / 72.0          # a marker's half-width, in pixels
    anchors = [tuple(ax.transData.transform((x, y))) for _, x, y, _, _ in labels]
    markers = [Bbox.from_extents(px - r, py - r, px + r, py + r) for px, py in anchors]
    placed = []
    for i, (text, x, y, above, size) in enumerate(labels):
        # every marker but those drawn where this label's point is (its own)
        others = [m for m, a in zip(markers, anchors) if math.dist(a, anchors[i]) > r]
        dx, ha = _label_side(ax, x)
        heights = (4, -10, 14, -20, 24, -30) if above else (-10, 4, -20, 14, -30, 24)
        other = "right" if ha == "left" else "left"
        spots = [spot for dy in heights for spot in ((dx, ha, dy), (-dx, other, dy))]
        extents = []                                 # each spot's box, inside the axes or None
        for ox, align, dy in spots:
            label = ax.annotate(text, (x, y), textcoords="offset points", xytext=(ox, dy),
                                ha=align, fontsize=size)
            e = label.get_window_extent(renderer)
            label.remove()
            inside = (box.x0 <= e.x0 and e.x1 <= box.x1 and box.y0 <= e.y0 and e.y1 <= box.y1)
            extents.append(e if inside else None)
        clear = [k for k, e in enumerate(extents)
                 if e is not None and not any(e.overlaps(o) for o in placed)]
        best = next((k for k in clear if not any(extents[k].overlaps(m) for m in others)),
                    clear[0] if clear else 0)
        ox, align, dy = spots[best]
        label = ax.annotate(text, (x, y), textcoords="offset points", xytext=(ox, dy),
                            ha=align, fontsize=size)
        placed.append(label.get_window_extent(renderer))
        if abs(dy) > 10:
            # a label moved past the first two heights gets a thin leader line to its point
            # (without one it sat nearer a neighbour's marker and read as the neighbour's);
            # an annotation of its own, so that the label's box stays the text's
            ax.annotate("", (x, y), textcoords="offset points", xytext=(ox, dy + 3),
                        arrowprops=dict(arrowstyle="-", color="0.55", lw=0.6, shrinkA=0,
                                        shrinkB=4))


def plot_decision_vs_jct(report, path: Path) -> Path:
    """Decision time (ms, log scale) against average JCT (h) over the common jobs, one point
    per policy. Policies that finish different jobs (a run cut off at a time window) are
    compared on the jobs all of them finished; rows without that figure (every run of a
    seed failed) fall back to the time in system of every job. A ranker gets a second,
    hollow star at its decision time with its observations (``decision_points``)."""
    plt = _pyplot()
    fig, axes = _axes(plt, len(report.scenarios))
    colors = _colors(plt, report.policies)
    panels = []
    for ax, sc in zip(axes, report.scenarios):
        panels.append((ax, draw_decision_vs_jct(
            ax, [r for r in report.rows if r["scenario"] == sc["name"]], colors)))
        ax.set_title(panel_title(sc), fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"Suite {report.suite.name}: decision cost against schedule quality "
                 f"(seeds {', '.join(map(str, report.seeds))})", fontsize=10)
    fig.tight_layout()
    for ax, labels in panels:       # the layout is final: labels placed in display space
        place_labels(ax, labels)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _arrived_jobs(run, limit: float | None) -> int:
    """The jobs of ``run`` that arrived within the window ending at ``limit`` (a job arriving
    after it was never the policy's to finish); every job of the workload when the run file
    holds no per-job records."""
    if not run.records:
        return int(run.metrics.get("jobs_total") or 0)
    return sum(1 for rec in run.records if limit is None or rec.arrival_s < limit)


def plot_jct_cdf(report, path: Path) -> Path:
    """JCT distribution per policy (all seeds' completed jobs pooled), log x. Each curve is a
    fraction of all the jobs of its runs that arrived (within the scenario's window), so it
    levels off at the share its policy finished: divided by its own finished jobs, every
    curve reached 1, and in a time window a policy that finished fewer jobs looked no
    worse."""
    plt = _pyplot()
    fig, axes = _axes(plt, len(report.scenarios))
    colors = _colors(plt, report.policies)
    for ax, sc in zip(axes, report.scenarios):
        unfinished = False
        for label in report.policies:
            runs = [r for r in report.runs if r.scenario == sc["name"] and r.label == label]
            jct = np.sort(np.concatenate([r.jct_s for r in runs]) / 3600) if runs else []
            if len(jct):
                limit = sc.get("max_time_s")
                total = max(sum(_arrived_jobs(r, limit) for r in runs), len(jct))
                unfinished |= total > len(jct)
                ranker = any(r.kind == "ranker" for r in runs)
                ax.step(jct, np.arange(1, len(jct) + 1) / total, where="post",
                        color=colors[label], linestyle="--" if ranker else "-",
                        label=f"{label} ({len(jct):,} of {total:,} jobs done, their mean "
                              f"{np.mean(jct):.2f} h)")
        ax.set_xscale("log")
        ax.set_xlabel("job completion time (h)")
        ax.set_ylabel("fraction of all jobs completed")
        ax.set_ylim(0, 1.02)
        ax.set_title(panel_title(sc), fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            # upper left: a CDF's curves rise from the lower left to the upper right, and
            # matplotlib's "best" put the legend over the slow policies' tails
            ax.legend(fontsize=7, loc="upper left")
            if unfinished:
                ax.text(0.99, 0.02, "a curve below 1: jobs its policy did not finish",
                        transform=ax.transAxes, ha="right", va="bottom", fontsize=7,
                        color="0.35")
        else:                                 # (a window in which no job finished)
            ax.text(0.5, 0.5, "no job completed", transform=ax.transAxes, ha="center",
                    va="center", fontsize=9, color="0.4")
    fig.suptitle(f"Suite {report.suite.name}: JCT distribution", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
