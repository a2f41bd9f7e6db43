package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/internal/errs"
)

// NodeServer is a data node's Flight server. For now it answers only ActionNodeInfo; partition
// DoGet comes with distributed plans.
type NodeServer struct {
	flight.BaseFlightServer

	info NodeInfo
	grpc *grpc.Server
}

// NewNodeServer returns the Flight server of data node id. version is reported by node-info.
func NewNodeServer(id, version string) *NodeServer {
	n := &NodeServer{info: NodeInfo{ID: id, StartedAt: time.Now().UTC().Format(time.RFC3339Nano), Version: version}}
	n.grpc = grpc.NewServer()
	flight.RegisterFlightServiceServer(n.grpc, n)
	return n
}

// ID is the node's ID.
func (n *NodeServer) ID() string { return n.info.ID }

// Serve accepts Flight connections on lis until Shutdown; it returns nil after a shutdown.
func (n *NodeServer) Serve(lis net.Listener) error {
	err := n.grpc.Serve(lis)
	if err == nil || errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return errs.Internalf("data node %s serving Flight on %s: %v", n.info.ID, lis.Addr(), err)
}

// Shutdown stops accepting calls and waits for those in flight until ctx ends, then cuts them
// off. Safe to call more than once.
func (n *NodeServer) Shutdown(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		n.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		n.grpc.Stop()
		<-done
	}
}

// DoAction serves ActionNodeInfo.
func (n *NodeServer) DoAction(action *flight.Action, stream flight.FlightService_DoActionServer) error {
	if action.Type != ActionNodeInfo {
		return status.Errorf(codes.Unimplemented, "data node %s does not serve action %q", n.info.ID, action.Type)
	}
	body, err := json.Marshal(n.info)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return stream.Send(&flight.Result{Body: body})
}

// ListActions lists ActionNodeInfo.
func (n *NodeServer) ListActions(_ *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	return stream.Send(&flight.ActionType{Type: ActionNodeInfo, Description: "the node's identity: JSON {id, started_at, version}"})
}
