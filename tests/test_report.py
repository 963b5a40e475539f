import base64
import io
import re
from pathlib import Path

import cv2
import numpy as np
import pytest
from factories import blank_page, engraving, mixed_page, pdf_from_images, text_page
from page_kinds import album_page
from PIL import Image

from pipeline import Options, run
from pipeline.report import (
    NO_PICTURE,
    NOT_RECORDED,
    Borderline,
    Counts,
    NotWritten,
    by_kind,
    count,
    histogram,
    histogram_svg,
    render_report,
    thumbnail_jpeg,
)
from pipeline.writer import read_manifest, read_text


def _rows() -> list[dict[str, str]]:
    rows = [
        {"source": "a.pdf", "page": str(n), "kept": "true" if s > 45 else "false", "score": f"{s:.4f}"}
        for n, s in enumerate([10.0, 20.0, 44.0, 46.0, 60.0, 80.0, 30.0], start=1)
    ]
    for row in rows:
        row["outputs"] = f"a_p{int(row['page']):04d}.jpg" if row["kept"] == "true" else ""
    rows[5] |= {"outputs": "a_p0006_r1.jpg", "duplicates": "a_p0006_r2.jpg=a_p0004.jpg"}
    rows.append(
        {"source": "b.pdf", "page": "1", "kept": "false", "score": "50.0", "duplicates": "b_p0001.jpg=a_p0005.jpg"}
    )
    rows.append({"source": "b.pdf", "page": "2", "kept": "false", "score": "55.0", "too_small": "b_p0002_r1.jpg"})
    rows.append({"source": "b.pdf", "page": "3", "kept": "false", "score": "", "error": "page 3: boom"})
    rows.append({"source": "c.pdf", "page": "", "kept": "false", "score": "", "error": "not a PDF"})
    return rows


def test_counts_follow_the_manifest() -> None:
    assert count(_rows()) == Counts(pages=10, kept=3, images=3, text=4, duplicates=2, too_small=1, errors=2)


def test_histogram_puts_the_threshold_on_a_bin_edge_and_counts_every_score() -> None:
    scores = [1.0, 2.5, 7.0, 44.9, 45.0, 45.1, 99.0, 120.0]
    hist = histogram(scores, threshold=45.0, bins=20)
    assert sum(hist.counts) == len(scores)
    assert len(hist.edges) == len(hist.counts) + 1
    assert any(abs(edge - 45.0) < 1e-6 for edge in hist.edges)
    assert hist.edges[0] == 1.0 and hist.edges[-1] >= 120.0  # the axis starts at the lowest score, not below it
    assert 18 <= len(hist.counts) <= 22
    below = sum(c for c, e in zip(hist.counts, hist.edges, strict=False) if e < 45.0 - 1e-6)
    assert below == 4
    assert histogram([], threshold=3.0).counts == [0] * len(histogram([], threshold=3.0).counts)
    assert histogram([0.0, 0.2, 0.996], threshold=0.5).edges[0] == 0.0  # no "-0.029" under a 0-1 score
    lone = histogram([5.0, 5.0], threshold=5.0)
    assert sum(lone.counts) == 2


def test_borderline_keeps_only_the_pages_nearest_the_threshold_on_each_side() -> None:
    collector = Borderline(threshold=50.0, per_side=3, side=64)
    view = text_page(200, 260)
    rng = np.random.default_rng(0)
    made = 0
    for page, score in enumerate(rng.uniform(0, 100, 2000)):
        kept = score > 50.0
        made += collector.wants(score, kept)
        collector.offer(score, kept, f"p{page}", view)
    for kept in (False, True):
        thumbs = collector.thumbnails(kept)
        assert len(thumbs) == 3
        assert all(t.kept == kept for t in thumbs)
        distances = [abs(t.score - 50.0) for t in thumbs]
        assert distances == sorted(distances) and max(distances) < 0.5
        for thumb in thumbs:
            with Image.open(io.BytesIO(thumb.jpeg)) as image:
                assert image.format == "JPEG" and max(image.size) <= 64
    assert made < 200  # thumbnails are made only for pages that enter the set


