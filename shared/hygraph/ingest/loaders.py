"""Documents from files and folders: ``.txt``, ``.md``, ``.markdown`` and ``.jsonl``.

* A text or markdown file is one document. Its id is its path relative to the
  folder argument it was found under (POSIX separators, ``sub/notes.md``), or
  its file name when the file itself was an argument. The text is kept as is
  (markdown headings included); only a byte-order mark is dropped.
* Encodings: a byte-order mark says UTF-8, UTF-16 or UTF-32; without one, UTF-8 is
  tried, then 8-bit text is read as Windows-1252 (Latin-1 for the five bytes it leaves
  undefined), with a warning since that is a guess. UTF-8 text with a broken byte after
  valid non-ASCII characters stays UTF-8, the broken bytes becoming U+FFFD (warned). A
  file with NUL bytes and no byte-order mark, or whose 8-bit reading is mostly control
  characters, is binary.
* A ``.jsonl`` file holds one document per non-blank line: a JSON object with a
  string ``text`` and optional ``id`` (string or integer), ``title``; other keys
  become ``metadata``. Without an id, the id is ``"d" + content_hash(title, text)``.
* Folders are walked recursively in sorted order; hidden entries (names starting
  with ``.``) and files of other types are ignored.

Anything that cannot become a document (an empty, binary, unreadable or too
large file, a malformed jsonl line, a repeated id) is skipped: reported to
``on_skip``, logged once as a warning on the ``hygraph`` logger and listed in
:attr:`LoadResult.skipped`; the rest still loads.

Text that no encoder accepts (a lone UTF-16 surrogate, as a jsonl ``"\ud800"`` escape or
a program's string can hold) would fail the store and the embedder far from its
source; :func:`clean_document` replaces such characters with U+FFFD and warns with the
document's id, for files and for :class:`Document` objects alike.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import logging
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hygraph.errors import ConfigError, InputError
from hygraph.ingest.documents import Document, content_hash

logger = logging.getLogger("hygraph")

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
JSONL_SUFFIXES = frozenset({".jsonl"})
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | JSONL_SUFFIXES
DEFAULT_MAX_BYTES = 100_000_000

PathLike = str | os.PathLike[str]
SkipHandler = Callable[[str, str], None]


@dataclass
class LoadResult:
    """What :func:`load_documents` found: the documents and ``(source, reason)`` per skip."""

    documents: list[Document] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


class _Skip(Exception):
    """Internal: the current file cannot be loaded, for the reason given."""


def _supported() -> str:
    return ", ".join(sorted(SUPPORTED_SUFFIXES))


def _walk(root: Path, seen_dirs: set[tuple[int, int]], skip: SkipHandler) -> Iterator[Path]:
    """Supported, non-hidden files under ``root``, depth first in name order.

    Symlinked folders are followed, each real folder at most once (no cycles).
    """
    try:
        st = root.stat()
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            return
        seen_dirs.add(key)
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        skip(os.path.abspath(root), f"cannot read folder: {exc.strerror or exc}")
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            yield from _walk(path, seen_dirs, skip)
        elif Path(entry.name).suffix.lower() in SUPPORTED_SUFFIXES:
            yield path


def _read(path: Path, max_bytes: int, nul_ok: bool = False) -> bytes:
    """The file's bytes, or :class:`_Skip` if it is not a readable regular file within the limit.

    ``nul_ok``: NUL bytes do not make the file binary here (a jsonl file judges its
    lines one by one, so one stray NUL costs one line, not the file).
    """
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise _Skip("not a regular file")
        if st.st_size > max_bytes:
            raise _Skip(_too_large(st.st_size, max_bytes))
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except PermissionError:
        raise _Skip("unreadable file: permission denied") from None
    except OSError as exc:
        raise _Skip(f"unreadable file: {exc.strerror or exc}") from None
    if len(data) > max_bytes:  # grew since stat()
        raise _Skip(_too_large(len(data), max_bytes))
    if not data.strip():
        raise _Skip("empty file")
    if not nul_ok and b"\x00" in data and _bom(data) is None:
        raise _Skip("binary file (contains NUL bytes)")
    return data


def _mostly_nul_lines(data: bytes) -> bool:
    """Whether NUL bytes are in half or more of the non-blank lines (a binary file)."""
    lines = [raw for raw in data.split(b"\n") if raw.strip()]
    return sum(b"\x00" in raw for raw in lines) * 2 >= max(len(lines), 1)


_SKIP_KINDS = (
    ("empty file", "empty"),
    ("binary file", "binary"),
    ("unreadable file", "unreadable"),
    ("cannot read folder", "unreadable"),
    ("file is ", "too large"),
    ("unsupported file type", "unsupported type"),
    ("line ", "malformed jsonl line"),
    ("duplicate id", "duplicate id"),
    ("same file as one", "duplicate file"),
)


def _skip_kind(reason: str) -> str:
    """A short category of a skip reason, for the summary in the no-documents error."""
    for prefix, kind in _SKIP_KINDS:
        if reason.startswith(prefix):
            return kind
    return "other"


def _too_large(size: int, max_bytes: int) -> str:
    return (
        f"file is {size:,} bytes, over the limit of {max_bytes:,} "
        "(raise it with max_bytes=... or --max-bytes)"
    )


#: Byte-order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
#: Share of control characters (other than whitespace) above which 8-bit data is binary.
_MAX_CONTROL_SHARE = 0.05
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _bom(data: bytes) -> tuple[int, str] | None:
    """``(length, codec)`` of the byte-order mark ``data`` starts with, or None."""
    for mark, codec in _BOMS:
        if data.startswith(mark):
            return len(mark), codec
    return None


def _cp1252_or_latin1(error: UnicodeDecodeError) -> tuple[str, int]:
    """Decode a byte that Windows-1252 leaves undefined as Latin-1 (its C1 control)."""
    bad = error.object[error.start : error.end]
    return bytes(bad).decode("latin-1"), error.end


codecs.register_error("hygraph-latin1", _cp1252_or_latin1)


def _decode_text(data: bytes, source: str = "text") -> str:
    """The text of a file's bytes, by byte-order mark, UTF-8, or 8-bit Windows-1252.

    Raises :class:`_Skip` for binary data. A UTF-16/32 text with a broken surrogate is
    decoded with U+FFFD in its place, and a warning names ``source``.
    """
    bom = _bom(data)
    if bom is not None:
        length, codec = bom
        try:
            return data[length:].decode(codec)
        except UnicodeDecodeError as exc:
            logger.warning(
                "%s: invalid %s at byte %d; replaced what cannot be read with U+FFFD",
                source, codec, exc.start + length,
            )  # fmt: skip
            return data[length:].decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    if any(b >= 0x80 for b in data[:first_bad]):
        # Valid UTF-8 beyond ASCII came first: UTF-8 with a few broken bytes, not 8-bit text.
        logger.warning(
            "%s: invalid UTF-8 at byte %d; replaced what cannot be read with U+FFFD",
            source, first_bad,
        )  # fmt: skip
        return data.decode("utf-8", errors="replace")
    text = data.decode("cp1252", errors="hygraph-latin1")
    if len(_CONTROL.findall(text)) > _MAX_CONTROL_SHARE * len(text):
        raise _Skip(f"binary file (not text: not valid UTF-8 at byte {first_bad})")
    logger.warning("%s is not valid UTF-8 (byte %d); read it as Windows-1252", source, first_bad)
    return text


def _decode(data: bytes, source: str = "text") -> str:
    return _decode_text(data, source).removeprefix("\ufeff")


def clean_document(doc: Document) -> Document:
    """``doc`` with lone surrogates in its id, text, title, parts and metadata made U+FFFD.

    Such characters cannot be encoded (as UTF-8 for the store, or by an embedder), so
    one broken document would stop a whole build; replacing them keeps the rest of its
    text. A surrogate pair written as two characters is joined into the one it stands
    for. The document is returned unchanged (the same object) when it is clean.
    """
    strings = [doc.id, doc.text, doc.title or "", *(doc.parts or ())]
    strings += [v for v in doc.metadata.values() if isinstance(v, str)]
    if not any(_SURROGATE.search(s) for s in strings):
        return doc
    count = sum(len(_SURROGATE.findall(s)) for s in strings)
    logger.warning(
        "document %r holds %d invalid character(s) (lone surrogates); replaced with U+FFFD",
        doc.id, count,
    )  # fmt: skip
    return dataclasses.replace(
        doc,
        id=_fix_surrogates(doc.id),
        text=_fix_surrogates(doc.text),
        title=_fix_surrogates(doc.title) if doc.title is not None else None,
        parts=tuple(_fix_surrogates(p) for p in doc.parts) if doc.parts is not None else None,
        metadata={
            k: _fix_surrogates(v) if isinstance(v, str) else v for k, v in doc.metadata.items()
        },
    )


def _fix_surrogates(text: str) -> str:
    if not _SURROGATE.search(text):
        return text
    # Through UTF-16: a valid pair becomes its character, a lone half becomes U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _text_document(path: Path, doc_id: str, max_bytes: int) -> Document:
    text = _decode(_read(path, max_bytes), os.path.abspath(path))
    if not text.strip():  # e.g. only a BOM and whitespace
        raise _Skip("empty file")
    return Document(id=doc_id, text=text, title=None, source=os.path.abspath(path))


def _jsonl_record(line: str, line_no: int) -> tuple[str | None, str, str | None, dict[str, Any]]:
    """``(id, text, title, metadata)`` of one jsonl line, or :class:`_Skip`."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _Skip(f"line {line_no}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    except (RecursionError, ValueError) as exc:  # nested or sized past what can be read
        raise _Skip(f"line {line_no}: unreadable JSON ({type(exc).__name__})") from None
    if not isinstance(obj, dict):
        raise _Skip(f"line {line_no}: expected a JSON object, got {type(obj).__name__}")
    text = obj.pop("text", None)
    if not isinstance(text, str) or not text.strip():
        what = "missing" if text is None else "empty" if isinstance(text, str) else "not a string"
        raise _Skip(f"line {line_no}: 'text' is {what} (a non-empty string is required)")
    raw_id = obj.pop("id", None)
    if raw_id is None:
        doc_id = None
    elif isinstance(raw_id, str) and raw_id.strip():
        doc_id = raw_id
    elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
        doc_id = str(raw_id)
    else:
        raise _Skip(f"line {line_no}: 'id' must be a non-empty string or an integer")
    title = obj.pop("title", None)
    if title is not None and not isinstance(title, str):
        raise _Skip(f"line {line_no}: 'title' must be a string")
    return doc_id, text, title or None, obj


