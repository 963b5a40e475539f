"""Find PDFs and open them by path, turning MuPDF's failures into messages that name the file."""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import unquote, urlsplit

from pipeline.names import one_line, safe_text

if TYPE_CHECKING:
    import pymupdf


class PdfError(Exception):
    """A PDF that cannot be processed at all; the message names the file and the reason."""


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_GLOB = re.compile(r"[*?\[]")


def is_url(item: str | Path) -> bool:
    """Whether an input names a remote file or folder (``s3://``, ``hf://``, ``https://``…), not a local path."""
    return isinstance(item, str) and bool(_URL.match(item))


def remote_name(url: str) -> str:
    """A URL's file name as people know it (``https://host/a%20b.pdf`` → ``a b.pdf``)."""
    return PurePosixPath(unquote(urlsplit(url).path)).name or "remote.pdf"


def find_pdfs(inputs: Iterable[str | Path]) -> list[Path | str]:
    """PDF files among ``inputs``: files as given, folders searched recursively, sorted, no repeats.

    An input that is a URL fsspec reaches (``s3://bucket/scans/``, ``hf://datasets/org/archive``,
    ``https://host/issue.pdf``, globs too) gives URLs; local inputs give paths. Raises ``FileNotFoundError``
    for an input that does not exist or cannot be reached, so a typo is not a silent no-op.
    """
    found: list[Path | str] = []
    for item in inputs:
        if is_url(item):
            found.extend(_find_remote(str(item)))
            continue
        item = Path(item)
        if item.is_dir():
            found.extend(sorted(p for p in item.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file()))
        elif item.is_file():
            found.append(item)
        elif item.exists():  # a fifo or a device: reading it would wait for ever, or never end
            raise FileNotFoundError(f"{item}: not a regular file or folder")
        else:
            raise FileNotFoundError(f"{item}: no such file or folder")
    unique: dict[Path | str, Path | str] = {}
    for path in found:
        unique.setdefault(path if isinstance(path, str) else path.resolve(), path)
    return list(unique.values())


