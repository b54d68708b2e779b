"""``python -m gpulite ...``: the ``gpulite`` command (:func:`gpulite.cli.main`)."""

import sys

from gpulite.cli import main

sys.exit(main())
