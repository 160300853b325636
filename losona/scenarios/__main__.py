"""`python -m losona.scenarios`: see losona/scenarios/cli.py."""

from losona.scenarios.cli import main

main()
