"""`python -m losona.reproduce`: see losona/reproduce/cli.py."""

import sys

from losona.reproduce.cli import main

sys.exit(main())
