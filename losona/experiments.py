"""`python -m losona.experiments`, kept at its path: the code is losona.report.experiments."""

import sys

from losona.report.experiments import main

if __name__ == "__main__":
    sys.exit(main())
