"""The benchmark's Markdown report and PNG plots (matplotlib, loaded only here)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:.1f}"


def _cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell (a ``|`` would split the cell)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _failed(stats: dict[str, Any]) -> bool:
    return stats.get("status") == "failed"


def _question_count(main: dict[str, Any]) -> int:
    """How many questions the run asked (from any method that finished)."""
    return max((len(s.get("rows", [])) for s in main["methods"].values()), default=0)


def write_plots(result: dict[str, Any], folder: Path, stem: str) -> list[Path]:
    """recall@k by method; build time and query latency against corpus size (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths: list[Path] = []
    methods = result["main"]["methods"]
    ks = result["config"]["ks"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, stats in methods.items():
        if "recall" in stats:
            ax.plot(ks, [stats["recall"][str(k)] for k in ks], marker="o", label=name)
    ax.set_xlabel("k (passages)")
    ax.set_ylabel("passage recall@k (%)")
    ax.set_title(f"Recall@k on {result['main']['dataset']}")
    ax.set_xticks(ks)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    path = folder / f"{stem}-recall.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    paths.append(path)
    scale = result.get("scaling")
    if scale:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for name, stats in scale["methods"].items():
            axes[0].plot(scale["chunks"], stats["build_seconds"], marker="o", label=name)
            axes[1].plot(scale["chunks"], stats["latency_p50_ms"], marker="o", label=name)
        for ax, title, unit in (
            (axes[0], "Build time", "seconds"),
            (axes[1], "Query latency p50", "ms"),
        ):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("chunks")
            ax.set_ylabel(unit)
            ax.set_title(title)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=8)
        path = folder / f"{stem}-scaling.png"
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    return paths


def _versus_header(main: dict[str, Any]) -> str:
    """The wins/ties/losses column's title, e.g. ``W/T/L vs vanilla @5``."""
    for s in main["methods"].values():
        if s.get("vs_baseline"):
            return f"W/T/L vs {s['vs_baseline']['baseline']} @{s['vs_baseline']['k']}"
    return "W/T/L"


def _stage_table(title: str, stages: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown lines of a cost table, one row per stage (none when there are no stages)."""
    if not stages:
        return []
    lines = [
        "",
        title,
        "",
        "| stage | seconds | CPU seconds | LLM calls | prompt tokens | completion tokens "
        "| embeddings |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for stage, u in stages.items():
        cpu = f"{u['cpu_seconds']:.2f}" if "cpu_seconds" in u else "–"  # older builds lack it
        lines.append(
            f"| {stage} | {u.get('seconds', 0):.2f} | {cpu} | {u.get('llm_calls', 0)} | "
            f"{u.get('prompt_tokens', 0)} | {u.get('completion_tokens', 0)} | "
            f"{u.get('embeddings', 0)} |"
        )
    return lines


def _depth_table(main: dict[str, Any], ks: list[int]) -> list[str]:
    """How deep each method was asked so that recall@k reads max(k) distinct documents."""
    rows = [(n, s["depth"]) for n, s in main["methods"].items() if s.get("depth")]
    if not rows:
        return []
    want = max(ks)
    lines = [
        "",
        f"Ranking depth: recall@k reads the first k distinct documents of each method's "
        f"ranking. A question whose first ask (top_k = {want}) ranked fewer than {want} "
        f"documents was asked again, untimed, with top_k doubled until it ranked {want}, "
        f"top_k reached {main.get('max_depth') or 'the cap'} or the method returned no "
        "more chunks; latency and context figures are the first ask's.",
        "",
        "| method | top_k p50 | top_k max | documents ranked (mean) | asked again "
        f"| short of {want} |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, d in rows:
        lines.append(
            f"| {_cell(name)} | {_fmt(d['top_k_p50'], 0)} | {d['top_k_max']} | "
            f"{_fmt(d['documents_mean'])} | {d.get('asked_again', '–')} | {d['short']} |"
        )
    return lines


def _evidence_table(main: dict[str, Any], ks: list[int]) -> list[str]:
    """E@k: the share of a question's evidence strings inside its first k chunks."""
    rows = [(n, s) for n, s in main["methods"].items() if s.get("evidence_recall")]
    if not rows:
        return []
    n = max(s.get("evidence_questions", 0) for _, s in rows)
    lines = [
        "",
        f"Evidence recall at chunk level ({n} questions with evidence): E@k is the share "
        "of a question's evidence strings contained in one of its first k chunks (the "
        "first ask's ranking; case and whitespace ignored), as MultiHop-RAG measures.",
        "",
        "| method | " + " | ".join(f"E@{k}" for k in ks) + " |",
        "|---|" + "---:|" * len(ks),
    ]
    for name, s in rows:
        cells = " | ".join(_fmt(s["evidence_recall"].get(str(k))) for k in ks)
        lines.append(f"| {_cell(name)} | {cells} |")
    return lines


def _type_table(main: dict[str, Any], ks: list[int]) -> list[str]:
    """Recall at the middle k by question type (for data whose questions carry a type)."""
    types = sorted({t for s in main["methods"].values() for t in s.get("recall_by_type", {})})
    if not types:
        return []
    k_mid = str(ks[len(ks) // 2])
    sizes: dict[str, Any] = {}
    for s in main["methods"].values():
        for t, by in s.get("recall_by_type", {}).items():
            sizes.setdefault(t, by.get("n"))
    lines = [
        "",
        f"Recall@{k_mid} by question type:",
        "",
        "| method | " + " | ".join(f"{t} (n={sizes[t]})" for t in types) + " |",
        "|---|" + "---:|" * len(types),
    ]
    for name, s in main["methods"].items():
        if _failed(s):
            continue
        by = s.get("recall_by_type", {})
        cells = " | ".join(_fmt(by.get(t, {}).get(k_mid)) for t in types)
        lines.append(f"| {_cell(name)} | {cells} |")
    return lines


def render_markdown(result: dict[str, Any], plots: list[Path]) -> str:
    main = result["main"]
    cfg = result["config"]
    ks = cfg["ks"]
    machine = result["machine"]
    base = main["base_build"]
    first = base["first_build"]
    lines = [
        f"# hygraph bench: {main['dataset']}",
        "",
        f"- command: `{result.get('command') or 'hygraph bench ...'}`",
        f"- date: {result['date']}; total wall time {result['seconds']} s",
        f"- machine: {machine['cores']} cores, {machine['memory_gib']} GiB, {machine['cpu']}, "
        f"Python {machine['python']}, hygraph {machine['hygraph']}",
        f"- data: {main['documents']} documents → {main['chunks']} chunks "
        f"(chunk size {cfg['chunk_size']}, overlap {cfg['chunk_overlap']}, "
        f"by {cfg.get('chunk_mode', 'tokens')}), "
        f"{_question_count(main)} questions; "
        f"extractor `{cfg['extractor']}`; context budget {cfg['budget']} tokens"
        + (f"; questions {cfg['questions']}" if cfg.get("questions", "all") != "all" else ""),
        f"- latency: retrieval only, no LLM; {cfg.get('timing', 'one ask per question')}; "
        f"{cfg['query_cache']}",
        f"- shared index build (chunk, extract, embed, vanilla + bm25): "
        f"{_fmt(first.get('seconds'))} s, peak "
        + (
            "not measured (index built before peak tracking), "
            if base.get("peak_rss_measured_on_reuse")
            else f"{base['peak_rss_mb']} MB, "
        )
        + f"{_mb(base['index_bytes'])} MB on disk"
        + (
            " (reused from an earlier run; cost of the build that made it)"
            if base["reused"]
            else ""
        ),
        "",
        "| method | "
        + " | ".join(f"R@{k}" for k in ks)
        + f" | {_versus_header(main)} | answer in context | context tokens | p50 ms | p95 ms "
        "| own build s | peak MB |",
        "|---|" + "---:|" * (len(ks) + 7),
    ]
    for name, s in main["methods"].items():
        label = _cell(f"{name} (peer)" if s.get("peer") else name)
        if _failed(s):
            error = _cell(s.get("error", ""))
            lines.append(f"| {label} | failed: {error} |" + " – |" * (len(ks) + 6))
            continue
        recall = " | ".join(_fmt(s.get("recall", {}).get(str(k))) for k in ks)
        versus = s.get("vs_baseline")
        wtl = f"{versus['wins']}/{versus['ties']}/{versus['losses']}" if versus else "-"
        lines.append(
            f"| {label} | {recall} | {wtl} | {_fmt(s.get('answer_in_context'))} | "
            f"{_fmt(s['context_tokens_mean'], 0)} | {_fmt(s['latency_ms']['p50'])} | "
            f"{_fmt(s['latency_ms']['p95'])} | {_fmt(s['build'].get('seconds'), 2)} | "
            f"{s['peak_rss_mb']:.0f} |"
        )
    lines += _turns_table(main)
    lines += _depth_table(main, ks)
    lines += _evidence_table(main, ks)
    lines += _type_table(main, ks)
    lines += _stage_table(
        "Shared build cost by stage (the build that made the index):",
        first.get("usage", {}).get("stages", {}),
    )
    lines += _stage_table(
        "Build cost by layer (each layer's stages as the build that made them measured "
        "them; LLM calls are 0 where no LLM was configured):",
        main.get("layer_builds", {}),
    )
    scale = result.get("scaling")
    if scale:
        lines += [
            "",
            "## Scaling",
            "",
            "Build time (shared index + the method's own build, cold caches), peak memory "
            "and query latency p50 at each corpus size (the method's own process; and, "
            'after "t", the pass taking turns, where measured); the exponent b fits '
            "value ∝ chunks^b.",
            "",
            "| method | "
            + " | ".join(
                f"{label} ({n} chunks)"
                for label, n in zip(scale["labels"], scale["chunks"], strict=True)
            )
            + " | b(build) | b(p50) | b(p50, turns) | b(memory) |",
            "|---|" + "---|" * (len(scale["chunks"]) + 4),
        ]
        for name, s in scale["methods"].items():
            turns = s.get("turns_p50_ms") or [None] * len(s["latency_p50_ms"])
            cells = [
                f"{b:.1f} s / {m:.0f} MB / {p:.1f} ms" + (f" (t {t:.1f} ms)" if t else "")
                for b, m, p, t in zip(
                    s["build_seconds"], s["peak_rss_mb"], s["latency_p50_ms"], turns, strict=True
                )
            ]
            e = s["exponent"]
            lines.append(
                f"| {_cell(name)} | " + " | ".join(cells) + f" | {_fmt(e['build_seconds'], 2)}"
                f" | {_fmt(e['latency_p50_ms'], 2)} | {_fmt(e.get('turns_p50_ms'), 2)}"
                f" | {_fmt(e['peak_rss_mb'], 2)} |"
            )
    for path in plots:
        lines += ["", f"![{path.stem}]({path.name})"]
    return "\n".join(lines) + "\n"


def _turns_table(main: dict[str, Any]) -> list[str]:
    """The latency pass with the methods taking turns in one process (none: nothing)."""
    turns = main.get("turns")
    if not turns:
        return []
    if _failed(turns):
        return [
            "",
            f"Latency with the methods taking turns: failed: {_cell(turns.get('error', ''))}",
        ]
    timed = turns["methods"]
    first = next(iter(timed.values()))["p50"]
    lines = [
        "",
        "Latency with the methods taking turns: one process, each question asked of every "
        f"method in turn, {turns['rounds']} round(s) after a warm-up (drift between the "
        "methods' own processes above does not move these ratios):",
        "",
        f"| method | p50 ms | p95 ms | p50 / {next(iter(timed))}'s |",
        "|---|---:|---:|---:|",
    ]
    for name, t in timed.items():
        ratio = t["p50"] / first if first else float("nan")
        lines.append(f"| {_cell(name)} | {_fmt(t['p50'])} | {_fmt(t['p95'])} | {ratio:.2f}× |")
    return lines


def write_report(result: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        plots = write_plots(result, path.parent, path.stem)
    except ImportError:
        plots = []  # matplotlib is in the "bench" extra; the tables still get written
    path.write_text(render_markdown(result, plots), encoding="utf-8")
    return path
