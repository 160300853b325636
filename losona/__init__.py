"""LoSoNA: the reference pipeline for the Local Social Norm Adaptation benchmark."""

__version__ = "0.1.0"
