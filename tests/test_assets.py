"""The suite's inputs are in the checkout: the shipped images are the ones documented."""

from __future__ import annotations

import hashlib
import re

from tests.assets import IMAGES


def test_shipped_images_match_their_documented_digests():
    listed = dict(re.findall(r"^([0-9a-f]{64})  (\S+\.png)$", (IMAGES / "README.md").read_text(), re.M))
    assert sorted(listed.values()) == ["astronaut.png", "chelsea.png", "coffee.png"]
    for digest, name in listed.items():
        assert hashlib.sha256((IMAGES / name).read_bytes()).hexdigest() == digest, name
