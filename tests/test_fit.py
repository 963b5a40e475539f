import io
from pathlib import Path

import cv2
import numpy as np
import pymupdf
import pytest
from factories import large_engraving, pdf_from_images
from PIL import Image

from pipeline.fit import MODES, SDXL_BUCKETS, STEP, Fit, TooSmall, encode_jpeg, fit, parse_fit, render_scale


def test_encode_jpeg_uses_the_requested_quality() -> None:
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8))
    for quality in (50, 92):
        reference = io.BytesIO()
        image.save(reference, format="JPEG", quality=quality)
        decoded = Image.open(io.BytesIO(encode_jpeg(image, quality)))
        assert decoded.format == "JPEG"
        assert decoded.quantization == Image.open(reference).quantization


def ramps(width: int, height: int) -> np.ndarray:
    """Red rises 0→255 from the left edge to the right, green from the top to the bottom: a fitted pixel's
    colour tells where in the source it came from."""
    image = np.full((height, width, 3), 128, np.uint8)
    image[..., 0] = np.linspace(0, 255, width).round().astype(np.uint8)[None, :]
    image[..., 1] = np.linspace(0, 255, height).round().astype(np.uint8)[:, None]
    return image


def shown_span(fitted: Image.Image) -> tuple[float, float, float, float]:
    """The part of a :func:`ramps` source a fitted image shows: left, right, top, bottom as fractions."""
    pixels = np.asarray(fitted, dtype=np.float64) / 255
    return pixels[:, 0, 0].mean(), pixels[:, -1, 0].mean(), pixels[0, :, 1].mean(), pixels[-1, :, 1].mean()


@pytest.mark.parametrize(
    ("size", "bucket"),
    [
        ((2000, 2000), (1024, 1024)),
        ((2400, 1800), (1152, 896)),
        ((3000, 2000), (1216, 832)),
        ((2600, 1400), (1344, 768)),
        ((3000, 1100), (1536, 640)),
        ((1400, 2600), (768, 1344)),
        ((1300, 3400), (640, 1536)),
        # nearer in log ratio, farther in plain ratio difference: 2.06 is nearer 2.4 than 1.75 only in log ratio,
        # and 0.49 nearer 0.571 than 0.417 only in log ratio
        ((2060, 1000), (1536, 640)),
        ((980, 2000), (768, 1344)),
    ],
)
def test_bucket_mode_picks_the_closest_aspect_and_crops_minimally(
    size: tuple[int, int], bucket: tuple[int, int]
) -> None:
    """Read off the fitted image: its size is the bucket nearest in log ratio, and it shows the whole source
    along one side and a centred band along the other, as wide as the bucket's aspect allows."""
    fitted = fit(ramps(*size), Fit("bucket"))
    assert fitted.size == bucket
    assert fitted.original_size == size
    assert not fitted.upscaled and not fitted.undersized
    scale = max(bucket[0] / size[0], bucket[1] / size[1])  # covers the bucket; nothing more is cut
    shown_x, shown_y = bucket[0] / scale / size[0], bucket[1] / scale / size[1]
    expected = ((1 - shown_x) / 2, (1 + shown_x) / 2, (1 - shown_y) / 2, (1 + shown_y) / 2)
    assert shown_span(fitted.image) == pytest.approx(expected, abs=0.01)


def test_bucket_crop_is_centred_and_content_preserved() -> None:
    image = large_engraving(2000, 1000, seed=3)  # aspect 2.0 → 1344×768 (1.75): scaled to 1536×768, width cropped
    fitted = fit(image, Fit("bucket"))
    resized = Image.fromarray(image).resize((1536, 768), Image.Resampling.LANCZOS)
    expected = np.asarray(resized.crop((96, 0, 96 + 1344, 768)), dtype=np.int16)
    assert fitted.size == (1344, 768)
    assert np.abs(np.asarray(fitted.image, dtype=np.int16) - expected).mean() < 1.0


def test_small_images_are_not_upscaled_but_cropped_to_multiples_of_64() -> None:
    fitted = fit(large_engraving(1000, 700), Fit("bucket"))  # nearest bucket 1216×832 would need ×1.19
    width, height = fitted.size
    assert fitted.undersized and not fitted.upscaled
    assert width <= 1000 and height <= 700
    assert width % STEP == 0 and height % STEP == 0
    assert abs(width / height - 1216 / 832) < 0.05
    square = fit(large_engraving(800, 900), Fit("square"))
    assert square.size == (768, 768) and square.undersized and not square.upscaled


def test_upscaling_happens_only_when_asked() -> None:
    fitted = fit(large_engraving(800, 900), Fit("square", upscale=True))
    assert fitted.size == (1024, 1024) and fitted.upscaled
    assert fit(large_engraving(1000, 700), Fit("bucket", upscale=True)).size == (1216, 832)


def test_square_mode_matches_the_article_when_the_image_is_large_enough() -> None:
    image = large_engraving(1500, 1100)
    fitted = fit(image, Fit("square"))
    article = Image.fromarray(image).resize((1024, 1024), Image.Resampling.LANCZOS)  # the article's resize
    assert np.array_equal(np.asarray(fitted.image), np.asarray(article))
    assert not fitted.upscaled and not fitted.undersized