def _jsonl_lines(data: bytes, source: str) -> Iterator[tuple[int, str | None]]:
    """``(line number, text)`` of each line; text is None for a line that is not UTF-8.

    A file with a UTF-16/32 byte-order mark is decoded whole first.
    """
    bom = _bom(data)
    if bom is not None and bom[1] != "utf-8":
        text = _decode_text(data, source)
        yield from enumerate(text.split("\n"), start=1)
        return
    data = data.removeprefix(codecs.BOM_UTF8)
    # Split on "\n" only: JSON strings may hold raw U+2028 etc., which splitlines() would cut.
    for line_no, raw in enumerate(data.split(b"\n"), start=1):
        try:
            yield line_no, raw.decode("utf-8")
        except UnicodeDecodeError:
            yield line_no, None


def _jsonl_documents(path: Path, max_bytes: int, skip: SkipHandler) -> Iterator[Document]:
    data = _read(path, max_bytes, nul_ok=True)
    if _bom(data) is None and b"\x00" in data and _mostly_nul_lines(data):
        raise _Skip("binary file (contains NUL bytes)")
    source = os.path.abspath(path)
    for line_no, line in _jsonl_lines(data, source):
        if line is not None and not line.strip():
            continue
        try:
            if line is None:
                raise _Skip(f"line {line_no}: not valid UTF-8")
            if "\x00" in line:
                raise _Skip(f"line {line_no}: contains a NUL byte (binary data)")
            doc_id, text, title, metadata = _jsonl_record(line, line_no)
        except _Skip as exc:
            skip(f"{source}:{line_no}", str(exc))
            continue
        if doc_id is None:
            doc_id = "d" + content_hash(_fix_surrogates(title or ""), _fix_surrogates(text))
        yield clean_document(
            Document(
                id=doc_id, text=text, title=title, source=f"{source}:{line_no}", metadata=metadata
            )
        )


