"""The ``gpulite`` commands, one module each (listed in :data:`gpulite.cli.COMMANDS`).

Each command module has ``register(subparsers)``, which adds its subparser and sets
``run=run`` as its default, and ``run(args) -> int``, which returns the exit status.
:mod:`~gpulite.commands.common` holds what they share (exit codes, error lines, reading and
writing images, output checks, timing figures); :mod:`~gpulite.commands.annotate` draws
results and :mod:`~gpulite.commands.bench_plot` draws ``gpulite bench --plot``'s chart.
"""
