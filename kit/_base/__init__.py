"""The ground floor: errors, whole-file writes, safe reads, formats and waits every wing may use.

Its modules import nothing of Kit above this floor (``errors`` imports
nothing of Kit at all), so any wing may use them without loading another.
"""
