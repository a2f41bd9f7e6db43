"""cachedb serving TLS and requiring logins (docs/security.md), through unmodified clients: the
Python ADBC driver (TLS root certificates, username and password) and the Flight SQL JDBC driver
(useEncryption, tlsRootCerts, user and password). The certificates are made for the test with
the openssl command; the users file with `cachedb hash-password`."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import time

import adbc_driver_flightsql.dbapi
import adbc_driver_manager
import pyarrow.flight as flight
import pytest

from servers import CachedbProcess, cachedb_binary
from test_jdbc import CHECK, driver_jar

PASSWORDS = {"reader": "reader-secret-1", "writer": "writer-secret-2", "admin": "admin-secret-3"}
LOGIN_CHECK = CHECK.with_name("FlightSqlJdbcLogin.java")


def make_certs(d: pathlib.Path) -> dict[str, str]:
    """A throwaway CA and a certificate it signs for 127.0.0.1, usable by servers and clients."""
    if shutil.which("openssl") is None:
        pytest.fail("the TLS tests need the openssl command")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=cachedb test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=cachedb")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.crt", "-days", "1", "-extfile", "ext.cnf")
    return {"ca": str(d / "ca.crt"), "cert": str(d / "server.crt"), "key": str(d / "server.key")}


def make_users(path: pathlib.Path) -> str:
    lines = ["users:"]
    for name, password in PASSWORDS.items():
        out = subprocess.run([cachedb_binary(), "hash-password", "--cost", "4"], input=password + "\n",
                             capture_output=True, text=True, check=True)
        lines += [f"  - name: {name}", f'    password_hash: "{out.stdout.strip()}"', f"    roles: [{name}]"]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def connect(server: CachedbProcess, ca: str, user: str, password: str):
    return adbc_driver_flightsql.dbapi.connect(
        f"grpc+tls://127.0.0.1:{server.port}",
        db_kwargs={
            "username": user,
            "password": password,
            "adbc.flight.sql.client_option.tls_root_certs": pathlib.Path(ca).read_text(),
        },
        autocommit=True,
    )


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    d = tmp_path_factory.mktemp("security")
    certs = make_certs(d)
    users = make_users(d / "users.yaml")
    server = CachedbProcess(
        ["--warehouse", str(d / "warehouse"), "--workers", "2", "--tls-cert", certs["cert"], "--tls-key", certs["key"],
         "--tls-ca", certs["ca"], "--users", users],
        name="cachedb-secure",
    )
    try:
        # The in-process data nodes register asynchronously; the bound only stops a broken build.
        deadline = time.monotonic() + 60
        with connect(server, certs["ca"], "reader", PASSWORDS["reader"]) as conn, conn.cursor() as cur:
            while True:
                cur.execute("SELECT count(*) FROM system.nodes WHERE state = 'alive'")
                if cur.fetchone()[0] == 2:
                    break
                assert time.monotonic() < deadline, "the data nodes never registered over TLS"
                time.sleep(0.2)
        yield server, certs
    finally:
        server.stop()


def test_adbc_logs_in_over_tls_and_reads_from_the_data_nodes(secure):
    server, certs = secure
    with connect(server, certs["ca"], "reader", PASSWORDS["reader"]) as conn, conn.cursor() as cur:
        cur.execute("SELECT city, count(*) AS n FROM demo.rides GROUP BY city")
        rows = cur.fetchall()
    assert len(rows) == 8 and sum(n for _, n in rows) == 200000


def test_adbc_wrong_password_and_no_login_are_refused(secure):
    server, certs = secure
    with pytest.raises(adbc_driver_manager.Error) as wrong:
        connect(server, certs["ca"], "reader", "not-the-password").cursor().execute("SELECT 1")
    assert "UNAUTHENTICATED" in str(wrong.value).upper() and "not-the-password" not in str(wrong.value)
    with pytest.raises(adbc_driver_manager.Error) as anonymous:
        with adbc_driver_flightsql.dbapi.connect(
            f"grpc+tls://127.0.0.1:{server.port}",
            db_kwargs={"adbc.flight.sql.client_option.tls_root_certs": pathlib.Path(certs["ca"]).read_text()},
            autocommit=True,
        ) as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
    assert "UNAUTHENTICATED" in str(anonymous.value).upper()
    assert "not-the-password" not in server.log() and PASSWORDS["reader"] not in server.log()


def test_roles(secure):
    server, certs = secure
    with connect(server, certs["ca"], "writer", PASSWORDS["writer"]) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE py_roles (x BIGINT)")
        cur.execute("INSERT INTO py_roles VALUES (1), (2)")
    with connect(server, certs["ca"], "reader", PASSWORDS["reader"]) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM py_roles")
        assert cur.fetchone()[0] == 2
        with pytest.raises(adbc_driver_manager.Error, match="needs the writer role"):
            cur.execute("DELETE FROM py_roles")


def test_jdbc_driver_with_encryption_and_login(secure):
    server, certs = secure
    jar = driver_jar()
    cmd = ["java", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", jar, str(LOGIN_CHECK),
           f"127.0.0.1:{server.port}", certs["ca"], "reader", PASSWORDS["reader"]]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "PASS" in out.stdout, (
        f"JDBC login check failed (exit {out.returncode}):\n{out.stdout}\n{out.stderr[-4000:]}"
    )


def test_cachedb_client_and_cache_dataset_over_tls_with_a_login(secure, monkeypatch):
    import cachedb

    server, certs = secure
    addr = f"127.0.0.1:{server.port}"
    with cachedb.connect(addr, tls_ca=certs["ca"], user="admin", password=PASSWORDS["admin"]) as db:
        info = db.load({"name": "secure_rides", "sql": "SELECT ride_id, fare FROM demo.rides", "partitions": 4})
        assert info["rows"] == 200000
    # The reader's password from the environment; every DataLoader worker logs in itself and
    # reads its endpoints from the data nodes with the token.
    monkeypatch.setenv("CACHEDB_PASSWORD", PASSWORDS["reader"])
    ds = cachedb.CacheDataset(addr, "secure_rides", columns=["ride_id"], batch_size=4096, tls_ca=certs["ca"], user="reader")
    ids = [i for b in cachedb.DataLoader(ds, num_workers=2) for i in b["ride_id"].tolist()]
    assert len(ids) == 200000 and len(set(ids)) == 200000
    with cachedb.connect(addr, tls_ca=certs["ca"], user="reader") as db:
        assert db.sql("SELECT count(*) AS n FROM secure_rides").column("n")[0].as_py() == 200000
        # pyarrow names gRPC's PERMISSION_DENIED "unauthorized".
        with pytest.raises(flight.FlightUnauthorizedError, match="needs the admin role"):
            db.load({"name": "secure_rides2", "sql": "SELECT ride_id FROM demo.rides"})
    monkeypatch.delenv("CACHEDB_PASSWORD")
    # A bearer token got elsewhere (a mounted Secret) works the same, from the environment.
    login = flight.FlightClient(f"grpc+tls://{addr}", tls_root_certs=pathlib.Path(certs["ca"]).read_bytes())
    _, bearer = login.authenticate_basic_token("reader", PASSWORDS["reader"])
    login.close()
    monkeypatch.setenv("CACHEDB_TOKEN", bearer.decode().removeprefix("Bearer "))
    ds = cachedb.CacheDataset(addr, "secure_rides", columns=["ride_id"], batch_size=50000, tls_ca=certs["ca"])
    assert sum(len(b["ride_id"]) for b in ds) == 200000
    # The CA from the environment too, as the Helm chart's training runtime gives it.
    monkeypatch.setenv("CACHEDB_TLS_CA", certs["ca"])
    with cachedb.connect(f"grpc+tls://{addr}") as db:
        assert db.sql("SELECT count(*) AS n FROM secure_rides").column("n")[0].as_py() == 200000
    monkeypatch.delenv("CACHEDB_TLS_CA")
    monkeypatch.delenv("CACHEDB_TOKEN")
    # Without a login, or without the CA, the client is refused with a clear error.
    with pytest.raises(ValueError, match="CACHEDB_PASSWORD"):
        cachedb.connect(addr, tls_ca=certs["ca"], user="reader")
    with pytest.raises(flight.FlightUnauthenticatedError, match="log in first"):
        cachedb.CacheDataset(addr, "secure_rides", tls_ca=certs["ca"])
