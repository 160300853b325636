"""`python -m losona.run_logs`, kept at its path: the code is losona.report.run_logs."""

import sys

from losona.report.run_logs import main

if __name__ == "__main__":
    sys.exit(main())
