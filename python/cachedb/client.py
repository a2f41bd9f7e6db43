"""Ad-hoc SQL and dataset loading: ``cachedb.connect()``."""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Optional, Sequence, Union

import pyarrow as pa

from ._flight import FlightClients, Security, grpc_uri


class Connection:
    """A connection to a cachedb head.

    ``sql`` runs any query through the ADBC Flight SQL driver (which reads every endpoint where
    it is located) and returns a pyarrow Table; ``load`` materializes a dataset from a job spec.
    """

    def __init__(self, address: str, timeout: Optional[float] = None, security: Optional[Security] = None):
        import adbc_driver_flightsql.dbapi as flightsql

        self.address = address
        security = security or Security.of(address)
        self._flight = FlightClients(address, timeout, security)
        self._adbc = flightsql.connect(grpc_uri(address, security.tls), db_kwargs=security.adbc_kwargs(), autocommit=True)

    def sql(self, query: str, parameters: Optional[Sequence[Any]] = None) -> pa.Table:
        """Runs one statement and returns its rows.

        ``parameters`` are bound to the statement's ``?`` placeholders in order, through a Flight
        SQL prepared statement: values never become SQL text, so they need no quoting::

            db.sql("SELECT * FROM rides WHERE city = ? AND fare > ?", ["Lisbon", 20.0])
        """
        with self._adbc.cursor() as cur:
            if parameters is None:
                cur.execute(query)
            else:
                cur.execute(query, list(parameters))
            return cur.fetch_arrow_table()

    def load(self, spec: Union[dict, str, os.PathLike], progress: Optional[Callable[[dict], None]] = None) -> dict:
        """Materializes a dataset on the data nodes (or reuses the one that already holds it).

        ``spec`` is a job spec as a dict, or the path of a JSON or YAML file (YAML needs PyYAML);
        its keys are those of ``cachedb load`` (name, table or metadata_location or sql,
        columns, filter, snapshot, partitions, replace). ``progress`` receives each progress
        message. Returns the dataset: name, generation, rows, bytes, partitions, nodes,
        snapshot, reused, seconds.
        """
        if not isinstance(spec, dict):
            spec = _read_spec(os.fspath(spec))
        dataset = None
        for message in self._flight.action("cachedb.load", spec):
            if "progress" in message and progress is not None:
                progress(message["progress"])
            if "dataset" in message:
                dataset = message["dataset"]
        if dataset is None:
            raise RuntimeError(f"loading {spec.get('name')!r}: the server sent no result")
        return dataset

    def datasets(self) -> pa.Table:
        """The datasets the cluster holds (system.datasets)."""
        return self.sql("SELECT * FROM system.datasets")

    def close(self) -> None:
        self._adbc.close()
        self._flight.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read_spec(path: str) -> dict:
    with open(path, "rb") as f:
        text = f.read().decode()
    if path.endswith(".json"):
        return json.loads(text)
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(f"reading {path} needs PyYAML; pass the spec as a dict or a .json file") from e
    spec = yaml.safe_load(text)
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: a job spec is a mapping of keys to values, not {type(spec).__name__}")
    return spec


def connect(
    address: str = "127.0.0.1:32010",
    timeout: Optional[float] = None,
    *,
    tls: Optional[bool] = None,
    tls_ca: Optional[str] = None,
    tls_cert: Optional[str] = None,
    tls_key: Optional[str] = None,
    user: Optional[str] = None,
    password: Optional[str] = None,
    token: Optional[str] = None,
) -> Connection:
    """Connects to the cachedb head at HOST:PORT (or a grpc:// or grpc+tls:// URI).

    On a server that requires TLS and logins (docs/security.md): ``tls_ca`` is the PEM bundle to
    trust (``tls=True`` trusts the system roots), ``tls_cert``/``tls_key`` a client certificate;
    ``user`` with ``password`` (or ``CACHEDB_PASSWORD``) logs in, or ``token`` (or
    ``CACHEDB_TOKEN``, or the file ``CACHEDB_TOKEN_FILE`` names) is a bearer token.
    """
    security = Security.of(address, tls=tls, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key, user=user, password=password, token=token)
    return Connection(address, timeout, security)
