"""Errors the client raises itself."""


class UnavailableError(ConnectionError):
    """A training read could not be served within the reader's retries: a data node holding the
    rows stayed unreachable, or the dataset's partitions were still being made again. The
    message names the dataset and the partitions, and the last error the reader saw."""
