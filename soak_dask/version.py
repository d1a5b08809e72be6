"""The installed package's version, at the bottom of the import graph (results, saved models and
``soak --version`` record it without importing the package)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("soak_dask")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"
