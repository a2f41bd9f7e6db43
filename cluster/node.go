package cluster

import (
	"context"
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/flightwire"
	"github.com/cachedb/cachedb/internal/rpcerr"
)

// Flight action types a data node serves for the head's dataset registry.
const (
	// ActionMaterialize (data node): body MaterializeRequest, one result PartitionStats. The
	// node runs the partition's part of the query and holds the rows in memory.
	ActionMaterialize = "cachedb.materialize"
	// ActionDropPartitions (data node): body DropRequest, one result {}. The node frees what it
	// holds of that generation of the dataset.
	ActionDropPartitions = "cachedb.drop-partitions"
)

// maxDatasetBody bounds a dataset action body: the SQL text and the scan tasks of a partition.
const maxDatasetBody = 16 << 20

// MaterializeRequest asks a data node to make and hold one partition of a dataset: the rows of
// SQL (run in the given session, at the pinned table versions) from the scan tasks Tasks, or
// the whole query's rows when Whole is set. Every process numbers the scan tasks of the same
// SQL at the same pins alike, so the partition's rows are the same wherever it is made.
type MaterializeRequest struct {
	Dataset    string            `json:"dataset"`
	Generation uint64            `json:"generation"`
	Partitions int               `json:"partitions"`
	Partition  int               `json:"partition"`
	SQL        string            `json:"sql"`
	Catalog    string            `json:"catalog,omitempty"`
	Schema     string            `json:"schema,omitempty"`
	Pins       map[string]string `json:"pins,omitempty"`
	Tasks      []int             `json:"tasks,omitempty"`
	Whole      bool              `json:"whole,omitempty"`
	// Stored is DatasetJob.Stored: per column, the type to hold it as ("" keeps it).
	Stored []string `json:"stored,omitempty"`
	// Pin is DatasetJob.Pin.
	Pin string `json:"pin,omitempty"`
}

// PinMemory (DatasetJob.Pin) keeps a dataset's partitions in memory: they never move to a
// node's disk tier, and a partition that does not fit in memory is refused.
const PinMemory = "memory"

// PartitionStats measures a partition held by a node.
type PartitionStats struct {
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
}

// DropRequest asks a node to free one generation of a dataset.
type DropRequest struct {
	Dataset    string `json:"dataset"`
	Generation uint64 `json:"generation"`
}

// DatasetStore is what a data node does with datasets; the node runtime implements it.
type DatasetStore interface {
	// Materialize makes and holds one partition (see MaterializeRequest), replacing anything
	// held for an older generation of the same dataset.
	Materialize(ctx context.Context, req MaterializeRequest) (PartitionStats, error)
	// DropDataset frees what the node holds of that generation of the dataset.
	DropDataset(name string, generation uint64)
	// ReadPartition streams columns (indexes into the dataset schema) of a partition the node
	// holds; errs.Unavailable when it holds no such partition.
	ReadPartition(ctx context.Context, name string, generation uint64, partition int, columns []int) (array.RecordReader, error)
}

// NodeConfig describes a data node's Flight service beyond Flight SQL.
type NodeConfig struct {
	ID, Version string
	// BootID names this process (see RegisterRequest.BootID); node-info reports it.
	BootID string
	// Key is the cluster secret: tickets and the head's actions must be signed with one of its
	// keys (nil: the node verifies nothing and serves no partition or shuffle ticket).
	Key *ticket.Keyring
	// Store holds the node's datasets (nil: the node serves no dataset actions).
	Store DatasetStore
	// Shuffles produces the node's shuffle buckets (nil: the node serves no shuffle tickets).
	Shuffles ShuffleSource
	// Memory reports what the node holds (nil: the node serves no ActionNodeMemory).
	Memory func() NodeMemory
}

// NodeActions returns the wrapper that makes a Flight service a data node's: it answers
// ActionNodeInfo with the node's identity, ActionMaterialize and ActionDropPartitions through
// cfg.Store, and DoGet of partition tickets; every other call goes to the wrapped service (the
// node's Flight SQL server, which serves DoGet for the statement tickets the head signs). Use
// it as flightsql.Options.Extend.
func NodeActions(cfg NodeConfig) func(flight.FlightServer) flight.FlightServer {
	info := NodeInfo{ID: cfg.ID, BootID: cfg.BootID, StartedAt: time.Now().UTC().Format(time.RFC3339Nano), Version: cfg.Version}
	return func(next flight.FlightServer) flight.FlightServer {
		return &nodeService{FlightServer: next, info: info, cfg: cfg}
	}
}

type nodeService struct {
	flight.FlightServer
	info NodeInfo
	cfg  NodeConfig
}

