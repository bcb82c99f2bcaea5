"""Text and picture views of an environment's cluster (``render_mode="ansi"`` / ``"rgb_array"``)."""

from __future__ import annotations

import math

import numpy as np

CELL = 10          # pixels per GPU cell
GAP = 2


def _holders(env) -> list[list[int]]:
    """Per node, the job id holding each GPU (-1 free): this round's placements while a
    select-mode round is open, else last round's (rank mode never places inside a round)
    but for the jobs that finished in it, whose GPUs are free now (the episode's last
    picture showed its last job on every GPU beside "all jobs done")."""
    run = env.simulator.run_view()
    nodes = [[-1] * int(g) for g in env.cluster.node_gpus]
    placements = run.placements
    this_round = placements or (run.in_round and env.places_within_round)
    allocs = ([(j, a) for j, (_, a) in placements.items()] if this_round
              else [(j, a) for j, a in enumerate(run.allocations) if a is not None])
    finished = run.finish_s
    allocs = [(j, a) for j, a in allocs if not math.isfinite(finished[j])]
    for j, alloc in allocs:
        for v, k in alloc:
            row = nodes[v]
            for _ in range(k):
                row[row.index(-1)] = int(j)
    return nodes


def text(env) -> str:
    """Queue and nodes as text."""
    sim = env.simulator
    run = sim.run_view()
    lines = [f"t={run.time_s / 3600:.2f} h  round {run.rounds}  "
             f"{run.jobs_done_or_unrunnable}/{len(sim.jobs)} jobs done"]
    sl = env.slots
    if sl is not None:
        v = sl.view
        lines.append(f"queue ({v.num_active} active):")
        for k, j in enumerate(v.job_ids[:20]):
            j = int(j)
            state = "placed" if j in run.placements else ("ran" if v.current[k] >= 0 else "wait")
            lines.append(f"  job {j:4d} {v.models[k]:<22s} {state:<6s} "
                         f"remaining {v.remaining_samples[k] / v.work_samples[k]:5.1%}")
        if v.num_active > 20:
            lines.append(f"  ... {v.num_active - 20} more")
    lines.append("nodes:")
    holders = _holders(env)
    for p, pool in enumerate(env.cluster.pools):
        a, b = env.cluster.pool_first_node[p], env.cluster.pool_first_node[p + 1]
        cells = [" ".join("." if h < 0 else str(h % 100).rjust(2) for h in holders[v])
                 for v in range(a, b)]
        lines.append(f"  {pool.gpu_type:<10s} " + " | ".join(cells))
    return "\n".join(lines) + "\n"


def _color(job: int) -> np.ndarray:
    rng = np.random.default_rng(job + 1)
    return (60 + rng.integers(0, 196, 3)).astype(np.uint8)


#: The picture is at least this many pixels wide (cells are scaled up by a whole factor).
MIN_WIDTH = 640


def _layout(n_nodes: int, block_w: int, row_h: int) -> int:
    """Columns of node rows aiming at a 3:2 landscape picture (a cluster with few nodes gets
    one column, however tall: sia-64's 11 nodes make 672 × 804 px)."""
    return max(1, min(n_nodes, round(math.sqrt(1.5 * n_nodes * row_h / block_w))))


def picture(env) -> np.ndarray:
    """(H, W, 3) uint8, W ≥ ``MIN_WIDTH``: one row of cells per node (in columns of nodes on
    large clusters), a GPU type's colour band on the left; grey = free, a colour per job."""
    holders = _holders(env)
    width = max(len(h) for h in holders)
    row_h = CELL + GAP
    block_w = (width + 1) * (CELL + GAP) + 2 * GAP      # one node row, with a margin
    cols = _layout(len(holders), block_w, row_h)
    rows = math.ceil(len(holders) / cols)
    H = rows * row_h + GAP
    W = cols * block_w
    img = np.full((H, W, 3), 255, dtype=np.uint8)
    palette = np.array([[31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40],
                        [148, 103, 189], [140, 86, 75], [227, 119, 194], [127, 127, 127]],
                       dtype=np.uint8)
    for v, row in enumerate(holders):
        c, r = divmod(v, rows)
        y = GAP + r * row_h
        x0 = c * block_w + GAP
        t = int(env.cluster.node_type[v])
        img[y:y + CELL, x0:x0 + CELL] = palette[t % len(palette)]
        for g, job in enumerate(row):
            x = x0 + (g + 1) * (CELL + GAP)
            img[y:y + CELL, x:x + CELL] = (200 if job < 0 else _color(job))
    scale = max(1, math.ceil(MIN_WIDTH / W))
    if scale > 1:
        img = np.repeat(np.repeat(img, scale, axis=0), scale, axis=1)
    return img
