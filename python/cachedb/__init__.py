"""cachedb's Python client.

* ``cachedb.connect(address)``: ad-hoc SQL (pyarrow Tables) and dataset loading.
* ``cachedb.CacheDataset``: a ``torch.utils.data.IterableDataset`` streaming a cached dataset's
  epochs, sharded across ranks and DataLoader workers, shuffled, resumable.
* ``cachedb.DataLoader``: a torch DataLoader that counts what the loop consumed, for resuming.
* ``cachedb.flight_call_options()``: the login header for plain ``pyarrow.flight`` calls (a
  Kubeflow ``DataCacheDataset`` reading a cache that requires one).

The PyTorch parts need torch (``pip install 'cachedb[torch]'``, from a clone
``pip install './python[torch]'``); ``connect`` does not.
"""

from typing import Any

from ._flight import flight_call_options
from .client import Connection, connect
from .errors import UnavailableError

# The package's version: pyproject.toml reads it from here (setuptools dynamic version).
__version__ = "0.1.0"

__all__ = [
    "CacheDataset",
    "Connection",
    "DataLoader",
    "UnavailableError",
    "arrow_to_tensors",
    "connect",
    "flight_call_options",
    "to_device",
]


def __getattr__(name: str) -> Any:
    # torch is imported only when its parts are used.
    if name in ("CacheDataset", "DataLoader", "arrow_to_tensors", "to_device"):
        from . import dataset

        return getattr(dataset, name)
    raise AttributeError(f"module 'cachedb' has no attribute {name!r}")
