"""``python -m ddrl``: the same command line as ``ddrl``."""

import sys

from ddrl.cli import main

sys.exit(main())
