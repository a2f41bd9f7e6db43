package flightsql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
)

// dataNodeService is the Flight service of a data node (Options.DataNode): it runs what its head
// hands out and nothing a client asks directly. It serves DoGet of tickets (statement, training
// and empty-result tickets the head signed, which DoGetStatement verifies with the cluster
// secret; partition and shuffle tickets of the cluster), DoAction of actions and DoPut of store
// calls signed with the cluster secret. Every other call is refused with PERMISSION_DENIED, statements above all: a
// client's SQL sent to a data node's port does not run.
type dataNodeService struct {
	flight.FlightServer
	keys *ticket.Keyring
}

func refuseOnDataNode() error {
	return errs.Deniedf("this is a data node: it serves only what its head hands out (tickets in a FlightInfo); send statements to the head")
}

func (d *dataNodeService) DoGet(tk *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	kind, bare := ticket.KindOf(tk.GetTicket())
	if _, err := fsql.GetStatementQueryTicket(tk); err != nil && !(bare && (kind == ticket.Partition || kind == ticket.Shuffle)) {
		return refuseOnDataNode()
	}
	return d.FlightServer.DoGet(tk, stream)
}

func (d *dataNodeService) DoAction(action *flight.Action, stream flight.FlightService_DoActionServer) error {
	if err := cluster.VerifyAction(stream.Context(), d.keys, action); err != nil {
		if cluster.SignedAction(stream.Context()) {
			return err
		}
		return refuseOnDataNode()
	}
	return d.FlightServer.DoAction(action, stream)
}

func (d *dataNodeService) GetFlightInfo(context.Context, *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, refuseOnDataNode()
}

func (d *dataNodeService) PollFlightInfo(context.Context, *flight.FlightDescriptor) (*flight.PollInfo, error) {
	return nil, refuseOnDataNode()
}

func (d *dataNodeService) GetSchema(context.Context, *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	return nil, refuseOnDataNode()
}

// DoPut takes only the head's store calls (an ingested dataset's rows, signed with the cluster
// secret: cluster.ActionStorePartition).
func (d *dataNodeService) DoPut(stream flight.FlightService_DoPutServer) error {
	if isStore, err := cluster.VerifyStoreCall(stream.Context(), d.keys); !isStore {
		return refuseOnDataNode()
	} else if err != nil {
		return err
	}
	return d.FlightServer.DoPut(stream)
}

func (d *dataNodeService) DoExchange(flight.FlightService_DoExchangeServer) error {
	return refuseOnDataNode()
}

func (d *dataNodeService) ListFlights(*flight.Criteria, flight.FlightService_ListFlightsServer) error {
	return refuseOnDataNode()
}

func (d *dataNodeService) ListActions(*flight.Empty, flight.FlightService_ListActionsServer) error {
	return refuseOnDataNode()
}
