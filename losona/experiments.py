"""`python -m losona.experiments`, kept at its path: the code is losona.results.experiments."""

import sys

from losona.results.experiments import main

if __name__ == "__main__":
    sys.exit(main())
