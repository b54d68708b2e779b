"""Images are read upright (EXIF orientation) and 16-bit PNGs scaled to 8 bits, by the one reader
every command and source uses (``gpulite.pipeline.calculators.sources.load_image``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gpulite.cli import main
from gpulite.pipeline.calculators.sources import ImageReadError, load_image

RED, BLUE = (255, 0, 0), (0, 0, 255)


def _sideways_jpeg(path: Path) -> Path:
    """A 16x8 picture (red left half, blue right) stored rotated, with EXIF orientation 6 to undo it."""
    upright = np.zeros((8, 16, 3), np.uint8)
    upright[:, :8], upright[:, 8:] = RED, BLUE
    stored = Image.fromarray(upright).transpose(Image.Transpose.ROTATE_90)  # what a sideways camera writes
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 CW to view
    stored.save(path, format="JPEG", quality=95, exif=exif)
    return path


def _gray16(path: Path, value: int) -> Path:
    Image.fromarray(np.full((12, 20), value, np.uint16)).save(path)
    with Image.open(path) as im:
        assert im.mode.startswith("I"), im.mode  # really stored as 16-bit
    return path


def test_exif_orientation_is_applied(tmp_path: Path, capsys):
    src = _sideways_jpeg(tmp_path / "sideways.jpg")
    rgb = load_image(src)
    assert rgb.shape == (8, 16, 3)
    assert np.abs(rgb[4, 2].astype(int) - RED).max() < 40 and np.abs(rgb[4, 13].astype(int) - BLUE).max() < 40
    out = tmp_path / "out.png"  # a picture with no face comes out as it was read
    assert main(["detect", "face", str(src), "-o", str(out), "--backend", "cpu", "--no-progress"]) == 0
    with Image.open(out) as im:
        assert im.size == (16, 8)
        np.testing.assert_array_equal(np.asarray(im.convert("RGB")), rgb)


@pytest.mark.parametrize("value", [0, 32896, 65535, 1000])
def test_16_bit_png_is_scaled_not_saturated(tmp_path: Path, capsys, value: int):
    src = _gray16(tmp_path / "gray16.png", value)
    want = round(value / 257)
    np.testing.assert_array_equal(load_image(src), np.full((12, 20, 3), want, np.uint8))
    out = tmp_path / "out.png"
    assert main(["detect", "face", str(src), "-o", str(out), "--backend", "cpu", "--no-progress"]) == 0
    with Image.open(out) as im:
        np.testing.assert_array_equal(np.asarray(im.convert("RGB")), np.full((12, 20, 3), want, np.uint8))


def test_a_corrupt_image_names_the_file(tmp_path: Path):
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 truncated")
    with pytest.raises(ImageReadError, match=r"bad\.jpg"):
        load_image(bad)