def _find_remote(url: str) -> list[str]:
    """PDF URLs under ``url``: itself when it names a ``.pdf``, a glob's matches, or a folder's, sorted."""
    try:
        import fsspec

        fs, path = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:  # an unknown protocol, or its back-end is not installed
        raise FileNotFoundError(f"{url}: cannot read this kind of URL ({exc})") from None
    # on HTTP a query string (a presigned URL's signature) is not part of the name, nor a glob's "?"
    named = urlsplit(url).path if is_http(url) else path
    glob, file = _GLOB.search(named), named.lower().endswith(".pdf")
    refused = ""  # why a URL that is there is not read
    try:
        if is_http(url) and (glob or not file) and _listing_too_large(fs, path):
            refused = f"its listing is larger than {MAX_LISTING >> 20} MB"  # fsspec would read it whole
        elif glob:
            matches = fs.glob(path)
        elif file:  # never listed (HTTP would download it to look for links)
            if is_http(url):
                open_http(fs, path, READ_TIMEOUT).close()  # one GET, its status kept (``exists`` hides it)
            elif not fs.exists(path):
                raise FileNotFoundError(url)
            elif fs.info(path).get("type") != "file":  # file:///dev/zero, a fifo: a read never ends, or waits
                refused = "not a regular file"
            if not refused:
                return [url]
        elif fs.isdir(path):
            matches = fs.find(path)
        else:
            raise FileNotFoundError(url)
    except FileNotFoundError as exc:
        status = http_status(exc)
        if status is None or status in (404, 410):
            raise FileNotFoundError(f"{url}: no such file or folder") from None
        raise FileNotFoundError(f"{url}: cannot be reached ({failure_text(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - any back-end's failure (network, auth) is the input's problem
        raise FileNotFoundError(f"{url}: cannot be reached ({failure_text(exc)})") from None
    if refused:
        raise FileNotFoundError(f"{url}: {refused}")
    return sorted(fs.unstrip_protocol(match) for match in matches if match.lower().endswith(".pdf"))


MAX_LISTING = 64 << 20
"""Most bytes of an HTTP folder's listing (a page of links): fsspec reads a listing whole, and one that never ended
took gigabytes of memory."""


def _listing_too_large(fs: object, path: str) -> bool:
    """Whether the HTTP folder listing of ``path`` (a folder, or a glob's folder) is longer than
    :data:`MAX_LISTING`, read as a stream before fsspec reads it whole."""
    glob = _GLOB.search(path)
    head = path[: glob.start()] if glob else path
    folder = head[: head.rfind("/") + 1] or head
    listing = open_http(fs, folder, READ_TIMEOUT, total=READ_TIMEOUT * 10)
    try:
        read = 0
        while chunk := listing.read(1 << 20):
            read += len(chunk)
            if read > MAX_LISTING:
                return True
        return False
    finally:
        listing.close()


READ_TIMEOUT = 60.0
"""Seconds a remote read may wait for its next byte (or a connection) before it gives up: aiohttp's own
default waits 300 s for a whole request, and a stalled server would hold a run that long."""


def is_http(url: str) -> bool:
    """Whether ``url`` is read with fsspec's HTTP back-end (which has its own timeouts and statuses)."""
    return url.lower().startswith(("http://", "https://"))


def open_http(fs: object, path: str, read_timeout: float, total: float | None = None) -> BinaryIO:
    """``path`` on fsspec's HTTP file system as one streamed GET (no HEAD first, no range requests: a plain
    server that ignores ranges still works), giving up after ``read_timeout`` s without a byte and ``total``
    s in all. Raises ``FileNotFoundError`` for a 404, aiohttp's errors (status kept) for the rest."""
    import aiohttp
    from fsspec.asyn import sync
    from fsspec.implementations.http import HTTPStreamFile

    timeout = aiohttp.ClientTimeout(total=total, sock_connect=read_timeout, sock_read=read_timeout)
    session = sync(fs.loop, fs.set_session)  # type: ignore[attr-defined]
    return HTTPStreamFile(fs, path, loop=fs.loop, session=session, timeout=timeout)  # type: ignore[attr-defined]


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def http_status(exc: BaseException) -> int | None:
    """The HTTP status behind ``exc`` (fsspec turns some into ``FileNotFoundError``), if there is one."""
    return next((status for cause in _causes(exc) if isinstance(status := getattr(cause, "status", None), int)), None)


def failure_text(exc: BaseException) -> str:
    """What went wrong, in words to act on: ``HTTP 500 Internal Server Error``, ``too many redirects``,
    ``timed out``, never an empty message nor a ``FileNotFoundError`` that hides the status."""
    aiohttp = sys.modules.get("aiohttp")  # loaded when the failure is its own; never imported just to check
    for cause in _causes(exc):
        if aiohttp is not None and isinstance(cause, aiohttp.TooManyRedirects):
            return "too many redirects"
        if aiohttp is not None and isinstance(cause, aiohttp.ClientResponseError):
            return f"HTTP {cause.status} {cause.message or ''}".strip()
    if any(isinstance(cause, TimeoutError) or type(cause).__name__ == "TimeoutError" for cause in _causes(exc)):
        return "timed out"  # asyncio's (a separate class before Python 3.11) has no message at all
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


HEADER_WINDOW = 1024
"""Where a PDF's ``%PDF-`` header may start (Acrobat's rule: junk before it within the first KB is allowed)."""

_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"BM", "BMP"),
    (b"\x1f\x8b", "gzip"),
    (b"%!PS", "PostScript"),
)


def sniff(path: str | Path) -> str | None:
    """What a file's first KB says it is: ``None`` for a PDF (``%PDF-`` in it), else what it looks like
    (``HTML``, ``PNG``, ``text``, ``empty``…; ``""`` for binary data of no known kind).

    MuPDF opens HTML, SVG, Markdown, images and zips whatever the name and ``filetype``: a login page
    saved as ``.pdf`` would become "text pages" with no error, so the content is checked first.
    Raises ``OSError`` when the file cannot be read.
    """
    with open(path, "rb") as handle:
        head = handle.read(HEADER_WINDOW)
    if b"%PDF-" in head:
        return None
    if not head:
        return "empty"
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP"
    text = head.decode("utf-8", "ignore").lstrip("\ufeff \t\r\n").lower()
    if text.startswith("<!doctype html") or "<html" in text or "<body" in text:
        return "HTML"
    if text.startswith("<?xml") or "<svg" in text:
        return "SVG/XML"
    printable = sum(byte >= 0x20 or byte in b"\t\n\r" for byte in head)
    if b"\x00" not in head and printable >= 0.95 * len(head):
        return "text"
    return ""


