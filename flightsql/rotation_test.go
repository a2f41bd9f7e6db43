package flightsql

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
)

// TestRotatedClusterSecretKeepsServing rotates the cluster secret under a data node: the node
// holds the new secret and the old one as previous. It serves the endpoints of a head still
// signing with the old secret (tickets handed out before the rotation) and of a head signing
// with the new one, shuffling with itself under the new secret; a node that dropped the old
// secret refuses the old tickets, naming the key they were signed with.
func TestRotatedClusterSecretKeepsServing(t *testing.T) {
	ctx := context.Background()
	wh := demoWarehouse(t)
	newEngineConfig := func() engine.Config {
		return engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake"}
	}
	oldSecret, newSecret := []byte("old cluster secret"), []byte("new cluster secret")
	oldKey, newKey := ticket.NewKeyring(oldSecret, nil), ticket.NewKeyring(newSecret, nil)
	node := startDataNode(t, newEngineConfig(), ticket.NewKeyring(newSecret, oldSecret))
	rotated := startDataNode(t, newEngineConfig(), newKey)
	nodes := []string{node.addr}
	startHead := func(key *ticket.Keyring) *testServer {
		return startServer(t, newEngineConfig(), Options{TicketKey: key, DataNodes: func() []string { return nodes }})
	}
	oldHead, newHead := startHead(oldKey), startHead(newKey)

	// The grouped aggregate runs on the node: its endpoint is there, and it shuffles.
	query := "SELECT city, count(*) FROM demo.rides GROUP BY city"
	alone := startServer(t, newEngineConfig(), Options{}).arrowClient(t)
	aloneInfo, err := alone.Execute(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	want, err := readTicketRows(ctx, alone, aloneInfo.Endpoint[0].Ticket)
	if err != nil || len(want) == 0 {
		t.Fatalf("reference answer %v, %v: the query tests nothing", want, err)
	}
	for name, head := range map[string]*testServer{"old": oldHead, "new": newHead} {
		info, err := head.arrowClient(t).Execute(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 1 || info.Endpoint[0].Location[0].Uri != "grpc://"+node.addr {
			t.Fatalf("endpoints %v, want one at the data node", info.Endpoint)
		}
		got, err := readTicketRows(ctx, node.arrowClient(t), info.Endpoint[0].Ticket)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ticket of the head with the %s secret, at the node holding both: %v, %v; want %v", name, got, err, want)
		}
		if name == "old" {
			_, err := readTicketRows(ctx, rotated.arrowClient(t), info.Endpoint[0].Ticket)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "signed with key "+oldKey.Current().String()) {
				t.Errorf("the old ticket at a node without the old secret: %v, want INVALID_ARGUMENT naming key %s", err, oldKey.Current())
			}
		}
	}
}

// readTicketRows redeems tk through cl and returns its rows as text, sorted.
func readTicketRows(ctx context.Context, cl *flightsql.Client, tk *flight.Ticket) ([]string, error) {
	rdr, err := cl.DoGet(ctx, tk)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for r := range int(rec.NumRows()) {
			var cells []string
			for _, col := range rec.Columns() {
				cells = append(cells, col.ValueStr(r))
			}
			rows = append(rows, strings.Join(cells, "|"))
		}
	}
	slices.Sort(rows)
	return rows, rdr.Err()
}
