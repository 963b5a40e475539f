import io

import numpy as np
from PIL import Image

from pipeline.fit import encode_jpeg, fit_square


def test_fit_square_resizes_to_the_target_with_lanczos() -> None:
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (300, 200, 3), dtype=np.uint8)
    fitted = fit_square(image, 128)
    expected = Image.fromarray(image).resize((128, 128), Image.Resampling.LANCZOS)
    assert fitted.size == (128, 128)
    assert np.array_equal(np.asarray(fitted), np.asarray(expected))


def test_encode_jpeg_uses_the_requested_quality() -> None:
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8))
    for quality in (50, 92):
        reference = io.BytesIO()
        image.save(reference, format="JPEG", quality=quality)
        decoded = Image.open(io.BytesIO(encode_jpeg(image, quality)))
        assert decoded.format == "JPEG"
        assert decoded.quantization == Image.open(reference).quantization
