"""gpulite's version (a leaf module: the package and its parts read it without importing ``gpulite``)."""

__version__ = "0.1.0"