def iter_documents(
    paths: Iterable[PathLike] | PathLike,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    on_skip: SkipHandler | None = None,
) -> Iterator[Document]:
    """Yield the documents under ``paths`` (files or folders), lazily and in order.

    Each skip is logged as a warning on the ``hygraph`` logger and passed to
    ``on_skip(source, reason)``. Raises :class:`InputError` (at the first
    ``next()``) if a path does not exist; unlike :func:`load_documents` it does
    not raise when nothing loads.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    path_list = [Path(p) for p in paths]
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ConfigError(f"max_bytes must be a positive integer (got {max_bytes!r})")

    def skip(source: str, reason: str) -> None:
        logger.warning("skipped %s: %s", source, reason)
        if on_skip is not None:
            on_skip(source, reason)

    def generate() -> Iterator[Document]:
        for p in path_list:
            if not os.path.lexists(p):
                raise InputError(f"path does not exist: {p}")
        seen_ids: dict[str, str] = {}  # id -> source of the document that has it
        seen_files: set[str] = set()
        seen_dirs: set[tuple[int, int]] = set()
        for arg in path_list:
            if arg.is_dir():
                files = ((f, f.relative_to(arg).as_posix()) for f in _walk(arg, seen_dirs, skip))
            else:
                files = iter([(arg, arg.name)])
            for file, rel_id in files:
                source = os.path.abspath(file)
                real = os.path.realpath(file)
                if real in seen_files:
                    skip(source, "same file as one already loaded (given twice or linked)")
                    continue
                seen_files.add(real)
                suffix = file.suffix.lower()
                try:
                    if suffix in TEXT_SUFFIXES:
                        docs: Iterable[Document] = [_text_document(file, rel_id, max_bytes)]
                    elif suffix in JSONL_SUFFIXES:
                        docs = _jsonl_documents(file, max_bytes, skip)
                    else:
                        raise _Skip(
                            f"unsupported file type {suffix or '(no extension)'!r} "
                            f"(supported: {_supported()})"
                        )
                    for doc in docs:
                        doc_source = doc.source or source
                        first = seen_ids.get(doc.id)
                        if first is not None:
                            skip(doc_source, f"duplicate id {doc.id!r} (first in {first})")
                            continue
                        seen_ids[doc.id] = doc_source
                        yield doc
                except _Skip as exc:
                    skip(source, str(exc))

    return generate()


def load_documents(
    paths: Iterable[PathLike] | PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> LoadResult:
    """Load every document under ``paths``; see the module docstring for the rules.

    Raises :class:`InputError` if a path does not exist or if nothing at all loads.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    path_list = list(paths)
    if not path_list:
        raise InputError("no input paths given")
    result = LoadResult()
    for doc in iter_documents(
        path_list, max_bytes=max_bytes, on_skip=lambda s, r: result.skipped.append((s, r))
    ):
        result.documents.append(doc)
    if not result.documents:
        where = ", ".join(str(p) for p in path_list)
        if result.skipped:
            kinds = Counter(_skip_kind(reason) for _, reason in result.skipped)
            counts = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())
            detail = f"{len(result.skipped)} skipped: {counts}; see the warnings"
        else:
            detail = f"no {_supported()} files"
        raise InputError(f"no documents found in: {where} ({detail})")
    return result
