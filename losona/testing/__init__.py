"""Test helpers shipped with the package so tests and benchmarks share them."""