def test_report_is_self_contained_with_histogram_threshold_counts_and_thumbnails() -> None:
    collector = Borderline(threshold=45.0, per_side=2)
    for row in _rows():
        if row["score"]:
            score = float(row["score"])
            picture = engraving(120, 160, seed=int(row["page"])) if score > 45 else text_page(120, 160)
            collector.offer(score, score > 45, f"{row['source']} p{row['page']}", picture)
    text = render_report(_rows(), threshold=45.0, borderline=collector, title="vestnik <run>", judge="sigma")
    assert text.startswith("<!DOCTYPE html>") and "vestnik &lt;run&gt;" in text
    assert "<svg" in text and text.count('class="bin"') >= 10
    assert re.search(r'<line class="threshold" x1="[\d.]+"', text) and "threshold 45" in text
    assert re.search(r"dropped as text \(judge\)</th><td>4<", text)
    assert re.search(r"dropped as duplicates</th><td>2<", text)
    assert re.search(r"too small</th><td>1<", text)
    images = re.findall(r'src="data:image/jpeg;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(images) == 4
    assert all(base64.b64decode(data)[:2] == b"\xff\xd8" for data in images)
    rejected, kept = text.split("Kept, nearest the threshold")
    assert "a.pdf p3" in rejected and "a.pdf p4" in kept  # 44 and 46, either side of 45
    assert "http" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing to fetch


def test_histogram_svg_marks_the_threshold_where_it_lies() -> None:
    svg = histogram_svg(histogram([0.0, 100.0], threshold=25.0, bins=4), width=440, height=100)
    x = float(re.search(r'class="threshold" x1="([\d.]+)"', svg).group(1))
    assert x == pytest.approx(40 + 0.25 * 390, abs=1)


def test_histogram_svg_scales_to_its_column_and_keeps_the_threshold_label_inside() -> None:
    svg = histogram_svg(histogram([0.0, 0.1], threshold=0.5), width=480, height=200)
    root = svg.split(">", 1)[0]
    assert "width:100%" in root and "max-width:480px" in root and ' width="' not in root
    label = re.search(r'<text x="([\d.]+)"[^>]*text-anchor="(\w+)">threshold 0.5<', svg)
    assert label is not None and label.group(2) == "end", "a label at the right edge is drawn leftwards"
    assert float(label.group(1)) <= 480


def test_not_written_counts_every_picture_and_keeps_the_largest() -> None:
    collector = NotWritten(limit=3)
    jpeg = thumbnail_jpeg(engraving(60, 40), side=32)
    assert collector.over() == -1
    for number, side in enumerate([100, 300, 50, 300, 200, 400, 10], start=1):
        collector.offer(side, f"a.pdf p{number}", f"too small: {side}×{side} px < min side 512", jpeg)
    collector.offer(450, "a.pdf p8", "too small", None)  # the worker made no thumbnail: counted only
    assert collector.total == 8
    assert [p.label for p in collector.pictures()] == ["a.pdf p6", "a.pdf p2", "a.pdf p4"]  # ties: run order
    assert collector.over() == 300, "a worker need not make thumbnails of pictures no larger than this"
    with pytest.raises(ValueError, match="limit"):
        NotWritten(limit=0)


def test_report_lists_the_kept_pictures_not_written_with_their_reason_and_thumbnail() -> None:
    collector = NotWritten()
    collector.offer(95, "b.pdf p2 r1", "too small: 180×95 px < min side 256", thumbnail_jpeg(engraving(180, 95)))
    text = render_report(_rows(), threshold=45.0, not_written=collector)
    section = text.split("<h2>Kept pictures not written</h2>", 1)[1]
    assert section.startswith("<p class='not-written'>1 picture kept by the judge was not written: too small")
    assert "b.pdf p2 r1<br>too small: 180×95 px &lt; min side 256</figcaption>" in section
    (data,) = re.findall(
        r'<img class="thumbnail" alt="b.pdf p2 r1" src="data:image/jpeg;base64,([A-Za-z0-9+/=]+)"', section
    )
    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        assert image.format == "JPEG" and image.size == (180, 95)
    plain = render_report([row for row in _rows() if not row.get("too_small")], threshold=45.0)
    assert "<h2>Kept pictures not written</h2><p class='not-written'>None" in plain, "the section is always there"


def _kind_rows(report: str) -> dict[str, tuple[int, int, int]]:
    """The *Pictures by kind* table of a report: kind → (kept, dropped, near the threshold)."""
    table = report.split("<h2>Pictures by kind</h2>", 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<tr><th>([^<]+)</th><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td></tr>", table)
    return {kind: (int(kept), int(dropped), int(near)) for kind, kept, dropped, near in cells}


def test_a_run_reports_what_it_kept_and_dropped_of_each_kind_of_picture(tmp_path: Path) -> None:
    """Engravings kept, photographs on album card dropped just under the threshold: the manifest says what kind
    each page's best candidate is, and the report's table and warning show the photographs lost at once."""
    albums = [cv2.cvtColor(album_page(seed=seed)[0], cv2.COLOR_RGB2BGR) for seed in (1, 3, 5)]
    pdf = pdf_from_images(tmp_path / "album.pdf", albums, dpi=72)  # the factory's view is 72 dpi of the card
    issue = pdf_from_images(tmp_path / "issue.pdf", [mixed_page(seed=1), mixed_page(seed=2), text_page(), blank_page()])
    summary = run([issue, pdf], tmp_path / "out", Options(threshold=0.9, min_side=1, ocr=False))
    rows = read_manifest(tmp_path / "out")
    by_page = [(row["source"], row["kept"], row["page_kind"]) for row in rows]
    assert by_page == [
        ("issue.pdf", "true", "line art"),
        ("issue.pdf", "true", "line art"),
        ("issue.pdf", "false", ""),
        ("issue.pdf", "false", ""),
        *[("album.pdf", "false", "continuous tone")] * 3,
    ], by_page
    assert all(0.45 <= float(row["score"]) < 0.9 for row in rows[4:]), "the photographs score near the threshold"
    report = read_text(tmp_path / "out", "report.html")
    assert _kind_rows(report) == {"line art": (2, 0, 0), "continuous tone": (0, 3, 3), NO_PICTURE: (0, 2, 0)}
    assert list(_kind_rows(report)) == ["continuous tone", "line art", NO_PICTURE], "most pages first"
    warnings = re.findall(r"<p class='kind-warning'>⚠ ([^<]+) — check", report)
    assert warnings == [
        "continuous tone: 3 of 3 pages with such a candidate were dropped, 3 near the threshold (score ≥ 0.45)"
    ]
    assert "the judge's view is grey, so colour is not told" in report
    assert summary.kinds is not None and summary.kinds.line() == (
        "continuous tone 0/3 (3 near the threshold), line art 2/0, no picture found 0/2"
    )
    assert "Pictures likely lost: continuous tone: 3 of 3 pages" in summary.describe()


def test_pictures_by_kind_counts_pages_the_judge_saw_and_warns_of_kinds_dropped_near_the_threshold() -> None:
    def row(kept: bool, score: float, kind: str | None, **cells: str) -> dict[str, str]:
        fields = {"source": "a.pdf", "page": "1", "kept": "true" if kept else "false", "score": f"{score:.4f}"}
        return fields | ({} if kind is None else {"page_kind": kind}) | cells

    rows = [
        row(True, 60.0, "monochrome line art"),
        row(False, 40.0, "monochrome line art"),  # near: at least half of 45
        row(False, 10.0, "monochrome line art"),  # far below
        row(False, 30.0, "colour continuous tone"),
        row(False, 23.0, "colour continuous tone"),
        row(True, 50.0, "colour continuous tone"),
        row(False, 0.0, ""),
        row(False, 30.0, None),  # a row of a manifest written before page_kind
        row(False, 0.0, "", error="page 1: boom"),  # not judged
        {"source": "b.pdf", "page": "", "kept": "false", "score": "", "error": "not a PDF"},
    ]
    kinds = by_kind(rows, threshold=45.0)
    assert kinds.floor == 22.5
    assert [(kind, c.kept, c.dropped, c.near) for kind, c in kinds.rows()] == [
        ("colour continuous tone", 1, 2, 2),
        ("monochrome line art", 1, 2, 1),
        (NO_PICTURE, 0, 1, 0),
        (NOT_RECORDED, 0, 1, 1),
    ]
    assert kinds.warnings() == [
        "colour continuous tone: 2 of 3 pages with such a candidate were dropped, 2 near the threshold (score ≥ 22.5)"
    ], "a kind with as many kept as dropped near the threshold is no warning, nor are rows without a kind"
    report = render_report(rows, threshold=45.0, judge="sigma")
    assert _kind_rows(report)["colour continuous tone"] == (1, 2, 2)
    assert report.count("class='kind-warning'") == 1
    assert "colour is not told" not in report, "the sigma judge's view has the page's colours"
    assert "the sigma judge judges whole pages, so its candidate is the page" in report
    assert report.index("Pictures by kind") < report.index("Judge scores"), "seen before the histogram"