def open_pdf(path: str | Path) -> pymupdf.Document:
    """Open a PDF by path (MuPDF reads it lazily; the file is never loaded whole).

    Raises ``PdfError`` for a file that is not a PDF (by its content, see :func:`sniff`), is encrypted,
    is damaged or has no pages.
    """
    import pymupdf  # here, not at the top: the main process of a parallel run never opens a PDF

    name = safe_text(Path(path).name)
    try:
        kind = sniff(path)
    except OSError as exc:
        raise PdfError(f"{name}: cannot be opened ({exc.strerror or exc})") from None
    if kind == "empty":
        raise PdfError(f"{name}: the file is empty")
    if kind is not None:
        raise PdfError(f"{name}: not a PDF: " + (f"looks like {kind}" if kind else "no %PDF- header in its first KB"))
    try:
        doc = _open_by_path(pymupdf, Path(path))
    except pymupdf.EmptyFileError:
        raise PdfError(f"{name}: the file is empty") from None
    except pymupdf.FileDataError:
        raise PdfError(f"{name}: not a PDF, or damaged beyond repair") from None
    except (RuntimeError, ValueError) as exc:
        raise PdfError(f"{name}: cannot be opened ({exc})") from None
    if doc.needs_pass:
        doc.close()
        raise PdfError(f"{name}: encrypted (password protected); decrypt it first")
    if doc.page_count == 0:
        doc.close()
        raise PdfError(f"{name}: has no pages")
    return doc


def _open_by_path(pymupdf: ModuleType, path: Path) -> pymupdf.Document:
    """``pymupdf.open`` by path, also for a path that is not valid UTF-8 (MuPDF takes only UTF-8 names):
    such a file is opened through a temporary symlink with a plain name, removed once MuPDF holds the file."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        with tempfile.TemporaryDirectory(prefix="pdf-link-") as folder:
            link = Path(folder) / "input.pdf"
            link.symlink_to(path.absolute())
            return pymupdf.open(link, filetype="pdf")
    return pymupdf.open(path, filetype="pdf")


def check_pdf(path: str | Path) -> int:
    """Validate a PDF before a run and return its page count (``PdfError`` when unusable)."""
    with open_pdf(path) as doc:
        return doc.page_count


MAX_ZIPS = 20
"""Most archives unpacked for one request: the rest are refused (each zip costs a folder and a scan)."""

MAX_MEMBERS = 10_000
"""Most PDFs one zip may hold: more is refused before a file is written (a zip of a million empty members took
minutes and 1.4 GB listing and unpacking them, before any limit said no)."""
MAX_REASONS = 10
"""Reasons named when no upload can be used; the rest counted (300,000 empty members made a 9 MB message)."""
NAME_BYTES = 200
"""Longest file name a member is unpacked under (most file systems allow 255 bytes; ~86 CJK characters reach it)."""

FILE_COST = 4096
"""Bytes each unpacked file is charged beyond its size (a block and its folder): a zip of a million empty
``.pdf`` members would otherwise fill the disk's inodes within any byte budget."""


