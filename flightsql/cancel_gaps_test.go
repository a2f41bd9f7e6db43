package flightsql

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// openEndpoints runs query on the head and opens a DoGet of every endpoint of its answer, each
// where it is located, reading nothing: each stream has sent its schema and then waits for the
// client. It returns the clients that hold the streams.
func (c *cancelCluster) openEndpoints(ctx context.Context, query string) ([]*flightsql.Client, error) {
	head, err := flightsql.NewClient(c.head.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	clients := []*flightsql.Client{head}
	info, err := head.Execute(ctx, query)
	if err != nil {
		return clients, err
	}
	for _, ep := range info.Endpoint {
		at := head
		if len(ep.Location) == 1 {
			if at, err = flightsql.NewClient(strings.TrimPrefix(ep.Location[0].Uri, "grpc://"), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
				return clients, err
			}
			clients = append(clients, at)
		}
		if _, err := at.DoGet(ctx, ep.Ticket); err != nil {
			return clients, err
		}
	}
	return clients, nil
}

// TestClientGoneWithoutReadingStopsEverywhere: a client that opens every endpoint of a
// distributed join, reads not one batch and goes away (its calls canceled, or its connections
// closed) stops the join on the head and on every data node: executions, producers, memory
// reservations and Arrow buffers are all given back.
func TestClientGoneWithoutReadingStopsEverywhere(t *testing.T) {
	c := startCancelCluster(t)
	base := c.warmUp(t)
	for _, query := range []string{joinOnNodes, joinOnHead} {
		for _, closeConns := range []bool{false, true} {
			err := retryUnavailable(t, func() error {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				clients, err := c.openEndpoints(ctx, query)
				if closeConns {
					// The process goes away: its connections close with the calls still open.
					for _, cl := range clients {
						cl.Close()
					}
				} else {
					cancel()
					for _, cl := range clients {
						defer cl.Close()
					}
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			c.waitReleased(t, base, 10)
		}
	}
}

// TestPlannedButNeverFetchedHoldsNothing: a client that plans a distributed join and never
// redeems its tickets leaves nothing running or reserved anywhere.
func TestPlannedButNeverFetchedHoldsNothing(t *testing.T) {
	c := startCancelCluster(t)
	cl := dialFlightSQL(t, c.head.addr)
	defer cl.Close()
	var info *flight.FlightInfo
	err := retryUnavailable(t, func() (err error) {
		info, err = cl.Execute(testContext(t), joinOnNodes)
		return err
	})
	if err != nil || len(info.Endpoint) == 0 {
		t.Fatalf("planning the join: %v", err)
	}
	c.waitReleased(t, -1, 0)
}

// TestSessionTimeoutStopsAJoinReadFromTheNodes: the session's statement timeout travels with
// the tickets, so a join whose final stage the client reads from the data nodes stops there
// with DEADLINE_EXCEEDED (no process has a timeout of its own, and the node clients send no
// cookie) and everything is given back.
func TestSessionTimeoutStopsAJoinReadFromTheNodes(t *testing.T) {
	c := startCancelCluster(t)
	ctx := testContext(t)
	head, err := flightsql.NewClient(c.head.addr, nil, []flight.ClientMiddleware{flight.CreateClientMiddleware(flight.NewCookieMiddleware())},
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer head.Close()
	opts, err := flight.NewSessionOptionValues(map[string]any{optionStatementTimeout: "300ms"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := head.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: opts}); err != nil || len(res.GetErrors()) > 0 {
		t.Fatalf("setting statement_timeout: %v %v", res.GetErrors(), err)
	}
	clients := map[string]*flightsqlClient{}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	_, err = readEndpoints(ctx, head, clients, joinOnNodes)
	if ctx.Err() != nil {
		t.Fatalf("the test's own deadline stopped the join, not the session's timeout: %v", err)
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a join of billions of rows read from the nodes under a 300 ms session timeout: %v, want DEADLINE_EXCEEDED", err)
	}
	c.waitReleased(t, -1, 0)
}
