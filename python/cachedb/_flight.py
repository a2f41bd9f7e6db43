"""Flight SQL over plain pyarrow.flight: statements, training-read options as call headers,
located endpoints and actions.

Only what the client needs is here. A Flight SQL query is a FlightDescriptor whose command is a
protobuf ``Any`` wrapping ``CommandStatementQuery``; both messages are small enough to encode by
hand, which keeps the client free of a protobuf dependency.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, TypeVar

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


def grpc_uri(address: str, tls: bool = False) -> str:
    """Accepts HOST:PORT or a grpc:// or grpc+tls:// URI; HOST:PORT gets grpc+tls:// when tls."""
    if "://" in address:
        return address
    return ("grpc+tls://" if tls else "grpc://") + address


T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Security:
    """How a client proves who it is and whom it talks to (docs/security.md).

    ``tls`` connects over TLS (implied by a ``grpc+tls://`` address or ``tls_ca``), trusting the
    system roots or the PEM bundle at ``tls_ca``; ``tls_cert`` and ``tls_key`` present a client
    certificate. Left out, they come from ``CACHEDB_TLS_CA``, ``CACHEDB_TLS_CERT`` and
    ``CACHEDB_TLS_KEY`` when set. ``user`` and ``password`` log in through the Flight handshake (HTTP Basic,
    answered with a bearer token that the head's data nodes accept too); ``token`` is such a
    token given directly (a JWT, or a deployment's service token). A password or token left out
    is read from ``CACHEDB_PASSWORD``, or ``CACHEDB_TOKEN`` or the file ``CACHEDB_TOKEN_FILE``
    names (a mounted Secret), so that none needs to appear in code.
    """

    tls: bool = False
    tls_ca: Optional[str] = None
    tls_cert: Optional[str] = None
    tls_key: Optional[str] = None
    user: Optional[str] = None
    password: Optional[str] = dataclasses.field(default=None, repr=False)
    token: Optional[str] = dataclasses.field(default=None, repr=False)

    @classmethod
    def of(
        cls,
        address: str,
        *,
        tls: Optional[bool] = None,
        tls_ca: Optional[str] = None,
        tls_cert: Optional[str] = None,
        tls_key: Optional[str] = None,
        user: Optional[str] = None,
        password: Optional[str] = None,
        token: Optional[str] = None,
    ) -> "Security":
        # As cachedb sql's flags: CACHEDB_TLS_CA, CACHEDB_TLS_CERT and CACHEDB_TLS_KEY stand in for
        # what is not given (files a pod mounts, as the Helm chart's training runtime sets them).
        if tls_ca is None:
            tls_ca = os.environ.get("CACHEDB_TLS_CA") or None
        if tls_cert is None and tls_key is None:
            tls_cert = os.environ.get("CACHEDB_TLS_CERT") or None
            tls_key = os.environ.get("CACHEDB_TLS_KEY") or None
        if (tls_cert is None) != (tls_key is None):
            raise ValueError("a client certificate needs both tls_cert and tls_key")
        if tls is None:
            tls = address.startswith("grpc+tls://") or tls_ca is not None or tls_cert is not None
        if user is not None and password is None:
            password = os.environ.get("CACHEDB_PASSWORD")
            if password is None:
                raise ValueError(f"user {user!r} needs a password: pass password= or set CACHEDB_PASSWORD")
        if user is None and token is None:
            token = token_from_env()
        if user is not None and token is not None:
            raise ValueError("give a user and password or a token, not both")
        return cls(tls=tls, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key, user=user, password=password, token=token)

    def client_kwargs(self) -> dict:
        """The pyarrow.flight.FlightClient arguments for TLS."""
        kwargs: dict = {}
        if self.tls_ca is not None:
            kwargs["tls_root_certs"] = _read(self.tls_ca)
        if self.tls_cert is not None and self.tls_key is not None:
            kwargs["cert_chain"] = _read(self.tls_cert)
            kwargs["private_key"] = _read(self.tls_key)
        return kwargs

    def adbc_kwargs(self) -> Dict[str, str]:
        """The ADBC Flight SQL driver's database options for the same security."""
        kwargs: Dict[str, str] = {}
        if self.tls_ca is not None:
            kwargs["adbc.flight.sql.client_option.tls_root_certs"] = _read(self.tls_ca).decode()
        if self.tls_cert is not None and self.tls_key is not None:
            kwargs["adbc.flight.sql.client_option.mtls_cert_chain"] = _read(self.tls_cert).decode()
            kwargs["adbc.flight.sql.client_option.mtls_private_key"] = _read(self.tls_key).decode()
        if self.user is not None:
            kwargs["username"] = self.user
            kwargs["password"] = self.password or ""
        elif self.token is not None:
            kwargs["adbc.flight.sql.authorization_header"] = "Bearer " + self.token
        return kwargs


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def token_from_env() -> Optional[str]:
    """The bearer token of ``CACHEDB_TOKEN``, or of the file ``CACHEDB_TOKEN_FILE`` names (a
    mounted Secret; a trailing newline is ignored), as ``cachedb sql`` reads them; None when
    neither is set."""
    token = os.environ.get("CACHEDB_TOKEN") or None
    path = os.environ.get("CACHEDB_TOKEN_FILE") or None
    if path is None:
        return token
    if token is not None:
        raise ValueError("give CACHEDB_TOKEN or CACHEDB_TOKEN_FILE, not both")
    token = _read(path).decode().rstrip("\r\n")
    if not token:
        raise ValueError(f"CACHEDB_TOKEN_FILE {path} is empty")
    return token