class UnpackBudget:
    """Bytes one request may write unpacking all its archives, counted as they are written.

    Bytes of an archive refused half-way stay counted (its files are deleted): the budget bounds the work a
    request causes as well as the disk it holds, so twenty bombs cannot each write up to the limit in turn.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.spent = 0

    def take(self, size: int) -> bool:
        """Count ``size`` more bytes; ``False`` (nothing counted) when they would exceed the budget."""
        if self.spent + size > self.max_bytes:
            return False
        self.spent += size
        return True


def unpack_pdfs(
    archive: str | Path, folder: str | Path, max_bytes: int | UnpackBudget, skipped: list[str] | None = None
) -> dict[Path, str]:
    """Extract the PDFs of a ``.zip`` into ``folder``, in the archive's order; other members are ignored.

    Returns each extracted file with its path inside the archive (to name it to people). A member that cannot be
    extracted (damaged, encrypted, a compression Python lacks) is left out and said in ``skipped``: the archive's
    other PDFs are still used.
    Each PDF goes to its own numbered sub-folder under its own base name, so no member path can escape
    ``folder`` and two PDFs of the same name in different folders stay apart. Stops with ``PdfError`` (and
    removes what it wrote) when the extracted PDFs would exceed ``max_bytes``, or the request's budget shared
    by several archives, counted as they are written (declared sizes can lie).
    """
    name, folder = safe_text(Path(archive).name), Path(folder)
    budget = max_bytes if isinstance(max_bytes, UnpackBudget) else UnpackBudget(max_bytes)
    made: list[Path] = []
    try:
        return _unpack(zipfile.ZipFile(archive), name, folder, budget, made, [] if skipped is None else skipped)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        failure = f"{name}: not a zip archive, or damaged ({exc})"
    except (NotImplementedError, RuntimeError) as exc:  # an encrypted member, a compression Python lacks
        failure = f"{name}: cannot be unpacked ({exc})"
    except OSError as exc:
        failure = f"{name}: cannot be unpacked here ({exc.strerror or exc})"
    except PdfError as exc:
        failure = str(exc)
    for made_folder in made:  # a refused archive's members are never used: free their disk
        shutil.rmtree(made_folder, ignore_errors=True)
    raise PdfError(failure)


def _unpack(
    zipped: zipfile.ZipFile, name: str, folder: Path, budget: UnpackBudget, made: list[Path], skipped: list[str]
) -> dict[Path, str]:
    with zipped:
        members = [m for m in zipped.infolist() if not m.is_dir() and m.filename.lower().endswith(".pdf")]
        if not members:
            raise PdfError(f"{name}: the zip holds no PDF")
        if len(members) > MAX_MEMBERS:
            raise PdfError(f"{name}: holds {len(members):,} PDFs, more than {MAX_MEMBERS:,} in one zip")
        pdfs, left = {}, budget.max_bytes - budget.spent
        for number, member in enumerate(members, 1):
            target = folder / f"{number:05d}" / _short(Path(member.filename.replace("\\", "/")).name)
            if not budget.take(FILE_COST):
                raise PdfError(_over(name, budget, left))
            target.parent.mkdir(parents=True, exist_ok=True)
            made.append(target.parent)
            try:
                with zipped.open(member) as source, target.open("wb") as sink:
                    while chunk := source.read(1 << 20):
                        if not budget.take(len(chunk)):
                            raise PdfError(_over(name, budget, left))
                        sink.write(chunk)
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
                # this member only (a bad CRC, encrypted, Deflate64): the archive's other PDFs are still used
                shutil.rmtree(target.parent, ignore_errors=True)
                skipped.append(f"{name} › {one_line(member.filename)}: cannot be unpacked ({one_line(str(exc))})")
                continue
            pdfs[target] = member.filename
        return pdfs


def _short(file_name: str) -> str:
    """``file_name`` cut to :data:`NAME_BYTES` (its ``.pdf`` kept): the name on disk only, people see the member's."""
    if len(file_name.encode("utf-8", "surrogateescape")) <= NAME_BYTES:
        return file_name
    stem = file_name[:-4].encode("utf-8", "surrogateescape")[: NAME_BYTES - 4].decode("utf-8", "ignore")
    return stem + file_name[-4:]


def _over(name: str, budget: UnpackBudget, left: int) -> str:
    limit = f"{budget.max_bytes / 2**20:,.0f} MB"
    if left == budget.max_bytes:
        return f"{name}: its PDFs would take more than {limit} unpacked"
    return f"{name}: its PDFs would take more than the {left / 2**20:,.1f} MB left of this request's {limit} unpacked"


def gather_uploads(
    files: Iterable[str | Path], folder: str | Path, max_unpacked: int, max_zips: int = MAX_ZIPS
) -> tuple[dict[Path, str], list[str]]:
    """The PDFs among uploaded files, ``.zip`` archives unpacked into ``folder``, for one run.

    ``max_unpacked`` bytes is the request's budget across all its archives (not each one's: three bombs
    must not take three times the disk), and at most ``max_zips`` archives are unpacked.
    Returns every PDF (usable or not: an unusable one gets its error row in the manifest) with the name
    people know it by (``archive.zip › 1890/issue.pdf`` for a member), and why each archive that could not
    be unpacked was skipped. Raises ``PdfError`` naming every file when not one PDF can be opened.
    """
    names: dict[Path, str] = {}
    problems: list[str] = []
    budget, zips = UnpackBudget(max_unpacked), 0
    for number, file in enumerate(map(Path, files)):
        if file.suffix.lower() != ".zip":
            names[file.resolve()] = file.name  # resolved, as the run names its files (a temp folder via a symlink)
            continue
        zips += 1
        if zips > max_zips:
            problems.append(f"{safe_text(file.name)}: not unpacked, more than {max_zips} zips in one request")
            continue
        try:
            unpacked = unpack_pdfs(file, Path(folder) / str(number), budget, problems)
        except PdfError as exc:
            problems.append(str(exc))
            continue
        names.update({pdf.resolve(): f"{file.name} › {one_line(member)}" for pdf, member in unpacked.items()})
    reasons = []
    for pdf in names:
        try:
            check_pdf(pdf)
        except PdfError as exc:
            reasons.append(str(exc))
        else:
            return names, problems
    said = [*problems, *reasons]
    more = f"; and {len(said) - MAX_REASONS:,} more" if len(said) > MAX_REASONS else ""
    raise PdfError("; ".join(said[:MAX_REASONS]) + more if said else "no file to process")
