"""Plain-text tables shared by the command line and the reports (``agents.evaluate``, the
demo): a generic right-aligned table and the candidate table of ``hsched candidates``."""

from __future__ import annotations

from hsched_env.planner import CandidateTable


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``"1 episode"``, ``"3 episodes"``, ``"1,200 rounds"``: ``n`` and the word in the
    number it takes (``plural``: when it is not ``word + "s"``)."""
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """Right-aligned plain-text table (first column left-aligned)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def markdown_table(headers: list[str], rows: list[list[str]], text_cols=()) -> str:
    """A markdown table: columns named in ``text_cols`` left-aligned, the others right-aligned;
    ``|`` inside a cell escaped."""
    align = ["---" if h in text_cols else "---:" for h in headers]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|"]
    return "\n".join(lines + ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"
                              for row in rows])


def _gpus_text(gpus: dict[str, int]) -> str:
    return " + ".join(f"{n}×{t}" for t, n in gpus.items())


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


#: The mark after a candidate's samples/s: measured in a table (``*``) or the analytic figure
#: scaled by a table's one-GPU measurement (``~``, bootstrapped); analytic ones have none.
_SOURCE_MARK = {"measured": "*", "bootstrapped": "~"}


def candidates_text(table: CandidateTable, limit: int | None = None) -> str:
    """The human-readable candidate table printed by ``hsched candidates``."""
    recs = table.to_records()[:limit]
    token_model = bool(len(table)) and table.tokens_per_s_per_gpu.max() > 0
    # a GPU type on several pools (nodes of other sizes or networks): the pools are named,
    # else two rows of the same type on different pools read alike
    shared = {t for t in table.pool_types if table.pool_types.count(t) > 1}
    headers = ["#", "GPUs", "nodes", "layout", "dp", "tp", "pp", "mb", "ZeRO", "recomp",
               "step s", "samples/s"] + (["tok/s/GPU"] if token_model else []) + ["mem GB/GPU"]
    rows = []
    for i, r in enumerate(recs):
        layout = r["kind"]
        if r["dp_per_type"]:
            layout += " dp " + " + ".join(f"{v} {t}" for t, v in r["dp_per_type"].items())
        if r["pp_per_type"]:
            layout += " pp " + " + ".join(f"{v} {t}" for t, v in r["pp_per_type"].items())
        gpus = _gpus_text(r["gpus"])
        if shared & set(r["gpus"]):
            gpus += " (" + " + ".join(part["pool"] for part in r["layout"]) + ")"
        row = [str(i + 1), gpus, str(r["nodes"]), layout, str(r["dp"]),
               str(r["tp"]), str(r["pp"]), str(r["microbatches"]), str(r["zero"]),
               "yes" if r["recompute"] else "no", _num(r["step_time_s"]),
               _num(r["samples_per_s"]) + _SOURCE_MARK.get(r["source"], "")]
        if token_model:
            row.append(_num(r["tokens_per_s_per_gpu"]))
        row.append(" / ".join(f"{v:.1f}" + (f" {t}" if len(r["mem_gb_by_type"]) > 1 else "")
                              for t, v in r["mem_gb_by_type"].items()))
        rows.append(row)
    return format_table(headers, rows)
