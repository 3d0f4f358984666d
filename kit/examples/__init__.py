"""Runnable examples; their configs ship with the package."""
