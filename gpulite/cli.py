"""The ``gpulite`` command line: run, inspect and benchmark models, run solutions and graphs.

Only the parser and the dispatch live here. Each command is a module of
:mod:`gpulite.commands` named in :data:`COMMANDS`, with ``register(subparsers)`` (adds its
subparser and ``set_defaults(run=run)``) and ``run(args) -> int`` (the exit status). Exit
status: 0 success, 1 a runtime failure, 2 an input or usage error (see
:mod:`gpulite.commands.common` and ``docs/cli.md``). Errors print one line, with the
traceback only under ``-v``, which goes before or after the command.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from gpulite.commands.common import report_error
from gpulite.version import __version__

# Command modules of gpulite.commands, in the order ``gpulite --help`` lists them.
COMMANDS = ("demo", "detect", "run", "inspect", "ops", "bench", "profile", "info", "models", "graph_run", "batch")


def _add_verbose(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("-v", "--verbose", action="store_true", default=default,
                        help="log progress to stderr; on an error, print the traceback")


def _verbose_everywhere(parser: argparse.ArgumentParser) -> None:
    """``-v`` on every subcommand too; SUPPRESS keeps a ``-v`` given before the command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _add_verbose(sub, argparse.SUPPRESS)
                _verbose_everywhere(sub)


def build_parser() -> argparse.ArgumentParser:
    """The ``gpulite`` parser with every command of :data:`COMMANDS` registered."""
    p = argparse.ArgumentParser(prog="gpulite", description="Run, inspect and benchmark TFLite models; run "
                                "solutions and calculator graphs on images, folders and videos.")
    _add_verbose(p, False)
    p.add_argument("--version", action="version", version=f"gpulite {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"gpulite.commands.{name}").register(sub)
    _verbose_everywhere(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``gpulite`` command; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2, message already printed)
        return e.code if isinstance(e.code, int) else 2
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.run(args)
    except BrokenPipeError:  # ``gpulite ... | head``: the reader left, nothing to report (Python's docs' recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("gpulite: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # every error ends as one line and an exit status; -v adds the traceback
        return report_error(e, verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