// DoAction serves the node's own actions and passes other actions on.
func (n *nodeService) DoAction(action *flight.Action, stream flight.FlightService_DoActionServer) error {
	var (
		result any
		err    error
	)
	if (action.Type == ActionMaterialize || action.Type == ActionDropPartitions) && n.cfg.Store != nil ||
		(action.Type == ActionCancelStage || action.Type == ActionStageProfile) && n.cfg.Shuffles != nil ||
		action.Type == ActionNodeMemory && n.cfg.Memory != nil {
		if err := verifyAction(stream.Context(), n.cfg.Key, action, time.Now()); err != nil {
			return rpcerr.ToStatus(err)
		}
	}
	switch {
	case action.Type == ActionNodeInfo:
		result = n.info
	case action.Type == ActionNodeMemory && n.cfg.Memory != nil:
		result = n.cfg.Memory()
	case action.Type == ActionMaterialize && n.cfg.Store != nil:
		var req MaterializeRequest
		if err = decodeBody(action, &req, maxDatasetBody); err == nil {
			result, err = n.cfg.Store.Materialize(stream.Context(), req)
		}
	case action.Type == ActionDropPartitions && n.cfg.Store != nil:
		var req DropRequest
		if err = decodeBody(action, &req, maxDatasetBody); err == nil {
			n.cfg.Store.DropDataset(req.Dataset, req.Generation)
			result = struct{}{}
		}
	case action.Type == ActionCancelStage && n.cfg.Shuffles != nil:
		var req CancelStageRequest
		if err = decodeBody(action, &req, maxCancelBody); err == nil {
			if req.Query == "" || len(req.Query) > 128 {
				err = errs.Invalidf("%s: the query id must be 1 to 128 bytes", action.Type)
			} else {
				n.cfg.Shuffles.CancelStage(req.Query, req.Expires)
				result = struct{}{}
			}
		}
	case action.Type == ActionStageProfile && n.cfg.Shuffles != nil:
		var req StageProfileRequest
		if err = decodeBody(action, &req, maxProfileBody); err == nil {
			profiler, ok := n.cfg.Shuffles.(StageProfiler)
			switch {
			case req.Query == "" || len(req.Query) > 128:
				err = errs.Invalidf("%s: the query id must be 1 to 128 bytes", action.Type)
			case !ok:
				err = errs.Unsupportedf("%s: this node keeps no measurements", action.Type)
			default:
				var text string
				if text, err = profiler.StageProfile(req.Query); err == nil {
					result = StageProfile{Plan: text}
				}
			}
		}
	default:
		return n.FlightServer.DoAction(action, stream)
	}
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	body, err := json.Marshal(result)
	if err != nil {
		return rpcerr.ToStatus(errs.Internalf("%s result: %v", action.Type, err))
	}
	return stream.Send(&flight.Result{Body: body})
}

// DoGet streams a partition for a partition ticket, a shuffle bucket for a shuffle ticket, and
// passes any other ticket on.
func (n *nodeService) DoGet(tk *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	var (
		rdr array.RecordReader
		err error
	)
	raw := tk.GetTicket()
	kind, isTicket := ticket.KindOf(raw)
	switch {
	case isTicket && kind == ticket.Partition && n.cfg.Store != nil:
		var t PartitionTicket
		if t, err = DecodePartitionTicket(n.cfg.Key, raw, time.Now()); err == nil {
			rdr, err = n.cfg.Store.ReadPartition(stream.Context(), t.Dataset, t.Generation, t.Partition, t.Columns)
		}
	case isTicket && kind == ticket.Shuffle && n.cfg.Shuffles != nil:
		var t ShuffleTicket
		if t, err = DecodeShuffleTicket(n.cfg.Key, raw, time.Now()); err == nil {
			rdr, err = n.cfg.Shuffles.ServeShuffle(stream.Context(), t)
		}
	default:
		return n.FlightServer.DoGet(tk, stream)
	}
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	defer rdr.Release()
	w := flightwire.NewWriter(stream, rdr.Schema())
	defer w.Close()
	for rdr.Next() {
		if err := w.Write(rdr.RecordBatch(), nil); err != nil {
			return err
		}
	}
	if err := rdr.Err(); err != nil {
		return rpcerr.ToStatus(err)
	}
	return w.Close()
}

// ListActions lists the node's actions, then the wrapped service's.
func (n *nodeService) ListActions(in *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	types := []*flight.ActionType{{Type: ActionNodeInfo, Description: "the node's identity: JSON {id, boot_id, started_at, version}"}}
	if n.cfg.Shuffles != nil {
		types = append(types, &flight.ActionType{Type: ActionCancelStage, Description: "stop a distributed execution on this node (cluster only)"},
			&flight.ActionType{Type: ActionStageProfile, Description: "the measurements of this node's part of an EXPLAIN ANALYZE (cluster only)"})
	}
	if n.cfg.Memory != nil {
		types = append(types, &flight.ActionType{Type: ActionNodeMemory, Description: "what the node holds: memory pool, disk tier, dataset partitions (cluster only)"})
	}
	if n.cfg.Store != nil {
		types = append(types,
			&flight.ActionType{Type: ActionMaterialize, Description: "make and hold one partition of a dataset (head only)"},
			&flight.ActionType{Type: ActionDropPartitions, Description: "free one generation of a dataset (head only)"})
	}
	for _, t := range types {
		if err := stream.Send(t); err != nil {
			return err
		}
	}
	return n.FlightServer.ListActions(in, stream)
}
