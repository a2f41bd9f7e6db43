package flightsql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/internal/auth"
)

// grantUsers are the users of the grants tests: admin is admin everywhere, alice reader, bob and
// carol nothing by themselves; carol is in group etl. Each one's password is their name.
func grantUsers(t *testing.T) *auth.Users {
	t.Helper()
	var b strings.Builder
	b.WriteString("users:\n")
	for _, u := range []struct{ name, roles, groups string }{
		{"admin", "admin", ""}, {"alice", "reader", ""}, {"bob", "none", ""}, {"carol", "none", "etl"},
	} {
		h, err := auth.HashPassword(u.name+"-pw", bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  - {name: %s, password_hash: %q, roles: [%s], groups: [%s]}\n", u.name, h, u.roles, u.groups)
	}
	users, err := auth.ParseUsers([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return users
}

// grantUser is one user's ADBC connection (which follows endpoints to the data nodes) and
// arrow-go client with its login's context (metadata, actions, bulk ingest).
type grantUser struct {
	name string
	cnxn adbc.Connection
	cl   *flightsql.Client
	ctx  context.Context
}

func loginGrantUser(t *testing.T, addr, name string) *grantUser {
	t.Helper()
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{
		adbc.OptionKeyURI: "grpc://" + addr, adbc.OptionKeyUsername: name, adbc.OptionKeyPassword: name + "-pw",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(testContext(t))
	if err != nil {
		t.Fatalf("ADBC login as %s: %v", name, err)
	}
	t.Cleanup(func() { cnxn.Close() })
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	ctx, err := cl.Client.AuthenticateBasicToken(testContext(t), name, name+"-pw")
	if err != nil {
		t.Fatalf("login as %s: %v", name, err)
	}
	return &grantUser{name: name, cnxn: cnxn, cl: cl, ctx: ctx}
}

// query runs a statement through ADBC and returns its rows.
func (u *grantUser) query(q string) ([]string, error) { return tryQuery(u.ctx, u.cnxn, q) }

// must runs q and fails the test when it fails.
func (u *grantUser) must(t *testing.T, q string) []string {
	t.Helper()
	rows, err := u.query(q)
	if err != nil {
		t.Fatalf("%s: %s: %v", u.name, q, err)
	}
	return rows
}

// refused checks that err refuses the user with PERMISSION_DENIED, naming them, the action and
// the object.
func refused(t *testing.T, what string, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed, want PERMISSION_DENIED", what)
		return
	}
	if !adbcCode(err, adbc.StatusUnauthorized) && status.Code(err) != codes.PermissionDenied {
		t.Errorf("%s: %v, want PERMISSION_DENIED", what, err)
		return
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: the refusal %q does not say %q", what, err, w)
		}
	}
}

// listed returns the reader of the rows of a metadata command's FlightInfo, through the head:
// u.listed(t)(u.cl.GetCatalogs(u.ctx)).
func (u *grantUser) listed(t *testing.T) func(*flight.FlightInfo, error) []string {
	return func(info *flight.FlightInfo, err error) []string {
		t.Helper()
		return u.metadataRows(t, info, err)
	}
}

// metadataRows reads the rows of a metadata command's FlightInfo through the head.
func (u *grantUser) metadataRows(t *testing.T, info *flight.FlightInfo, err error) []string {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: metadata: %v", u.name, err)
	}
	var rows []string
	for _, ep := range info.Endpoint {
		rdr, err := u.cl.DoGet(u.ctx, ep.Ticket)
		if err != nil {
			t.Fatalf("%s: metadata DoGet: %v", u.name, err)
		}
		rows = append(rows, renderRows(t, rdr)...)
		rdr.Release()
	}
	return rows
}

// catalogsOf lists the distinct first fields (catalog names) of rendered metadata rows.
func catalogsOf(rows []string) []string {
	var out []string
	for _, r := range rows {
		c, _, _ := strings.Cut(r, ",")
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// TestGrantsPerCatalogAndDataset: grants raise a user's role on the catalogs and datasets they
// name, and only there, whichever way a read or a change arrives: statements and prepared
// statements through ADBC, training reads, loads, bulk ingest, metadata and information_schema.
func TestGrantsPerCatalogAndDataset(t *testing.T) {
	grants, err := auth.NewGrants([]auth.Grant{
		{User: "alice", Dataset: "team_a_*", Role: auth.Admin},
		{User: "bob", Catalog: "lake", Role: auth.Reader},
		{Group: "etl", Dataset: "staging_*", Role: auth.Writer},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := startDatasetClusterWith(t, demoWarehouse(t), 2, Options{Users: grantUsers(t), Grants: grants})
	admin := loginGrantUser(t, c.head.addr, "admin")
	alice := loginGrantUser(t, c.head.addr, "alice")
	bob := loginGrantUser(t, c.head.addr, "bob")
	carol := loginGrantUser(t, c.head.addr, "carol")

	const lisbon = "SELECT ride_id, city FROM demo.rides WHERE city = 'Lisbon'"
	admin.must(t, "CREATE TABLE team_b_rides AS "+lisbon)
	wantLisbon := admin.must(t, "SELECT count(*) FROM team_b_rides")

	t.Run("alice is reader everywhere and admin of team_a_*", func(t *testing.T) {
		alice.must(t, "CREATE TABLE team_a_rides AS SELECT ride_id, fare FROM demo.rides WHERE fare > 10")
		if rows := alice.must(t, "SELECT count(*) FROM team_b_rides"); !slices.Equal(rows, wantLisbon) {
			t.Errorf("alice reads team_b_rides: %v, want %v", rows, wantLisbon)
		}
		_, err := alice.query("DROP TABLE team_b_rides")
		refused(t, "alice drops team_b_rides", err, "user alice", "make or drop", "table cachedb.team_b_rides", "admin role")
		_, err = alice.query("CREATE TABLE notes (x BIGINT)")
		refused(t, "alice makes a memory table", err, "user alice", "change", "table cachedb.notes", "writer role")
		alice.must(t, "CREATE TABLE team_a_notes (x BIGINT)")
		alice.must(t, "INSERT INTO team_a_notes VALUES (1), (2)")

		load := func(name string) error {
			body := fmt.Sprintf(`{"name": %q, "table": "demo.rides", "columns": ["ride_id"], "filter": "city = 'Paris'"}`, name)
			return recvErr(alice.cl.Client.DoAction(alice.ctx, &flight.Action{Type: ActionLoad, Body: []byte(body)}))
		}
		if err := load("team_a_paris"); err != nil {
			t.Errorf("alice loads team_a_paris: %v", err)
		}
		refused(t, "alice loads team_b_paris", load("team_b_paris"), "user alice", "load", "table cachedb.team_b_paris")

		// She sees every catalog, as a reader everywhere does.
		rows := alice.listed(t)(alice.cl.GetCatalogs(alice.ctx))
		if !slices.Contains(rows, "cachedb") || !slices.Contains(rows, "lake") || !slices.Contains(rows, "system") {
			t.Errorf("alice's catalogs: %v", rows)
		}
	})

	t.Run("bob reads catalog lake only", func(t *testing.T) {
		if rows := bob.must(t, "SELECT count(*) FROM demo.rides WHERE city = 'Lisbon'"); !slices.Equal(rows, wantLisbon) {
			t.Errorf("bob counts Lisbon rides: %v, want %v", rows, wantLisbon)
		}
		// The text a dataset holds is answered from the dataset for those who may read it;
		// bob gets it from the table.
		if rows, err := bob.query(lisbon); err != nil || len(rows) == 0 {
			t.Errorf("bob runs a dataset's definition: %d rows, %v", len(rows), err)
		}
		bob.must(t, "SELECT 1")
		for q, object := range map[string]string{
			"SELECT count(*) FROM team_a_rides":                                      "table cachedb.team_a_rides",
			"SELECT /*+ TRAINING(seed=1) */ ride_id FROM team_b_rides":               "table cachedb.team_b_rides",
			"SELECT * FROM system.nodes":                                             "table system.nodes",
			"SELECT r.ride_id FROM demo.rides r JOIN team_a_rides a USING (ride_id)": "table cachedb.team_a_rides",
			"DESCRIBE team_a_rides":                                                  "table cachedb.team_a_rides",
		} {
			_, err := bob.query(q)
			refused(t, "bob: "+q, err, "user bob", "read", object, "reader role")
		}
		_, err := bob.query("INSERT INTO team_a_notes VALUES (3)")
		refused(t, "bob inserts", err, "user bob")
		_, err = bob.cl.Prepare(bob.ctx, "SELECT * FROM team_a_rides")
		refused(t, "bob prepares a read of team_a_rides", err, "user bob", "table cachedb.team_a_rides")

		// Listings show only what he may read.
		if got := bob.listed(t)(bob.cl.GetCatalogs(bob.ctx)); !slices.Equal(got, []string{"lake"}) {
			t.Errorf("bob's catalogs: %v, want [lake]", got)
		}
		tables := bob.listed(t)(bob.cl.GetTables(bob.ctx, &flightsql.GetTablesOpts{}))
		if got := catalogsOf(tables); !slices.Equal(got, []string{"lake"}) || len(tables) == 0 {
			t.Errorf("bob's tables are in catalogs %v (%d tables), want [lake]", got, len(tables))
		}
		schemas := bob.listed(t)(bob.cl.GetDBSchemas(bob.ctx, &flightsql.GetDBSchemasOpts{}))
		if got := catalogsOf(schemas); !slices.Equal(got, []string{"lake"}) {
			t.Errorf("bob's db schemas are in catalogs %v, want [lake]", got)
		}
		if got := bob.must(t, "SELECT DISTINCT TABLE_CATALOG FROM information_schema.tables ORDER BY 1"); !slices.Equal(got, []string{"information_schema", "lake"}) {
			t.Errorf("bob's information_schema.tables catalogs: %v", got)
		}
		if got := bob.must(t, "SELECT count(*) FROM information_schema.columns WHERE TABLE_NAME LIKE 'team%'"); !slices.Equal(got, []string{"0"}) {
			t.Errorf("bob sees %v columns of team tables", got)
		}
		for _, db := range bob.must(t, "SHOW DATABASES") {
			if db != "information_schema" && !strings.HasPrefix(db, "lake") {
				t.Errorf("SHOW DATABASES shows bob %s", db)
			}
		}
		// A reader everywhere sees the datasets in the same listing.
		if got := alice.must(t, "SELECT count(*) FROM information_schema.tables WHERE TABLE_NAME = 'team_a_rides'"); !slices.Equal(got, []string{"1"}) {
			t.Errorf("alice's information_schema lists team_a_rides %v times", got)
		}
	})

	t.Run("carol writes staging_* through group etl", func(t *testing.T) {
		carol.must(t, "CREATE TABLE staging_x (x BIGINT)")
		carol.must(t, "INSERT INTO staging_x VALUES (1), (2)")
		if got := carol.must(t, "SELECT sum(x) FROM staging_x"); !slices.Equal(got, []string{"3"}) {
			t.Errorf("carol's sum: %v", got)
		}
		schema := arrow.NewSchema([]arrow.Field{{Name: "y", Type: arrow.PrimitiveTypes.Int64}}, nil)
		if n, err := ingest(carol.ctx, carol.cl, ingestOpts("staging_y", "create"), ingestBatch(t, schema, `[{"y": 5}]`)); err != nil || n != 1 {
			t.Errorf("carol's bulk ingest into staging_y: %d, %v", n, err)
		}
		_, err := ingest(carol.ctx, carol.cl, ingestOpts("other_y", "create"), ingestBatch(t, schema, `[{"y": 5}]`))
		refused(t, "carol's bulk ingest into other_y", err, "user carol", "change", "table cachedb.other_y")
		_, err = carol.query("SELECT count(*) FROM demo.rides")
		refused(t, "carol reads lake", err, "user carol", "read", "table lake.demo.rides")
		_, err = carol.query("CREATE TABLE staging_z AS SELECT * FROM team_a_notes")
		refused(t, "carol copies a table she may not read", err, "user carol", "read", "table cachedb.team_a_notes")
		carol.must(t, "DROP TABLE staging_x")
		if got := carol.listed(t)(carol.cl.GetCatalogs(carol.ctx)); !slices.Equal(got, []string{"cachedb"}) {
			t.Errorf("carol's catalogs: %v, want [cachedb]", got)
		}
		tables := carol.listed(t)(carol.cl.GetTables(carol.ctx, &flightsql.GetTablesOpts{}))
		if len(tables) != 1 || !strings.Contains(tables[0], "staging_y") {
			t.Errorf("carol's tables: %v, want staging_y only", tables)
		}
		// A training read of a dataset her grant covers, from the data nodes, though she
		// cannot read the table it was made from.
		admin.must(t, "CREATE TABLE staging_rides AS "+lisbon)
		rows := carol.must(t, "SELECT /*+ TRAINING(seed=3) */ ride_id FROM staging_rides")
		if want := admin.must(t, "SELECT count(*) FROM staging_rides"); fmt.Sprint(len(rows)) != want[0] {
			t.Errorf("carol's training read: %d rows, want %s", len(rows), want[0])
		}
	})

	t.Run("what was refused changed nothing", func(t *testing.T) {
		if got := admin.must(t, "SELECT count(*) FROM team_a_notes"); !slices.Equal(got, []string{"2"}) {
			t.Errorf("team_a_notes has %v rows, want 2", got)
		}
		if _, err := admin.query("SELECT 1 FROM team_b_rides LIMIT 1"); err != nil {
			t.Errorf("team_b_rides: %v", err)
		}
		alice.must(t, "DROP TABLE team_a_rides")
	})
}
