"""The shared core every stage family stands on: configs (`config`), where every file of a
run lives (`layout`), the first turn's table contracts (`contracts`), the norm catalog
(`catalog`), reading and writing files (`files`), the one check of a cell's table
(`cell_tables`), formatting (`formatting`), errors (`errors`) and the stage scripts' command
line (`cli`). It imports nothing above it.
"""
