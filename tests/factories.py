"""Synthetic scanned pages, PDFs and photos for the tests, made with numpy, OpenCV, real PyMuPDF and libheif."""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

import cv2
import numpy as np
import pillow_heif
import pymupdf
from PIL import Image

PAPER, INK = 240, 25

ARTICLE = {"filter": "sigma", "fit": "square", "upscale": True, "min_side": 1, "dedupe": None}
"""Options that reproduce the seed article: σ judge, every kept page resized to size×size, nothing dropped."""
ARTICLE_CLI = ["--filter", "sigma", "--fit", "square", "--upscale", "--min-side", "1", "--dedupe", "-1"]


def text_page(width: int = 800, height: int = 1100, seed: int = 0, columns: int = 2, ink: float = 1.0) -> np.ndarray:
    """A grey scan of text columns: lines of small glyph-like marks. ``ink`` < 1 leaves lines out (sparser page)."""
    rng = np.random.default_rng(seed)
    page = np.full((height, width), PAPER, np.uint8)
    margin, gutter, line = width // 12, width // 25, 22
    col_width = (width - 2 * margin - (columns - 1) * gutter) // columns
    for col in range(columns):
        x0 = margin + col * (col_width + gutter)
        for y in range(margin, height - margin - line, line):
            if rng.random() > ink:
                continue
            x = x0
            while x < x0 + col_width - 12:
                glyph = int(rng.integers(5, 11))
                top = y + int(rng.integers(0, 4))
                page[top : y + 14, x : x + glyph] = INK
                x += glyph + (int(rng.integers(8, 14)) if rng.random() < 0.18 else 2)
    return page


def engraving(width: int, height: int, seed: int = 0) -> np.ndarray:
    """An engraving-like picture: crossed hatching whose density varies smoothly, with dark masses."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    shade = cv2.GaussianBlur(rng.random((height, width)).astype(np.float32), (0, 0), max(width, height) / 8)
    shade = (shade - shade.min()) / (np.ptp(shade) + 1e-6)
    hatch1 = (np.sin((xx + yy) * 0.9) > 1 - 2 * shade).astype(np.float32)
    hatch2 = (np.sin((xx - yy) * 0.7) > 1.6 - 2 * shade).astype(np.float32)
    ink = np.clip(hatch1 + hatch2, 0, 1)
    return (PAPER - ink * (PAPER - INK)).astype(np.uint8)


def woodcut(width: int, height: int, seed: int = 0) -> np.ndarray:
    """A woodcut-like picture: irregular black and white masses at two scales. Unlike :func:`engraving`'s regular
    hatching, every part of it looks different, as parts of real pictures do to a keypoint detector."""
    rng = np.random.default_rng(seed)
    fine = cv2.GaussianBlur(rng.random((height, width)).astype(np.float32), (0, 0), 2.5)
    coarse = cv2.GaussianBlur(rng.random((height // 8, width // 8)).astype(np.float32), (0, 0), 3)
    coarse = cv2.resize(coarse, (width, height))
    masses = (fine - fine.mean()) / fine.std() + 3 * (coarse - coarse.mean()) / coarse.std()
    return np.where(masses > 0, PAPER, INK).astype(np.uint8)


def large_engraving(width: int, height: int, seed: int = 0) -> np.ndarray:
    """An engraving-like picture of any size, fast: :func:`engraving`'s blur takes seconds per megapixel, so
    an eighth-size engraving is enlarged and given fresh grain."""
    rng = np.random.default_rng(seed)
    small = engraving(max(8, width // 8), max(8, height // 8), seed)
    grain = rng.integers(0, 24, (height, width), dtype=np.uint8)
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR) - grain


def mixed_page(width: int = 800, height: int = 1100, seed: int = 0) -> np.ndarray:
    """Text columns with an engraving in the upper half."""
    page = text_page(width, height, seed)
    x0, y0, x1, y1 = width // 8, height // 10, width * 7 // 8, height // 2
    page[y0:y1, x0:x1] = engraving(x1 - x0, y1 - y0, seed)
    return page


def blank_page(width: int = 800, height: int = 1100, seed: int = 0) -> np.ndarray:
    """Empty paper with faint scanner noise."""
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(PAPER, 2, (height, width)), 0, 255).astype(np.uint8)


def stained(
    page: np.ndarray, tone: int = 190, contrast: float = 0.5, mottle: float = 12.0, seed: int = 0
) -> np.ndarray:
    """``page`` (grey, white paper) reprinted at ``contrast`` on paper of ``tone`` with broad stains (``mottle``
    grey levels, ~7 mm across at 72 dpi): old paper lighter in places than under the text by more than faint ink
    is dark."""
    rng = np.random.default_rng(seed)
    h, w = page.shape
    blots = cv2.GaussianBlur(rng.normal(0, 1, (h // 20 + 1, w // 20 + 1)).astype(np.float32), (0, 0), 1.5)
    blots = cv2.resize(blots / (blots.std() + 1e-6), (w, h), interpolation=cv2.INTER_CUBIC)
    ink = (255.0 - page) / 255.0
    return np.clip(tone + mottle * blots - ink * tone * contrast, 0, 255).astype(np.uint8)


def on_bed(page: np.ndarray, bed: int = 248, margins: tuple[int, int, int, int] = (40, 60, 30, 50)) -> np.ndarray:
    """``page`` (grey) lying on a scanner bed of tone ``bed``, ``margins`` (top, bottom, left, right) px wide."""
    top, bottom, left, right = margins
    h, w = page.shape
    out = np.full((h + top + bottom, w + left + right), bed, np.uint8)
    out[top : top + h, left : left + w] = page
    return out


def pdf_from_images(path: Path, images: Sequence[np.ndarray], dpi: int = 100, quality: int = 90) -> Path:
    """A PDF with one embedded JPEG scan per page, the page sized to the scan at ``dpi`` (a lower JPEG ``quality``
    fits more pictures under the app tests' 1 MB upload limit)."""
    doc = pymupdf.open()
    for image in images:
        height, width = image.shape[:2]
        page = doc.new_page(width=width * 72 / dpi, height=height * 72 / dpi)
        ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
        assert ok
        page.insert_image(page.rect, stream=jpeg.tobytes())
    doc.save(path)
    doc.close()
    return path


def corrupt_page(path: Path, index: int) -> Path:
    """Give one page an absurd MediaBox so MuPDF refuses to render it (as a damaged page would)."""
    doc = pymupdf.open(path)
    doc.xref_set_key(doc[index].xref, "MediaBox", "[0 0 300000 300000]")
    doc.saveIncr()
    doc.close()
    return path


def zero_page_pdf(path: Path) -> Path:
    """A syntactically valid PDF whose page tree is empty (PyMuPDF refuses to save one)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def encrypted_pdf(path: Path) -> Path:
    """A one-page PDF that needs a password."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user", owner_pw="owner")
    doc.close()
    return path


