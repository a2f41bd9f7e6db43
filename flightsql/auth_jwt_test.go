package flightsql

import (
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/auth/jwttest"
)

// adbcBearer opens an ADBC connection to ts over TLS that sends token as its bearer token.
func (ts *secureTestServer) adbcBearer(t *testing.T, token string) adbc.Connection {
	t.Helper()
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{
		adbc.OptionKeyURI:                    "grpc+tls://" + ts.addr,
		adbcflight.OptionAuthorizationHeader: "Bearer " + token,
		adbcflight.OptionSSLRootCerts:        readFile(t, ts.certs.CA),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cnxn.Close() })
	return cnxn
}

// A server with JWT keys and no users file takes an identity provider's tokens: the user and
// role come from the claims; a forged, expired or role-less token is UNAUTHENTICATED, and the
// handshake (user name and password) is refused.
func TestJWTBearerTokens(t *testing.T) {
	idp := jwttest.New(t, "idp-1")
	jwts, err := auth.NewJWTs(auth.JWTConfig{Issuer: "https://idp.test", Audience: "cachedb"}, idp.JWKS)
	if err != nil {
		t.Fatal(err)
	}
	ts := startSecureServer(t, engine.Config{}, Options{JWTs: jwts})
	token := func(sub, role string, exp time.Time, signer *jwttest.Issuer) string {
		return signer.Sign(t, map[string]any{"iss": "https://idp.test", "aud": "cachedb", "sub": sub, "cachedb_role": role, "exp": exp.Unix()})
	}
	later := time.Now().Add(time.Hour)
	writer := ts.adbcBearer(t, token("carol", "writer", later, idp))
	if _, rows := adbcQuery(t, writer, "SELECT 6 * 7 AS x"); len(rows) != 1 || rows[0] != "42" {
		t.Fatalf("a query with a JWT = %v", rows)
	}
	adbcUpdate(t, writer, "CREATE TABLE jwt_t (x BIGINT)")
	reader := ts.adbcBearer(t, token("dave", "reader", later, idp))
	if _, err := adbcTry(t, reader, "INSERT INTO jwt_t VALUES (1)"); !adbcCode(err, adbc.StatusUnauthorized) {
		t.Errorf("a reader's INSERT: %v, want permission denied", err)
	}
	for name, tok := range map[string]string{
		"forged":  token("carol", "admin", later, jwttest.New(t, "idp-1")),
		"expired": token("carol", "writer", time.Now().Add(-time.Hour), idp),
		"no role": token("carol", "", later, idp),
	} {
		_, err := adbcTry(t, ts.adbcBearer(t, tok), "SELECT 1")
		if !adbcCode(err, adbc.StatusUnauthenticated) {
			t.Errorf("%s token: %v, want unauthenticated", name, err)
		}
	}
	cl := ts.flightClient(t)
	_, err = cl.AuthenticateBasicToken(testContext(t), "carol", "pw")
	wantStatus(t, "a password login on a JWT-only server", err, codes.Unauthenticated)
}

// adbcTry runs query and reads its rows, returning the first error.
func adbcTry(t *testing.T, cnxn adbc.Connection, query string) (int64, error) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(query); err != nil {
		return 0, err
	}
	rdr, _, err := stmt.ExecuteQuery(testContext(t))
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	return n, rdr.Err()
}

func adbcCode(err error, code adbc.Status) bool {
	var ae adbc.Error
	return errors.As(err, &ae) && ae.Code == code
}
