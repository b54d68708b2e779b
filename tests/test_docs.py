"""The README and docs/ say what the code does (issue 24: the README's video example needed
an extra it did not name, it did not link docs/solutions.md, and docs/solutions.md said Pose's
other models were a ModelError where the zoo downloads them)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_links_exist():
    for link in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)(?:#[\w-]+)?\)", README):
        assert (ROOT / link).is_file(), link


def test_readme_points_to_the_solutions_doc_and_drawing_utils():
    assert "(docs/solutions.md)" in README and "drawing_utils" in README


def test_readme_names_every_extra_of_pyproject():
    extras = re.search(r"\[project\.optional-dependencies\]\n(.*?)\n\[", (ROOT / "pyproject.toml").read_text(),
                       re.S).group(1)
    for name in re.findall(r"^(\w+) = \[", extras, re.M):
        assert f"`{name}`" in README or f"gpulite[{name}]" in README, name


def test_solutions_doc_says_the_zoo_downloads_poses_other_models():
    row = next(line for line in (ROOT / "docs" / "solutions.md").read_text().splitlines()
               if line.startswith("| `pose.Pose("))
    assert "downloads" in row and "GPULITE_OFFLINE" in row, row
