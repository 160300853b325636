"""`python -m losona.publishable`, kept at its path: the code is losona.provenance.publishable."""

import sys

from losona.provenance.publishable import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
