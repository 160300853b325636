"""`python -m losona.catalog`, kept at its path: the code is losona.core.catalog."""

from losona.core.catalog import main

if __name__ == "__main__":
    main()
