package cluster

import (
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NodeActions returns the wrapper that makes a Flight service a data node's: it answers
// ActionNodeInfo with the node's identity and passes every other call to the wrapped service
// (the node's Flight SQL server, which serves DoGet for the tickets the head signs). Use it as
// flightsql.Options.Extend.
func NodeActions(id, version string) func(flight.FlightServer) flight.FlightServer {
	info := NodeInfo{ID: id, StartedAt: time.Now().UTC().Format(time.RFC3339Nano), Version: version}
	return func(next flight.FlightServer) flight.FlightServer {
		return &nodeService{FlightServer: next, info: info}
	}
}

type nodeService struct {
	flight.FlightServer
	info NodeInfo
}

// DoAction serves ActionNodeInfo and passes other actions on.
func (n *nodeService) DoAction(action *flight.Action, stream flight.FlightService_DoActionServer) error {
	if action.Type != ActionNodeInfo {
		return n.FlightServer.DoAction(action, stream)
	}
	body, err := json.Marshal(n.info)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return stream.Send(&flight.Result{Body: body})
}

// ListActions lists ActionNodeInfo, then the wrapped service's actions.
func (n *nodeService) ListActions(in *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	if err := stream.Send(&flight.ActionType{Type: ActionNodeInfo, Description: "the node's identity: JSON {id, started_at, version}"}); err != nil {
		return err
	}
	return n.FlightServer.ListActions(in, stream)
}
