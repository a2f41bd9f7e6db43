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
import json
import queue
import threading
import time
from typing import Any, Callable, Dict, Generator, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

import pyarrow as pa
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

from ._flight import FlightClients, Security, option_headers
from ._merge import merge_node_streams, unit_rows
from .errors import UnavailableError
from .resume import Position, decode_resumed, encode_resumed, resume_position, state_of
from .tensors import Nulls, arrow_to_tensors, check_nulls, column_to_tensor

__all__ = ["CacheDataset", "DataLoader", "arrow_to_tensors", "column_to_tensor", "rebatch", "to_device"]

_RETRIABLE = (flight.FlightUnavailableError, flight.FlightTimedOutError, flight.FlightInternalError, ConnectionError)


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


class _Producer(threading.Thread):
    """A daemon thread that hands items to a consumer through a bounded queue until stopped."""

    def __init__(self, depth: int):
        super().__init__(daemon=True)
        self.queue: "queue.Queue[Any]" = queue.Queue(depth)
        self.stopped = threading.Event()

    def _put(self, item: Any) -> bool:
        """Puts item, waiting for room; False (and nothing put) once the thread is stopped."""
        while not self.stopped.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False


class _EndpointReader(_Producer):
    """Reads one endpoint into a bounded queue: record batches (with their app_metadata, as
    pairs, when with_metadata), then None, or an exception."""

    def __init__(self, clients: FlightClients, endpoint: flight.FlightEndpoint, depth: int, with_metadata: bool = False):
        super().__init__(depth)
        self.clients, self.endpoint, self.with_metadata = clients, endpoint, with_metadata
        self.reader: Optional[flight.FlightStreamReader] = None

    def run(self) -> None:
        try:
            self.reader = self.clients.do_get(self.endpoint)
            while not self.stopped.is_set():
                try:
                    chunk = self.reader.read_chunk()
                except StopIteration:
                    break
                if not self._put((chunk.data, chunk.app_metadata) if self.with_metadata else chunk.data):
                    return
            self._put(None)
        except BaseException as e:  # handed to the consumer, which raises it
            self._put(_EndpointFailed(e, self.clients.endpoint_uri(self.endpoint), endpoint_partitions(self.endpoint)))

    def stop(self) -> None:
        self.stopped.set()
        if self.reader is not None:
            try:
                self.reader.cancel()
            except Exception:
                pass


class _EndpointFailed(Exception):
    """An endpoint's read failed: the error, where the endpoint was read and its partitions."""

    def __init__(self, error: BaseException, uri: str, partitions: List[int]):
        super().__init__(str(error))
        self.error, self.uri, self.partitions = error, uri, partitions


def endpoint_partitions(endpoint: flight.FlightEndpoint) -> List[int]:
    """The dataset partitions a training read's endpoint reads (its app_metadata), if it says."""
    try:
        return [int(p) for p in json.loads(endpoint.app_metadata or b"{}").get("partitions") or []]
    except (ValueError, TypeError, AttributeError):
        return []


# How long stopping a stream waits for each endpoint reader's call to end.
READER_STOP_S = 60.0


def stream_endpoints(
    clients: FlightClients, endpoints: Sequence[flight.FlightEndpoint], prefetch: int, depth: int = 4
) -> Generator[pa.RecordBatch, None, None]:
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
            if isinstance(item, _EndpointFailed):
                raise item.error from item
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        # The readers' calls must be over before the caller closes the clients they use (a
        # Flight client closed under a call in another thread crashes the process).
        for r in readers:
            r.stop()
        for r in readers:
            r.join(timeout=READER_STOP_S)


