"""``gpulite models list|pull|path``: the model zoo from the command line.

``list`` prints every zoo model with its source, the start of its sha256, and where a checked
copy is (or that none is); ``pull NAME...|--all`` fetches what is missing; ``path NAME``
prints the file a name resolves to, without downloading. Exit status 2 for an unknown name,
a missing argument or a model that is not present (as in ``gpulite run``), 1 for a failed download.
"""

from __future__ import annotations

import argparse
import sys

from gpulite import zoo
from gpulite.commands.common import EXIT_FAILURE, EXIT_INPUT, InputError
from gpulite.errors import ModelError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``models`` command and its three subcommands."""
    p = subparsers.add_parser("models", help="list, fetch or locate the zoo's models",
                              description=__doc__.split("\n\n")[1])
    sub = p.add_subparsers(dest="models_command", required=True)
    sub.add_parser("list", help="every zoo model: source, sha256, where it is")
    pull = sub.add_parser("pull", help="download zoo models into the cache (checked against their sha256)")
    pull.add_argument("names", nargs="*", metavar="NAME", help="zoo model names")
    pull.add_argument("--all", action="store_true", help="every zoo model")
    path = sub.add_parser("path", help="print the file a zoo name resolves to (no download)")
    path.add_argument("name", metavar="NAME")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``gpulite models``; returns the exit status."""
    if args.models_command == "list":
        return _list()
    names = zoo.ALL_NAMES if args.models_command == "pull" and args.all else (
        args.names if args.models_command == "pull" else [args.name])
    if not names:
        raise InputError("models pull: name a zoo model, or --all")
    unknown = [n for n in names if n not in zoo.ALL_NAMES]
    if unknown:
        raise InputError(f"models {args.models_command}: not zoo models: {', '.join(unknown)} "
                         f"(known: {', '.join(zoo.ALL_NAMES)})")
    try:
        if args.models_command == "path":
            print(zoo.resolve(args.name, download=False))
            return 0
        missing = [n for n in names if zoo.find(n) is None]
        if missing:
            zoo.fetch(missing)
        for n in names:
            print(f"{n:<34}{zoo.resolve(n, download=False)}")
    except ModelError as e:
        hint = f" (gpulite models pull {args.name} downloads it)" if args.models_command == "path" else ""
        print(f"gpulite: error: {e}{hint}", file=sys.stderr)
        return EXIT_INPUT if args.models_command == "path" else EXIT_FAILURE
    return 0


def _list() -> int:
    labels = {n: (zoo.SOURCE_OF[n].label if n in zoo.SOURCE_OF else zoo.ASSEMBLED[n].label) for n in zoo.ALL_NAMES}
    width = max(map(len, labels.values())) + 2
    print(f"{'name':<34}{'source':<{width}}{'sha256':<14}where")
    for name in zoo.ALL_NAMES:
        try:
            where = zoo.find(name)
        except ModelError as e:  # a wrong copy in $GPULITE_MODEL_DIR
            where = f"error: {e}"
        digest = (zoo.digest(name) or "")[:12]
        label = labels[name]
        print(f"{name:<34}{label:<{width}}{digest:<14}{where or 'not present (gpulite models pull)'}")
    print(f"cache: {zoo.cache_dir()}")
    return 0

