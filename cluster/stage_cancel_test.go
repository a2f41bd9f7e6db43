package cluster

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/cluster/ticket"
)

// recordingShuffles is a ShuffleSource that records the executions it was told to cancel.
type recordingShuffles struct {
	mu       sync.Mutex
	canceled []CancelStageRequest
}

func (s *recordingShuffles) ServeShuffle(context.Context, ShuffleTicket) (array.RecordReader, error) {
	return nil, status.Error(codes.Unimplemented, "no shuffles here")
}

func (s *recordingShuffles) CancelStage(query string, expires time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.canceled = append(s.canceled, CancelStageRequest{Query: query, Expires: expires})
}

// A data node cancels an execution when a peer signed with the cluster secret asks, and refuses
// (UNAUTHENTICATED, nothing canceled) a request signed with another secret.
func TestCancelStageNeedsTheClusterSecret(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingShuffles{}
	srv := grpc.NewServer()
	flight.RegisterFlightServiceServer(srv, NodeActions(NodeConfig{ID: "n", Key: ticket.NewKeyring([]byte("k"), nil), Shuffles: rec})(&flight.BaseFlightServer{}))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	addr := lis.Addr().String()
	st := Stage{Query: "q1", Nodes: []string{addr}, Expires: time.Now().Add(time.Hour).UTC().Truncate(time.Second)}

	wrong := NewShuffles(ticket.NewKeyring([]byte("not k"), nil))
	defer wrong.Close()
	if err := wrong.CancelStage(context.Background(), addr, st); status.Code(err) != codes.Unauthenticated {
		t.Errorf("cancel signed with another secret: %v, want UNAUTHENTICATED", err)
	}
	right := NewShuffles(ticket.NewKeyring([]byte("k"), nil))
	defer right.Close()
	if err := right.CancelStage(context.Background(), addr, st); err != nil {
		t.Fatalf("cancel signed with the cluster secret: %v", err)
	}
	if err := right.CancelStage(context.Background(), addr, Stage{Expires: st.Expires}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("cancel without a query id: %v, want INVALID_ARGUMENT", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.canceled) != 1 || rec.canceled[0].Query != "q1" || !rec.canceled[0].Expires.Equal(st.Expires) {
		t.Errorf("canceled %v, want only q1 until %s", rec.canceled, st.Expires)
	}
}