class _Merger(_Producer):
    """Merges started node-stream readers (cachedb._merge) into a bounded queue: merged record
    batches, then None, or the exception the merge raised. Merging in a thread of its own lets
    the next unit be merged (Arrow's take, which releases the GIL) while the consumer converts
    and yields the one before."""

    def __init__(self, readers: Sequence[_EndpointReader], schema: pa.Schema, rows: int, first: int, depth: int = 1):
        super().__init__(depth)
        self.readers, self.schema, self.rows, self.first = readers, schema, rows, first

    def run(self) -> None:
        try:
            for unit in merge_node_streams(self.readers, self.schema, self.rows, self.first):
                if not self._put(unit):
                    return
            self._put(None)
        except BaseException as e:  # handed to the consumer, which raises it
            self._put(e)

    def stop(self) -> None:
        """Ends the merge: stops its readers, and wakes it where it waits for one of them."""
        self.stopped.set()
        for r in self.readers:
            r.stop()
        for r in self.readers:
            try:
                r.queue.put_nowait(None)  # a stopped reader sends nothing more
            except queue.Full:
                pass  # the merge is not waiting for this one


def merge_endpoints(
    clients: FlightClients, endpoints: Sequence[flight.FlightEndpoint], schema: pa.Schema, rows: int, first: int = 0, depth: int = 4
) -> Generator[pa.RecordBatch, None, None]:
    """Yields the rows of a training read planned as node streams (one endpoint per data node,
    all read at once; cachedb._merge) in the reader's order, in record batches of ``rows``
    rows (the last may be shorter; from ``first`` rows doubling, when given), merged a unit
    ahead in a thread of their own."""
    readers = [_EndpointReader(clients, ep, depth, with_metadata=True) for ep in endpoints]
    merger = _Merger(readers, schema, rows, first)
    try:
        for r in readers:
            r.start()
        merger.start()
        while True:
            item = merger.queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        # As in stream_endpoints: the calls end before the clients are closed.
        merger.stop()
        merger.join(timeout=READER_STOP_S)
        for r in readers:
            r.join(timeout=READER_STOP_S)


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
        prefetch: how many endpoints each worker reads at once, when a read has ordered
            endpoints; a read of a dataset on several data nodes reads every node's stream at
            once and merges them (cachedb._merge).
        device: where batches go; on CUDA they are pinned and copied without blocking. With
            DataLoader workers, give the device to ``cachedb.DataLoader`` instead.
        retries, retry_wait: after a data node failed or the dataset's partitions are being made
            again, a worker plans its read again up to ``retries`` times in a row, waiting
            ``retry_wait`` seconds doubling up to 5 s between attempts (about 3 minutes at the
            defaults), then raises cachedb.UnavailableError naming the dataset and partitions.
        window_rows, chunk_rows: the shuffle's sizes (rows mixed together; rows kept together).
        nulls: what a null in an integer or boolean column becomes (cachedb.tensors): "error"
            (the default: raise, naming the column), "float" (float64 with NaN in every batch)
            or "mask" (the integer dtype, 0 for null, and a bool ``<name>_valid`` tensor in
            every batch); one choice for all columns or a dict by column name.
        tls, tls_ca, tls_cert, tls_key, user, password, token: TLS and login, as for
            ``cachedb.connect`` (docs/security.md); every DataLoader worker logs in with them
            and sends the token to the data nodes too.

    Call ``set_epoch(n)`` before each epoch, as with DistributedSampler (without it, every
    iteration reads the same epoch); ``state_dict()`` and ``load_state_dict()`` resume an epoch
    where the rank stopped, on the same world size or (given every rank's state) another.
    """

    # Longest wait between two attempts of a read, in seconds.
    MAX_RETRY_WAIT = 5.0
    # How a reader waits between attempts (tests replace it).
    _sleep = staticmethod(time.sleep)
    # Bytes of shared memory for the earlier jobs of a resumed epoch (the option resume).
    RESUME_BYTES = 1 << 16

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
        retries: int = 40,
        retry_wait: float = 0.25,
        window_rows: Optional[int] = None,
        chunk_rows: Optional[int] = None,
        timeout: Optional[float] = None,
        nulls: Nulls = "error",
        from_arrow_rb_to_tensor: Optional[Callable[[pa.RecordBatch], Any]] = None,
        tls: Optional[bool] = None,
        tls_ca: Optional[str] = None,
        tls_cert: Optional[str] = None,
        tls_key: Optional[str] = None,
        user: Optional[str] = None,
        password: Optional[str] = None,
        token: Optional[str] = None,
    ):
        super().__init__()
        # Where the rank is, in shared memory, so that DataLoader workers (persistent ones too)
        # see set_epoch and load_state_dict made in the main process: the epoch, the rows of the
        # rank's share consumed before this iteration (the resume offset), whether the epoch is
        # complete, and the length of the earlier jobs of the epoch (the option resume, as text
        # in _resumed_text).
        self._position = torch.zeros(4, dtype=torch.int64).share_memory_()
        self._resumed_text = torch.zeros(self.RESUME_BYTES, dtype=torch.uint8).share_memory_()
        if (dataset is None) == (sql is None):
            raise ValueError("give either dataset or sql")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, not {batch_size}")
        if shares not in ("exact", "drop_last", "pad"):
            raise ValueError(f"shares must be exact, drop_last or pad, not {shares!r}")
        check_nulls(nulls)
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
        self.security = Security.of(address, tls=tls, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key, user=user, password=password, token=token)
        self.nulls = nulls
        if from_arrow_rb_to_tensor is not None:
            self.from_arrow_rb_to_tensor = from_arrow_rb_to_tensor  # type: ignore[method-assign, assignment]
        if rank is None or world_size is None:
            initialized = dist.is_available() and dist.is_initialized()
            rank = rank if rank is not None else (dist.get_rank() if initialized else 0)
            world_size = world_size if world_size is not None else (dist.get_world_size() if initialized else 1)
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, world_size {world_size})")
        self.rank, self.world_size = rank, world_size

        clients = FlightClients(address, timeout, self.security)
        try:
            if sql is not None:
                name = self._materialize(clients, sql)
            else:
                assert dataset is not None  # checked above: exactly one of dataset and sql
                name = dataset
                self._generation(clients, dataset)
            self.dataset: str = name
            cols = "*" if columns is None else ", ".join(quote_ident(c) for c in columns)
            self.query = f"SELECT {cols} FROM {quote_ident(name)}"
            # The rank's whole share, planned once: it says the dataset's order key, which
            # every later read is pinned to (a dataset made again with another order is
            # refused, one made again with the same order is read on), and the share's size.
            info = clients.flight_info(self.query, option_headers(self._options(0, 1, 0, whole=True)))
        finally:
            clients.close()
        meta = json.loads(info.app_metadata or b"{}")
        self.generation: int = int(meta.get("generation", 0))
        self.order_key: str = str(meta.get("order_key", ""))
        self.epoch_rows: int = int(meta.get("epoch_rows", -1))
        self._rank_rows: int = info.total_records
        check_nulls(nulls, info.schema.names)
        # Batches the rank consumed since _offset (counted by the iterator in this process, or
        # by cachedb.DataLoader).
        self._consumed = 0

    # The shared position.
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

    @property
    def _resumed(self) -> List[List[int]]:
        n = int(self._position[3])
        if n == 0:
            return []
        return decode_resumed(bytes(self._resumed_text[:n].tolist()).decode())

    @_resumed.setter
    def _resumed(self, jobs: Sequence[Sequence[int]]) -> None:
        text = encode_resumed(jobs).encode()
        if len(text) > self.RESUME_BYTES:
            raise ValueError(f"the earlier jobs of the epoch take {len(text)} bytes; at most {self.RESUME_BYTES}")
        self._resumed_text[: len(text)] = torch.tensor(list(text), dtype=torch.uint8)
        self._position[3] = len(text)

    # -- what a job asks of the dataset -------------------------------------------------------

    def from_arrow_rb_to_tensor(self, batch: pa.RecordBatch) -> Any:
        """Converts one batch (exactly ``batch_size`` rows, fewer at the end of a share): one
        tensor per column, with dtypes from the schema (``nulls`` says what nulls become).
        Override it, or pass ``from_arrow_rb_to_tensor=``, for another layout."""
        return arrow_to_tensors(batch, self.nulls)

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch the next iteration reads (from its beginning)."""
        if epoch != self.epoch or self._complete:
            self._offset, self._consumed, self._complete, self._resumed = 0, 0, False, []
        self.epoch = epoch

    def _settings(self) -> Dict[str, Any]:
        return {
            "dataset": self.dataset, "generation": self.generation, "order_key": self.order_key,
            "seed": self.seed, "shuffle": self.shuffle, "window_rows": self.window_rows, "chunk_rows": self.chunk_rows,
            "batch_size": self.batch_size, "shares": self.shares, "world_size": self.world_size, "rank": self.rank,
        }

    def state_dict(self) -> Dict[str, Any]:
        """Where this rank is, with the settings that decide its rows and their order (the
        dataset's order key, seed, shuffle and its sizes, batch size, shares, world size, rank):
        the epoch and the rows of its share consumed, and the earlier jobs of the epoch when this
        job resumed one on another world size. After the rank read its whole share, the state
        is the beginning of the next epoch."""
        return state_of(self._settings(), Position(self.epoch, self.consumed_rows(), self._resumed), self._complete)

    def load_state_dict(self, state: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]) -> None:
        """Resumes from ``state_dict()``: the next iteration continues the epoch, in the same
        order, with the first row the rank had not consumed (a state saved at the end of an
        epoch: the next epoch). ``state`` is this rank's own state, or a list of the states of
        every rank of the job that saved them: then this reader may be of another world size,
        and the new ranks share what the old ones left of the epoch. A state saved with other
        settings, or of a dataset whose order has changed, is refused with ValueError."""
        position = resume_position(state, self._settings())
        self.epoch = position.epoch
        self._offset, self._consumed, self._complete = position.offset, 0, False
        self._resumed = position.resumed

    def consumed_rows(self) -> int:
        """Rows of the rank's share consumed in this epoch, counting from its beginning."""
        return self._offset + self._consumed * self.batch_size

    def rank_rows(self) -> int:
        """How many rows this rank reads per whole epoch."""
        return self._rank_rows

    def __len__(self) -> int:
        """Batches this rank reads per whole epoch (the last may be short with shares="exact")."""
        return -(-self._rank_rows // self.batch_size)

    def note_consumed(self, batches: int = 1) -> None:
        """Counts batches the training loop consumed (cachedb.DataLoader calls it)."""
        self._consumed += batches

    def note_complete(self) -> None:
        self._complete = True

    def _begin(self) -> None:
        """Starts an iteration in the main process: from the resume offset, or, when the epoch
        was read to its end, from its beginning again (as a sampler without set_epoch does)."""
        if self._complete:
            self._offset, self._complete, self._resumed = 0, False, []
        self._consumed = 0

    # -- reading ------------------------------------------------------------------------------

    def _options(self, worker: int, num_workers: int, start: int, whole: bool = False) -> Dict[str, Any]:
        """A worker's read options; whole: the rank's whole share of an epoch, unpinned."""
        opts = {
            "seed": self.seed, "epoch": self.epoch, "shuffle": self.shuffle, "shares": self.shares,
            "rank": self.rank, "world_size": self.world_size, "worker": worker, "num_workers": num_workers,
            "batch_size": self.batch_size, "window_rows": self.window_rows, "chunk_rows": self.chunk_rows,
            # One endpoint per data node, merged here (merge_endpoints), rather than one per
            # stretch of rows a node holds: a batch holds rows of every partition.
            "node_streams": True,
        }
        if not whole:
            opts.update(offset=self._offset, order_key=self.order_key)
            resumed = self._resumed
            if resumed:
                opts["resume"] = encode_resumed(resumed)
        if start:
            opts["start"] = start
        if num_workers > 1 and self._worker_batches > 1:
            opts["worker_batches"] = self._worker_batches
        return opts

    # Batches a DataLoader worker hands over at once (cachedb.DataLoader sets it; see Turn).
    _worker_batches = 1

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        in_process = info is None
        if in_process:
            self._begin()
        device = self.device if in_process else None
        turn = 1 if in_process else self._worker_batches
        for batch in self._batches(worker, num_workers, turn):
            out = batch.tensors if isinstance(batch, _Converted) else self.from_arrow_rb_to_tensor(batch)
            if turn > 1:
                # Several batches at once, cut apart by cachedb.DataLoader in the main process.
                yield Turn(out, self.batch_size)
                continue
            if device is not None:
                out = to_device(out, device)
            # A batch counts as consumed once it is handed over.
            if in_process:
                self._consumed += 1
            yield out
        if in_process:
            self._complete = True

    def retry_waits(self) -> Iterator[float]:
        """The waits before each attempt after a failure: retry_wait doubling up to
        MAX_RETRY_WAIT, ``retries`` of them."""
        wait = self.retry_wait
        for _ in range(self.retries):
            yield min(wait, self.MAX_RETRY_WAIT)
            wait *= 2

    def _batches(self, worker: int, num_workers: int, turn: int = 1) -> Iterator[Union[pa.RecordBatch, "_Converted"]]:
        """This worker's batches in order, planned again after a failure from the first batch it
        had not yielded yet. With turn > 1 the worker reads turns of that many consecutive
        batches and yields each turn as one record batch. A batch merged from node streams may
        come converted already (_Converted: see _cut)."""
        b = self.batch_size
        clients = FlightClients(self.address, self.timeout, self.security)
        yielded = 0  # batches of b rows
        waits = self.retry_waits()
        failures, began = 0, time.monotonic()
        try:
            while True:
                # The worker's yielded-th batch is batch j of its t-th turn.
                t, j = divmod(yielded, turn)
                start = self._offset + ((t * num_workers + worker) * turn + j) * b if yielded else 0
                try:
                    info = clients.flight_info(self.query, option_headers(self._options(worker, num_workers, start)))
                    if json.loads(info.app_metadata or b"{}").get("node_streams") and len(info.endpoints) > 1:
                        stream = merge_endpoints(clients, info.endpoints, info.schema, unit_rows(b * turn), b * turn)
                        batches: Iterator[Any] = self._cut(stream, b * turn)
                    else:
                        stream = stream_endpoints(clients, info.endpoints, self.prefetch)
                        batches = rebatch(stream, b * turn)
                    try:
                        for batch in batches:
                            yield batch
                            if failures:
                                waits, failures, began = self.retry_waits(), 0, time.monotonic()
                            yielded += -(-batch.num_rows // b)
                    finally:
                        # Its readers end before the clients they use are closed.
                        stream.close()
                    return
                except _RETRIABLE as e:
                    failures += 1
                    wait = next(waits, None)
                    if wait is None:
                        raise UnavailableError(
                            f"{self._describe_failure(e)} (gave up after {failures} attempts in {time.monotonic() - began:.0f} s; "
                            "CacheDataset(retries=, retry_wait=) set how long a reader waits)"
                        ) from e
                    clients.close()
                    clients = FlightClients(self.address, self.timeout, self.security)
                    self._sleep(wait)
        finally:
            clients.close()

    def _cut(self, units: Iterable[pa.RecordBatch], rows: int) -> Iterator[Union[pa.RecordBatch, "_Converted"]]:
        """Cuts merged units (multiples of rows) into batches of rows. With the default
        converter a unit without nulls is converted once and its tensors sliced per batch (a
        unit is fresh memory, tens of batches: one conversion instead of one per batch);
        otherwise each batch is converted as it comes, by whatever converts batches."""
        whole = _converts_by_default(self)
        for unit in units:
            n = unit.num_rows
            if whole and all(c.null_count == 0 for c in unit.columns):
                tensors = self.from_arrow_rb_to_tensor(unit)
                for at, batch in zip(range(0, n, rows), _split_rows(tensors, n, rows)):
                    yield _Converted(batch, min(rows, n - at))
                continue
            for at in range(0, n, rows):
                yield unit.slice(at, rows)

    def _describe_failure(self, e: BaseException) -> str:
        """What failed, naming the dataset and, when a data node failed, its partitions."""
        cause = e.__cause__
        if isinstance(cause, _EndpointFailed):
            parts = ", ".join(map(str, cause.partitions)) or "unknown"
            return f"reading partitions {parts} of dataset {self.dataset!r} from data node {cause.uri} failed: {e}"
        return f"planning the read of dataset {self.dataset!r} failed: {e}"

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
    def _materialize(clients: FlightClients, sql: str) -> str:
        name = "sql_" + hashlib.sha256(sql.encode()).hexdigest()[:16]
        try:
            for _ in clients.action("cachedb.load", {"name": name, "sql": sql}):
                pass
        except pa.ArrowException:
            # The head refuses the load (ALREADY_EXISTS) when the query's dataset was made
            # earlier from older table snapshots; it stays what it was made from until it is
            # dropped (or replaced with `cachedb load` and replace: true). pyarrow's Flight client
            # reports that gRPC code only inside the message text, so rather than match text the
            # dataset is looked up: held means use it, absent means the failure was another.
            if CacheDataset._held_generation(clients, name) is None:
                raise
        CacheDataset._generation(clients, name)
        return name


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


class _Converted:
    """A batch already converted (CacheDataset._cut): its tensors and rows."""

    __slots__ = ("tensors", "num_rows")

    def __init__(self, tensors: Any, num_rows: int):
        self.tensors, self.num_rows = tensors, num_rows


def _slice_rows(batch: Any, start: int, stop: int) -> Any:
    """Rows [start, stop) of a converted batch: tensors (views) and lists, in dicts, lists or
    tuples of them."""
    if isinstance(batch, dict):
        return {k: _slice_rows(v, start, stop) for k, v in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_slice_rows(v, start, stop) for v in batch)
    if isinstance(batch, (torch.Tensor, list)):
        return batch[start:stop]
    return batch


def _split_rows(batch: Any, n: int, rows: int) -> List[Any]:
    """A converted batch of n rows cut into batches of rows rows (the last may be shorter), as
    _slice_rows cuts it; a dict of tensors is cut with one split per tensor rather than one
    slice per tensor and batch (a unit is tens of batches)."""
    if isinstance(batch, dict) and all(isinstance(v, torch.Tensor) and len(v) == n for v in batch.values()):
        columns = [v.split(rows) for v in batch.values()]
        return [dict(zip(batch.keys(), parts)) for parts in zip(*columns)] if columns else [{} for _ in range(0, n, rows)]
    return [_slice_rows(batch, at, at + rows) for at in range(0, n, rows)]


def _converts_by_default(dataset: Any) -> bool:
    """Whether dataset is a CacheDataset converting batches with its own default converter."""
    return (
        isinstance(dataset, CacheDataset)
        and "from_arrow_rb_to_tensor" not in vars(dataset)
        and type(dataset).from_arrow_rb_to_tensor is CacheDataset.from_arrow_rb_to_tensor
    )


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


class Turn:
    """Consecutive batches a DataLoader worker hands over at once: the converted tensors of
    their rows together, cut into batches of ``batch_size`` rows (views, no copy) in the main
    process. One transfer between processes per turn instead of per batch is what makes small
    batches with workers as fast as in one process."""

    def __init__(self, tensors: Any, batch_size: int):
        self.tensors = tensors
        self.batch_size = batch_size

    def pin_memory(self) -> "Turn":
        # The DataLoader's pin-memory thread calls this for objects it does not know.
        return Turn(_map_tensors(self.tensors, lambda t: t.pin_memory()), self.batch_size)

    def batches(self) -> Iterator[Any]:
        rows, size = _rows(self.tensors), self.batch_size
        for at in range(0, rows, size):

            def cut(t: torch.Tensor, at: int = at) -> torch.Tensor:
                return t[at:at + size]

            yield _map_tensors(self.tensors, cut)


def _map_tensors(batch: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(batch, torch.Tensor):
        return fn(batch)
    if isinstance(batch, dict):
        return {k: _map_tensors(v, fn) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_map_tensors(v, fn) for v in batch)
    return batch


def _rows(batch: Any) -> int:
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() > 0 else 1
    if isinstance(batch, dict):
        return _rows(next(iter(batch.values()))) if batch else 0
    if isinstance(batch, (list, tuple)):
        return _rows(batch[0]) if batch else 0
    return 0


# Rows a DataLoader worker hands over at once when batches are smaller (see Turn).
TURN_ROWS = 8192


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
        if kwargs.get("num_workers", 0) > 0 and _converts_by_default(dataset):
            # Workers hand over turns of small batches (Turn); a converter of one's own gets
            # exactly one batch at a time, as documented.
            dataset._worker_batches = max(1, TURN_ROWS // dataset.batch_size)
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
        for item in super().__iter__():
            for batch in item.batches() if isinstance(item, Turn) else (item,):
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
