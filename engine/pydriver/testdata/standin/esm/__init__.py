"""Stand-in of Biohub's esm package for chaperone's tests (see _standin)."""

__version__ = "3.4.1+standin"
