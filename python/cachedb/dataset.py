"""``CacheDataset``: a dataset held by cachedb's data nodes, streamed into PyTorch.

Every rank, and every DataLoader worker of a rank, asks the head for its own share of the epoch
(a training read: the options travel as ``cachedb-*`` call headers) and reads the endpoints the
head answers with straight from the data nodes that hold the rows. The server decides which
rows each reader gets and in which order, so the guarantees hold whoever reads:

* exactly once per epoch (``shares="exact"``), or equal shares by dropping (``"drop_last"``) or
  repeating (``"pad"``) a few rows;
* a shuffle that is a pure function of (dataset, seed, epoch), the same for any world size;
* resume from the number of rows a rank consumed (``state_dict`` / ``load_state_dict``).
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
import warnings
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight

try:
    import torch
    import torch.distributed as dist
    from torch.utils.data import IterableDataset, get_worker_info
except ImportError as e:  # only torch's own absence gets the hint
    if e.name is None or e.name.split(".")[0] != "torch":
        raise
    raise ImportError(
        "cachedb's PyTorch parts (CacheDataset, DataLoader, arrow_to_tensors, to_device) need torch; "
        "install it with: pip install 'cachedb[torch]' (from a clone: pip install './python[torch]')",
        name="torch",
    ) from e

from ._flight import FlightClients, option_headers

# torch warns that tensors sharing a read-only Arrow buffer are not writable; sharing it is the
# point (no copy). The buffer is one this client received and nothing else reads: a tensor
# written in place changes only its own rows of its own batch.
warnings.filterwarnings("ignore", message="The given buffer is not writable", category=UserWarning, module=r"cachedb\.dataset")

_RETRIABLE = (flight.FlightUnavailableError, flight.FlightTimedOutError, flight.FlightInternalError, ConnectionError)


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


_TORCH_TYPES = {
    pa.int8(): torch.int8, pa.int16(): torch.int16, pa.int32(): torch.int32, pa.int64(): torch.int64,
    pa.uint8(): torch.uint8, pa.uint16(): torch.uint16, pa.uint32(): torch.uint32, pa.uint64(): torch.uint64,
    pa.float16(): torch.float16, pa.float32(): torch.float32, pa.float64(): torch.float64,
}


def _share(values: pa.Array, dtype: torch.dtype) -> torch.Tensor:
    """A tensor over a fixed-width array's value buffer, without copying."""
    n = len(values)
    if n == 0:
        return torch.empty(0, dtype=dtype)
    width = values.type.bit_width // 8
    # A memoryview: torch asks the object itself for a writable buffer, which Arrow refuses for
    # read-only (received) buffers; the view keeps the buffer alive as long as the tensor.
    return torch.frombuffer(memoryview(values.buffers()[1]), dtype=dtype, count=n, offset=values.offset * width)


