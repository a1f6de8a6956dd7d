"""Stand-in of the esm package (3.4 layout) for chaperone's tests (see _standin)."""

__version__ = "3.4.3+standin"
