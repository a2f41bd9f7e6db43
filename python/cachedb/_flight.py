"""Flight SQL over plain pyarrow.flight: statements, training-read options as call headers,
located endpoints and actions.

Only what the client needs is here. A Flight SQL query is a FlightDescriptor whose command is a
protobuf ``Any`` wrapping ``CommandStatementQuery``; both messages are small enough to encode by
hand, which keeps the client free of a protobuf dependency.
"""

from __future__ import annotations

import json
import threading
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import pyarrow as pa
import pyarrow.flight as flight

_STATEMENT_QUERY = "type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"

# Prefix of the call headers that carry training-read options (cachedb-seed, cachedb-epoch, …).
HEADER_PREFIX = "cachedb-"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    # Wire type 2: length-delimited.
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def statement_command(query: str) -> bytes:
    """The Flight descriptor command of a Flight SQL ad-hoc query."""
    inner = _field(1, query.encode("utf-8"))
    return _field(1, _STATEMENT_QUERY.encode()) + _field(2, inner)


def grpc_uri(address: str) -> str:
    """Accepts HOST:PORT or a grpc:// URI."""
    return address if "://" in address else "grpc://" + address


def option_headers(options: Mapping[str, object]) -> List[Tuple[bytes, bytes]]:
    """Call headers for training-read options: world_size=2 → (b"cachedb-world-size", b"2")."""
    headers = []
    for name, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        headers.append(((HEADER_PREFIX + name.replace("_", "-")).encode(), str(value).encode()))
    return headers


class FlightClients:
    """Flight clients by location, made on first use and shared by threads.

    A training read's endpoints are located at the data nodes that hold their rows; each is read
    from its location, the others (none located) from the head.
    """

    def __init__(self, head: str, timeout: Optional[float] = None):
        self.head = grpc_uri(head)
        self.timeout = timeout
        self._clients: Dict[str, flight.FlightClient] = {}
        self._lock = threading.Lock()

    def get(self, uri: Optional[str] = None) -> flight.FlightClient:
        uri = uri or self.head
        with self._lock:
            client = self._clients.get(uri)
            if client is None:
                client = flight.FlightClient(uri)
                self._clients[uri] = client
            return client

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            try:
                c.close()
            except Exception:
                pass

    def call_options(self, headers: Iterable[Tuple[bytes, bytes]] = ()) -> flight.FlightCallOptions:
        return flight.FlightCallOptions(headers=list(headers), timeout=self.timeout)

    def flight_info(self, query: str, headers: Iterable[Tuple[bytes, bytes]] = ()) -> flight.FlightInfo:
        desc = flight.FlightDescriptor.for_command(statement_command(query))
        return self.get().get_flight_info(desc, self.call_options(headers))

    def endpoint_uri(self, endpoint: flight.FlightEndpoint) -> str:
        for loc in endpoint.locations:
            uri = loc.uri.decode() if isinstance(loc.uri, bytes) else str(loc.uri)
            if uri and not uri.startswith("arrow-flight-reuse-connection"):
                return uri
        return self.head

    def do_get(self, endpoint: flight.FlightEndpoint) -> flight.FlightStreamReader:
        return self.get(self.endpoint_uri(endpoint)).do_get(endpoint.ticket, self.call_options())

    def read_table(self, query: str, headers: Iterable[Tuple[bytes, bytes]] = ()) -> pa.Table:
        """Runs a query and reads every endpoint, in order, into one table."""
        info = self.flight_info(query, headers)
        tables = [self.do_get(ep).read_all() for ep in info.endpoints]
        if not tables:
            return info.schema.empty_table()
        return pa.concat_tables(tables)

    def action(self, kind: str, body: dict) -> Iterator[dict]:
        """Runs a Flight action whose body and results are JSON objects."""
        results = self.get().do_action(flight.Action(kind, json.dumps(body).encode()), self.call_options())
        for r in results:
            yield json.loads(r.body.to_pybytes())