def column_to_tensor(column: pa.Array) -> Any:
    """Converts one Arrow column to a tensor, sharing its memory where the layout allows.

    Fixed-width numbers without nulls (and fixed-size lists of them, as 2-D tensors) share the
    Arrow buffer; booleans, numbers with nulls (as float64 with NaN), timestamps, dates, times and
    durations (as int64) and decimals (as float64) are converted; any other type becomes a Python
    list.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    t = column.type
    if t in _TORCH_TYPES:
        if column.null_count == 0:
            return _share(column, _TORCH_TYPES[t])
        filled = pc.fill_null(column.cast(pa.float64()), float("nan"))
        return _share(filled, torch.float64)
    if pa.types.is_boolean(t):
        return _share(pc.fill_null(column, False).cast(pa.uint8()), torch.uint8).bool()
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        return column_to_tensor(column.cast(pa.int64()))
    if pa.types.is_decimal(t):
        return column_to_tensor(column.cast(pa.float64()))
    if pa.types.is_fixed_size_list(t) and t.value_type in _TORCH_TYPES and column.null_count == 0:
        values = column.values.slice(column.offset * t.list_size, len(column) * t.list_size)
        if values.null_count == 0:
            return _share(values, _TORCH_TYPES[t.value_type]).reshape(len(column), t.list_size)
    return column.to_pylist()


def arrow_to_tensors(batch: pa.RecordBatch) -> Dict[str, Any]:
    """The default conversion of a record batch: one tensor (or list) per column, by name."""
    return {name: column_to_tensor(col) for name, col in zip(batch.schema.names, batch.columns)}


class _EndpointReader(threading.Thread):
    """Reads one endpoint into a bounded queue: record batches, then None, or an exception."""

    def __init__(self, clients: FlightClients, endpoint: flight.FlightEndpoint, depth: int):
        super().__init__(daemon=True)
        self.clients, self.endpoint = clients, endpoint
        self.queue: "queue.Queue[Any]" = queue.Queue(depth)
        self.stopped = threading.Event()
        self.reader: Optional[flight.FlightStreamReader] = None

    def _put(self, item: Any) -> bool:
        while not self.stopped.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run(self) -> None:
        try:
            self.reader = self.clients.do_get(self.endpoint)
            while not self.stopped.is_set():
                try:
                    chunk = self.reader.read_chunk()
                except StopIteration:
                    break
                if not self._put(chunk.data):
                    return
            self._put(None)
        except BaseException as e:  # handed to the consumer, which raises it
            self._put(e)

    def stop(self) -> None:
        self.stopped.set()
        if self.reader is not None:
            try:
                self.reader.cancel()
            except Exception:
                pass


def stream_endpoints(clients: FlightClients, endpoints: Sequence[flight.FlightEndpoint], prefetch: int, depth: int = 4) -> Iterator[pa.RecordBatch]:
    """Yields the record batches of endpoints in order, reading up to ``prefetch`` endpoints at
    once, each at most ``depth`` batches ahead of the consumer."""
    readers: List[_EndpointReader] = []
    next_endpoint = 0

    def fill() -> None:
        nonlocal next_endpoint
        while len(readers) < max(1, prefetch) and next_endpoint < len(endpoints):
            r = _EndpointReader(clients, endpoints[next_endpoint], depth)
            r.start()
            readers.append(r)
            next_endpoint += 1

    try:
        fill()
        while readers:
            item = readers[0].queue.get()
            if item is None:
                readers.pop(0)
                fill()
                continue
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        for r in readers:
            r.stop()


class CacheDataset(IterableDataset):
    """One epoch after another of a cachedb dataset, as batches of tensors.

    Args:
        address: the head's HOST:PORT (or grpc:// URI).
        dataset: the name of a dataset the cluster holds (``cachedb load``, CREATE TABLE … AS).
        sql: instead of ``dataset``, a query; it is materialized once as a dataset named after
            the query (reused by every job that asks for the same query).
        columns: the columns to read (default: all).
        batch_size: rows per batch. Workers take turns by batch.
        seed: the shuffle's seed; the order is a pure function of (dataset, seed, epoch).
        shuffle: False reads the dataset in its own order.
        shares: "exact" (every row once; rank shares differ by at most one row), "drop_last"
            (equal whole batches; a few rows skipped this epoch) or "pad" (equal shares; a few
            rows read twice).
        rank, world_size: default to torch.distributed's when it is initialized, else 0 and 1.
        prefetch: how many endpoints each worker reads at once.
        device: where batches go; on CUDA they are pinned and copied without blocking. With
            DataLoader workers, give the device to ``cachedb.DataLoader`` instead.
        retries: how many times a worker plans its read again after a data node failed.
        window_rows, chunk_rows: the shuffle's sizes (rows mixed together; rows kept together).

    Call ``set_epoch(n)`` before each epoch, as with DistributedSampler (without it, every
    iteration reads the same epoch); ``state_dict()`` and ``load_state_dict()`` resume an epoch
    where the rank stopped.
    """

    def __init__(
        self,
        address: str,
        dataset: Optional[str] = None,
        *,
        sql: Optional[str] = None,
        columns: Optional[Sequence[str]] = None,
        batch_size: int = 256,
        seed: int = 0,
        shuffle: bool = True,
        shares: str = "exact",
        epoch: int = 0,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        prefetch: int = 4,
        device: Optional[Any] = None,
        retries: int = 20,
        retry_wait: float = 0.25,
        window_rows: Optional[int] = None,
        chunk_rows: Optional[int] = None,
        timeout: Optional[float] = None,
        from_arrow_rb_to_tensor: Optional[Callable[[pa.RecordBatch], Any]] = None,
    ):
        super().__init__()
        # The epoch and where the rank resumes in it, in shared memory: DataLoader workers
        # (persistent ones too) see set_epoch and load_state_dict made in the main process.
        self._position = torch.zeros(3, dtype=torch.int64).share_memory_()
        if (dataset is None) == (sql is None):
            raise ValueError("give either dataset or sql")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, not {batch_size}")
        if shares not in ("exact", "drop_last", "pad"):
            raise ValueError(f"shares must be exact, drop_last or pad, not {shares!r}")
        self.address = address
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.shares = shares
        self.epoch = epoch
        self.prefetch = prefetch
        self.device = torch.device(device) if device is not None else None
        self.retries = retries
        self.retry_wait = retry_wait
        self.window_rows = window_rows
        self.chunk_rows = chunk_rows
        self.timeout = timeout
        if from_arrow_rb_to_tensor is not None:
            self.from_arrow_rb_to_tensor = from_arrow_rb_to_tensor  # type: ignore[method-assign, assignment]
        if rank is None or world_size is None:
            initialized = dist.is_available() and dist.is_initialized()
            rank = rank if rank is not None else (dist.get_rank() if initialized else 0)
            world_size = world_size if world_size is not None else (dist.get_world_size() if initialized else 1)
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, world_size {world_size})")
        self.rank, self.world_size = rank, world_size

        clients = FlightClients(address, timeout)
        try:
            if sql is not None:
                name, self.generation = self._materialize(clients, sql)
            else:
                assert dataset is not None  # checked above: exactly one of dataset and sql
                name, self.generation = dataset, self._generation(clients, dataset)
        finally:
            clients.close()
        self.dataset: str = name
        cols = "*" if columns is None else ", ".join(quote_ident(c) for c in columns)
        self.query = f"SELECT {cols} FROM {quote_ident(name)}"
        # Batches the rank consumed since _offset (counted by the iterator in this process, or
        # by cachedb.DataLoader).
        self._consumed = 0
        self._len: Optional[int] = None

    # The shared position: the epoch, the rows of the rank's share consumed before this
    # iteration (the resume offset), and whether the epoch is complete.
    @property
    def epoch(self) -> int:
        return int(self._position[0])

    @epoch.setter
    def epoch(self, value: int) -> None:
        self._position[0] = int(value)

    @property
    def _offset(self) -> int:
        return int(self._position[1])

    @_offset.setter
    def _offset(self, value: int) -> None:
        self._position[1] = int(value)

    @property
    def _complete(self) -> bool:
        return bool(self._position[2])

    @_complete.setter
    def _complete(self, value: bool) -> None:
        self._position[2] = int(bool(value))

    # -- what a job asks of the dataset -------------------------------------------------------

    def from_arrow_rb_to_tensor(self, batch: pa.RecordBatch) -> Any:
        """Converts one batch (exactly ``batch_size`` rows, fewer at the end of a share).
        Override it, or pass ``from_arrow_rb_to_tensor=``, for another layout."""
        return arrow_to_tensors(batch)

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch the next iteration reads (from its beginning)."""
        if epoch != self.epoch or self._complete:
            self._offset, self._consumed, self._complete = 0, 0, False
        self.epoch = epoch

    def state_dict(self) -> Dict[str, Any]:
        """Where this rank is: the epoch and the rows of its share it consumed."""
        return {
            "dataset": self.dataset,
            "generation": self.generation,
            "seed": self.seed,
            "epoch": self.epoch,
            "world_size": self.world_size,
            "rank": self.rank,
            "batch_size": self.batch_size,
            "shares": self.shares,
            "offset": self.consumed_rows(),
            "complete": self._complete,
        }

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Resumes from ``state_dict()``: the next iteration continues the same epoch, in the same
        order, with the first row the rank had not consumed."""
        for key in ("dataset", "seed", "world_size", "rank", "shares"):
            if state[key] != getattr(self, key):
                raise ValueError(f"the state is of {key}={state[key]!r}; this reader has {key}={getattr(self, key)!r}")
        if state["generation"] != self.generation:
            raise ValueError(f"the state is of generation {state['generation']} of {self.dataset!r}; the cluster now holds generation {self.generation}")
        self.epoch = state["epoch"]
        self._offset, self._consumed, self._complete = int(state["offset"]), 0, bool(state.get("complete"))

    def consumed_rows(self) -> int:
        """Rows of the rank's share consumed in this epoch, counting from its beginning."""
        return self._offset + self._consumed * self.batch_size

    def rank_rows(self) -> int:
        """How many rows this rank reads per epoch."""
        clients = FlightClients(self.address, self.timeout)
        try:
            options = {**self._options(0, 1, 0), "offset": 0}  # the whole share, not what is left
            return clients.flight_info(self.query, option_headers(options)).total_records
        finally:
            clients.close()

    def __len__(self) -> int:
        """Batches this rank reads per whole epoch (the last may be short with shares="exact").
        The share's size does not change between epochs; it is asked of the head once."""
        if self._len is None:
            self._len = -(-self.rank_rows() // self.batch_size)
        return self._len

    def note_consumed(self, batches: int = 1) -> None:
        """Counts batches the training loop consumed (cachedb.DataLoader calls it)."""
        self._consumed += batches

    def note_complete(self) -> None:
        self._complete = True

    def _begin(self) -> None:
        """Starts an iteration in the main process: from the resume offset, or, when the epoch
        was read to its end, from its beginning again (as a sampler without set_epoch does)."""
        if self._complete:
            self._offset, self._complete = 0, False
        self._consumed = 0

    # -- reading ------------------------------------------------------------------------------

    def _options(self, worker: int, num_workers: int, start: int) -> Dict[str, Any]:
        opts = {
            "seed": self.seed, "epoch": self.epoch, "shuffle": self.shuffle, "shares": self.shares,
            "rank": self.rank, "world_size": self.world_size, "worker": worker, "num_workers": num_workers,
            "batch_size": self.batch_size, "offset": self._offset, "generation": self.generation,
            "window_rows": self.window_rows, "chunk_rows": self.chunk_rows,
        }
        if start:
            opts["start"] = start
        return opts

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        in_process = info is None
        if in_process:
            self._begin()
        device = self.device if in_process else None
        for batch in self._batches(worker, num_workers):
            out = self.from_arrow_rb_to_tensor(batch)
            if device is not None:
                out = to_device(out, device)
            # A batch counts as consumed once it is handed over.
            if in_process:
                self._consumed += 1
            yield out
        if in_process:
            self._complete = True

    def _batches(self, worker: int, num_workers: int) -> Iterator[pa.RecordBatch]:
        """This worker's batches in order, planned again after a failure from the first batch it
        had not yielded yet."""
        b = self.batch_size
        clients = FlightClients(self.address, self.timeout)
        yielded, failures = 0, 0
        try:
            while True:
                start = self._offset + (worker + yielded * num_workers) * b if yielded else 0
                try:
                    info = clients.flight_info(self.query, option_headers(self._options(worker, num_workers, start)))
                    for batch in rebatch(stream_endpoints(clients, info.endpoints, self.prefetch), b):
                        yield batch
                        yielded, failures = yielded + 1, 0
                    return
                except _RETRIABLE:
                    failures += 1
                    if failures > self.retries:
                        raise
                    clients.close()
                    clients = FlightClients(self.address, self.timeout)
                    time.sleep(min(self.retry_wait * failures, 2.0))
        finally:
            clients.close()

    @staticmethod
    def _generation(clients: FlightClients, name: str) -> int:
        generation = CacheDataset._held_generation(clients, name)
        if generation is None:
            raise LookupError(f"the cluster holds no dataset {name!r}; load it first (cachedb load SPEC, or connect().load(spec))")
        return generation

    @staticmethod
    def _held_generation(clients: FlightClients, name: str) -> Optional[int]:
        """The generation of the dataset the cluster holds under name, or None."""
        t = clients.read_table(f"SELECT generation, state FROM system.datasets WHERE name = {quote_string(name)}")
        if t.num_rows == 0:
            return None
        return int(t.column("generation")[0].as_py())

    @staticmethod
    def _materialize(clients: FlightClients, sql: str) -> Tuple[str, int]:
        name = "sql_" + hashlib.sha256(sql.encode()).hexdigest()[:16]
        try:
            result = None
            for message in clients.action("cachedb.load", {"name": name, "sql": sql}):
                result = message.get("dataset", result)
            if result is not None:
                return name, int(result["generation"])
        except pa.ArrowException:
            # The head refuses the load (ALREADY_EXISTS) when the query's dataset was made
            # earlier from older table snapshots; it stays what it was made from until it is
            # dropped (or replaced with `cachedb load` and replace: true). pyarrow's Flight client
            # reports that gRPC code only inside the message text, so rather than match text the
            # dataset is looked up: held means use it, absent means the failure was another.
            generation = CacheDataset._held_generation(clients, name)
            if generation is None:
                raise
            return name, generation
        return name, CacheDataset._generation(clients, name)


def rebatch(record_batches: Iterable[pa.RecordBatch], batch_size: int) -> Iterator[pa.RecordBatch]:
    """Cuts a stream of record batches into batches of batch_size rows, the last one possibly
    shorter. A batch inside one record batch is a slice of it: no copy."""
    pending: List[pa.RecordBatch] = []
    pending_rows = 0
    for rb in record_batches:
        at = 0
        while at < rb.num_rows:
            take = min(batch_size - pending_rows, rb.num_rows - at)
            pending.append(rb.slice(at, take))
            pending_rows, at = pending_rows + take, at + take
            if pending_rows == batch_size:
                yield _combine(pending)
                pending, pending_rows = [], 0
    if pending_rows:
        yield _combine(pending)


def _combine(pieces: List[pa.RecordBatch]) -> pa.RecordBatch:
    if len(pieces) == 1:
        return pieces[0]
    return pa.Table.from_batches(pieces).combine_chunks().to_batches()[0]


def to_device(batch: Any, device: torch.device) -> Any:
    """Moves the tensors of a batch (a tensor, or a dict, list or tuple of them) to device; to
    CUDA from pinned memory without blocking."""
    if isinstance(batch, torch.Tensor):
        if device.type == "cuda" and not batch.is_pinned():
            batch = batch.pin_memory()
        return batch.to(device, non_blocking=device.type == "cuda")
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


class DataLoader(torch.utils.data.DataLoader):
    """A torch DataLoader over a CacheDataset that knows how far the training loop got.

    The dataset yields whole batches, so ``batch_size`` is None. Each batch the loop takes is
    counted, so ``state_dict()`` here (or on the dataset) says where to resume even though the
    workers read ahead. ``device`` moves each batch there (from pinned memory, without
    blocking, on CUDA).

    Workers are spawned (fresh interpreters) and persist across epochs by default: forking a
    process whose gRPC clients have run can deadlock the child, and persistent workers pay their
    start once (they follow set_epoch through shared memory). As with any spawned workers, the
    script's entry point must be guarded by ``if __name__ == "__main__":``.
    """

    def __init__(self, dataset: CacheDataset, device: Optional[Any] = None, **kwargs):
        kwargs.setdefault("batch_size", None)
        if kwargs.get("num_workers", 0) > 0:
            kwargs.setdefault("multiprocessing_context", "spawn")
            kwargs.setdefault("persistent_workers", True)
        if kwargs["batch_size"] is not None:
            raise ValueError("CacheDataset yields whole batches: leave batch_size to the dataset")
        if device is not None and torch.device(device).type == "cuda":
            kwargs.setdefault("pin_memory", True)
        super().__init__(dataset, **kwargs)
        self.device = torch.device(device) if device is not None else None

    def __iter__(self):
        ds: CacheDataset = self.dataset  # type: ignore[assignment]
        ds._begin()
        for batch in super().__iter__():
            if self.device is not None:
                batch = to_device(batch, self.device)
            if self.num_workers > 0:
                ds.note_consumed()
            yield batch
        if self.num_workers > 0:
            ds.note_complete()

    def state_dict(self) -> Dict[str, Any]:
        return self.dataset.state_dict()  # type: ignore[attr-defined]

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.dataset.load_state_dict(state)  # type: ignore[attr-defined]
