"""Print ``name==lower`` for every build, runtime and test requirement in pyproject.toml.

.ci/run installs these into a second venv and runs the suite there, so that each lower bound
is a tested one. Every requirement must have a lower bound (``>=`` or ``==``).
"""

import re
import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
requirements = [*project["build-system"]["requires"], *project["project"]["dependencies"],
                *project["project"]["optional-dependencies"]["test"]]
for req in requirements:
    m = re.fullmatch(r"([A-Za-z0-9_.-]+(?:\[[^\]]*\])?)\S*?(?:==|>=)([^,;\s]+).*", req)
    if not m:
        sys.exit(f"lower_bounds.py: {req!r} has no lower bound")
    print(f"{m.group(1)}=={m.group(2)}")