@pytest.mark.parametrize(
    ("width", "height", "colour", "spec"),
    [
        (1100, 1500, True, Fit("square")),  # across and down; 1500 rows: strips of 256 and a shorter last one
        (1500, 1100, False, Fit("square")),
        (2200, 4300, False, Fit("square")),  # a grey newspaper view, in one call: 4.2 times the target high
        (800, 900, True, Fit("square", upscale=True)),  # up in both passes
        (1024, 1300, False, Fit("square")),  # as wide as the target: down the columns only
        (1300, 1024, True, Fit("square")),  # as tall: across only
        (700, 600, False, Fit("square", min_side=512)),  # undersized: kept at a multiple of 64
    ],
)
def test_square_fit_of_an_array_is_byte_for_byte_one_pillow_resize(
    width: int, height: int, colour: bool, spec: Fit
) -> None:
    """A colour array is resized across in strips of rows (no whole copy into Pillow), a grey one by Pillow on the
    shared array: both must give exactly the bytes Pillow's single LANCZOS resize gives: the article's resize, and
    outputs that a refactor leaves alone."""
    image = large_engraving(width, height, seed=3)
    if colour:
        image = np.dstack([image, np.roll(image, 7, axis=1), 255 - image])
    fitted = fit(image, spec)
    whole = Image.fromarray(image).resize(fitted.size, Image.Resampling.LANCZOS)
    assert fitted.image.mode == whole.mode and fitted.image.tobytes() == whole.tobytes()


def test_max_side_keeps_the_aspect_ratio_and_caps_the_longer_side() -> None:
    fitted = fit(large_engraving(2400, 1000), Fit("max-side", 1600))
    assert fitted.size == (1600, 667)
    portrait = fit(large_engraving(900, 1800), Fit("max-side", 1600))
    assert portrait.size == (800, 1600)
    small = fit(large_engraving(1200, 700), Fit("max-side", 1600))
    assert small.size == (1200, 700) and small.undersized and not small.upscaled


def test_images_below_min_side_are_refused() -> None:
    with pytest.raises(TooSmall, match="511"):
        fit(large_engraving(800, 511), Fit("bucket"))
    assert fit(large_engraving(800, 512), Fit("bucket")).size[1] <= 512
    with pytest.raises(TooSmall):
        render_scale(2000, 300, Fit("bucket"))


@pytest.mark.parametrize("mode", MODES)
def test_no_mode_upscales_by_default(mode: str) -> None:
    spec = Fit(mode)  # type: ignore[arg-type]
    for width, height in [(600, 600), (900, 1300), (3000, 900), (1100, 1100), (4000, 2500)]:
        fitted = fit(large_engraving(width, height), spec)
        assert fitted.size[0] <= width and fitted.size[1] <= height
        assert not fitted.upscaled


def test_buckets_scale_with_size() -> None:
    assert Fit("bucket", 1024).buckets() == SDXL_BUCKETS
    assert all(w % STEP == 0 and h % STEP == 0 for w, h in Fit("bucket", 768).buckets())
    assert (768, 768) in Fit("bucket", 768).buckets()


def test_parse_fit() -> None:
    assert parse_fit("bucket") == Fit("bucket")
    assert parse_fit("max-side 1600") == Fit("max-side", 1600)
    assert parse_fit("max-side:2048", min_side=256) == Fit("max-side", 2048, 256)
    assert parse_fit("square", size=512) == Fit("square", 512)
    for bad in ("squash", "bucket 900", "max-side -3"):
        with pytest.raises(ValueError):
            parse_fit(bad)


@pytest.mark.parametrize("mode", MODES)
def test_render_scale_renders_just_enough_for_the_target(mode: str, tmp_path: Path) -> None:
    """Render a real PDF region at the advised scale: the fit then only downscales (or not at all)."""
    spec = Fit(mode)  # type: ignore[arg-type]
    pdf = pdf_from_images(tmp_path / "p.pdf", [large_engraving(900, 1200)], dpi=50)  # 1296×1728 px at zoom 1
    with pymupdf.open(pdf) as doc:
        page = doc[0]
        full_zoom = 4.0
        width, height = page.rect.width * full_zoom, page.rect.height * full_zoom
        scale = render_scale(width, height, spec)
        assert scale < 1
        pix = page.get_pixmap(matrix=pymupdf.Matrix(full_zoom * scale, full_zoom * scale))
        image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n).copy()
    fitted = fit(image, spec)
    assert fitted.size == spec.target(image.shape[1], image.shape[0])
    assert not fitted.upscaled and not fitted.undersized
    spare = (image.shape[1] - fitted.size[0], image.shape[0] - fitted.size[1])
    assert min(spare) <= 2  # not rendered larger than needed: one side is just the target's


def test_render_scale_never_exceeds_full_resolution() -> None:
    assert render_scale(700, 900, Fit("bucket")) == 1.0
    assert render_scale(700, 900, Fit("bucket", upscale=True)) > 1.0


def test_large_arrays_are_area_reduced_first_and_end_close_to_a_plain_lanczos() -> None:
    image = cv2.GaussianBlur(large_engraving(2600, 3900, seed=5), (0, 0), 1.0)  # 3.2× the bucket: reduced first
    fitted = fit(image, Fit("bucket"))
    plain = Image.fromarray(image).resize((832, 1248), Image.Resampling.LANCZOS).crop((0, 16, 832, 1232))
    assert fitted.size == (832, 1216) and fitted.original_size == (2600, 3900)
    assert np.abs(np.asarray(fitted.image, dtype=np.int16) - np.asarray(plain, dtype=np.int16)).mean() < 1.5
