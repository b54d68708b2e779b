"""``gpulite ops``: which LiteRT builtin ops run on cpu and webgpu, for float and int8 models.

The table comes from the kernel registry (:mod:`gpulite.backends.coverage`); ``--markdown``
prints docs/ops.md (the table and what is not covered and why); ``--summary`` prints the
README's one sentence.

Usage::

    gpulite ops
    gpulite ops --markdown > docs/ops.md
"""

from __future__ import annotations

import argparse

from gpulite.backends import coverage


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite ops``."""
    p = subparsers.add_parser("ops", help="operator coverage: every LiteRT builtin op x cpu/webgpu x float/int8",
                              description=__doc__.split("\n\n")[0])
    form = p.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true", help="print docs/ops.md (table and what is not covered)")
    form.add_argument("--summary", action="store_true", help="print only the README sentence")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``gpulite ops``; returns the exit status."""
    if args.markdown:
        print(coverage.markdown(), end="")
    elif args.summary:
        print(coverage.summary())
    else:
        print("\n".join(coverage.text()))
    return 0
