"""The shared core every stage family stands on: configs, the run layout, the first turn's
table contracts, the norm catalog, files, cell checks, formatting, errors and the stage
scripts' command line. It imports nothing above it."""
