"""Collection settings shared by the test suite and the doctests."""

# Importing kit/__main__.py runs the command line; it has no doctests anyway.
collect_ignore = ["kit/__main__.py"]
