"""The version of neardup, in one place (modules import it from here, not from the package)."""

__version__ = "0.2.0"