def flight_call_options(token: Optional[str] = None, timeout: Optional[float] = None) -> flight.FlightCallOptions:
    """Call options for plain ``pyarrow.flight`` calls to cachedb (``get_flight_info`` and
    ``do_get`` of a ``FlightDescriptor.for_path`` read, as Kubeflow Trainer's
    ``DataCacheDataset`` makes): the ``authorization: Bearer`` header of ``token``, or of
    ``CACHEDB_TOKEN`` / ``CACHEDB_TOKEN_FILE``; no header when there is none."""
    if token is None:
        token = token_from_env()
    headers = [] if token is None else [(b"authorization", b"Bearer " + token.encode())]
    return flight.FlightCallOptions(headers=headers, timeout=timeout)


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

    def __init__(self, head: str, timeout: Optional[float] = None, security: Optional[Security] = None):
        self.security = security or Security.of(head)
        self.head = grpc_uri(head, self.security.tls)
        self.timeout = timeout
        self._clients: Dict[str, flight.FlightClient] = {}
        self._lock = threading.Lock()
        # The authorization header every call carries (None: no login); a login is made on first
        # use and made again once when a call says the token expired.
        self._authorization: Optional[Tuple[bytes, bytes]] = None
        if self.security.token is not None:
            self._authorization = (b"authorization", b"Bearer " + self.security.token.encode())

    def get(self, uri: Optional[str] = None) -> flight.FlightClient:
        uri = uri or self.head
        with self._lock:
            client = self._clients.get(uri)
            if client is None:
                client = flight.FlightClient(uri, **self.security.client_kwargs())
                self._clients[uri] = client
            return client

    def _login(self) -> None:
        if self.security.user is None:
            return
        pair = self.get().authenticate_basic_token(
            self.security.user, self.security.password or "", flight.FlightCallOptions(timeout=self.timeout)
        )
        with self._lock:
            self._authorization = (pair[0], pair[1])

    def _logged_in(self, call: Callable[[], T]) -> T:
        """Runs call after logging in if a login is due, and once more after logging in again
        when the server says the token is no longer valid (it expired)."""
        if self.security.user is not None and self._authorization is None:
            self._login()
        try:
            return call()
        except flight.FlightUnauthenticatedError:
            if self.security.user is None:
                raise
            self._login()
            return call()

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            try:
                c.close()
            except Exception:
                pass

    def call_options(self, headers: Iterable[Tuple[bytes, bytes]] = ()) -> flight.FlightCallOptions:
        all_headers = list(headers)
        if self._authorization is not None:
            all_headers.append(self._authorization)
        return flight.FlightCallOptions(headers=all_headers, timeout=self.timeout)

    def flight_info(self, query: str, headers: Iterable[Tuple[bytes, bytes]] = ()) -> flight.FlightInfo:
        desc = flight.FlightDescriptor.for_command(statement_command(query))
        headers = list(headers)
        return self._logged_in(lambda: self.get().get_flight_info(desc, self.call_options(headers)))

    def endpoint_uri(self, endpoint: flight.FlightEndpoint) -> str:
        for loc in endpoint.locations:
            uri = loc.uri.decode() if isinstance(loc.uri, bytes) else str(loc.uri)
            if uri and not uri.startswith("arrow-flight-reuse-connection"):
                return uri
        return self.head

    def do_get(self, endpoint: flight.FlightEndpoint) -> flight.FlightStreamReader:
        uri = self.endpoint_uri(endpoint)
        return self._logged_in(lambda: self.get(uri).do_get(endpoint.ticket, self.call_options()))

    def read_table(self, query: str, headers: Iterable[Tuple[bytes, bytes]] = ()) -> pa.Table:
        """Runs a query and reads every endpoint, in order, into one table."""
        info = self.flight_info(query, headers)
        tables = [self.do_get(ep).read_all() for ep in info.endpoints]
        if not tables:
            return info.schema.empty_table()
        return pa.concat_tables(tables)

    def action(self, kind: str, body: dict) -> Iterator[dict]:
        """Runs a Flight action whose body and results are JSON objects."""
        action = flight.Action(kind, json.dumps(body).encode())
        results = self._logged_in(lambda: self.get().do_action(action, self.call_options()))
        for r in results:
            yield json.loads(r.body.to_pybytes())