def phone_photo(path: Path, width: int = 4000, height: int = 3000, seed: int = 0) -> Path:
    """A 12 MP phone photo of about 4 MB (sensor grain keeps a JPEG that large), stored sideways with EXIF
    orientation 6 as phones store portraits: its stored left half is red, so upright its top is."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack(
        [120 + 60 * np.sin(x / 97) * np.cos(y / 53), 90 + 40 * np.sin((x + y) / 71), 60 + 30 * np.cos(x / 37)], -1
    )
    base[:, : width // 2, 0] += 90
    pixels = np.clip(base + rng.normal(0, 11, base.shape), 0, 255).astype(np.uint8)
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(pixels).save(path, "JPEG", quality=90, exif=exif)
    return path


def save_heic(image: Image.Image, path: Path) -> Path:
    """A HEIC photo, as an iPhone saves it, written without registering PIL's HEIC opener in the test process:
    the code under test must register it itself."""
    pillow_heif.from_pillow(image.convert("RGB")).save(path, quality=90)
    return path


def free_port() -> int:
    """A TCP port free on localhost now, for a server a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HostileHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the archive folder, and hostile servers under prefixes: ``/flaky/…`` is found (its first request
    succeeds: the existence check) but every download after fails with a server error; ``/broken/…`` always
    fails; ``/loop/…`` redirects to itself; ``/drip/…`` declares 10 MB and sends 1 byte a second; ``/stall/…``
    sends its headers and then nothing; ``/slow/…`` serves the file at 128 KB/s, ``/late/…`` a PDF after 0.6 s;
    ``/endless/`` is a folder listing (HTML) that never ends.
    Shared by ``tests/test_remote.py`` and ``bench/hostile_inputs.py``."""

    requests: ClassVar[dict[str, int]] = {}
    drip_seconds: ClassVar[int] = 60
    """How long ``/drip/`` and ``/stall/`` go on (the bench's 330 s outlast aiohttp's own 300 s)."""

    def do_GET(self) -> None:
        seen = self.requests[self.path] = self.requests.get(self.path, 0) + 1
        prefix = self.path.split("/")[1]
        if prefix == "flaky":
            if seen > 1:
                self.send_error(500, "the storage back-end failed")
                return
            self.path = self.path.removeprefix("/flaky")
        elif prefix == "broken":
            self.send_error(500)
            return
        elif prefix == "loop":
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        elif prefix in ("drip", "stall"):
            self._trickle(1 if prefix == "drip" else 0)
            return
        elif prefix == "slow":
            self.path = self.path.removeprefix("/slow")
            self.wfile = Throttled(self.wfile)
        elif prefix == "endless":
            self._endless_listing()
            return
        elif prefix == "late":
            self.path = self.path.removeprefix("/late")
            if self.path.endswith(".pdf"):
                time.sleep(0.6)
        super().do_GET()

    def _endless_listing(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        try:
            for number in range(10_000_000):  # ~600 MB of links, far past any bounded reader
                self.wfile.write(f'<a href="issue{number}.pdf">issue{number}.pdf</a>\n'.encode() * 100)
        except OSError:  # the client went away
            pass

    def _trickle(self, rate: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/pdf")
        self.send_header("Content-Length", str(10 * 2**20))
        self.end_headers()
        try:
            self.wfile.write(b"%PDF-1.4\n")
            self.wfile.flush()
            for _ in range(self.drip_seconds):  # a bounded client gives up long before
                time.sleep(1)
                self.wfile.write(b"0" * rate)
                self.wfile.flush()
        except OSError:  # the client went away: what a bounded download does
            pass

    def log_message(self, *args: object) -> None:
        pass


class Throttled(io.BufferedIOBase):
    """A response written 8 KB at a time, 16 times a second."""

    def __init__(self, raw: io.BufferedIOBase) -> None:
        self._raw = raw

    def write(self, data: bytes) -> int:  # type: ignore[override]
        for start in range(0, len(data), 8192):
            self._raw.write(data[start : start + 8192])
            self._raw.flush()
            time.sleep(1 / 16)
        return len(data)

    def flush(self) -> None:
        self._raw.flush()


@contextlib.contextmanager
def serve(folder: Path, drip_seconds: int = 60) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` serving ``folder`` (and :class:`HostileHandler`'s prefixes) from a thread."""
    handler = type("Handler", (HostileHandler,), {"drip_seconds": drip_seconds, "requests": {}})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    httpd.handle_error = lambda *_: None  # type: ignore[method-assign]  # clients killed mid-response: expected
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
