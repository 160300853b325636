"""The pipeline's stages as functions, one module per stage (named as its dvc.yaml stage),
above the stage families whose code they call. Each stages/<name>.py composes the config
with Hydra and calls its module's function; tests call the functions in-process.
"""
