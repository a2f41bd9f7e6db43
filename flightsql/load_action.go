package flightsql

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/rpcerr"
)

// ActionLoad materializes a dataset from a job spec: DoAction with body an engine.DatasetSpec
// as JSON. The results are JSON LoadMessage objects: progress while partitions are made, then
// one with the dataset. A server without data nodes answers Unimplemented.
const ActionLoad = "cachedb.load"

// maxLoadBody bounds a load action's body (a job spec).
const maxLoadBody = 1 << 20

// LoadMessage is one result of ActionLoad: Progress while the dataset is made, then Dataset.
type LoadMessage struct {
	Progress *cluster.Progress `json:"progress,omitempty"`
	Dataset  *LoadedDataset    `json:"dataset,omitempty"`
}

// LoadedDataset describes the dataset a load made or reused.
type LoadedDataset struct {
	Name string `json:"name"`
	// Generation identifies this materialization of the name; a training read given it
	// (option generation) refuses any other.
	Generation uint64            `json:"generation"`
	Rows       int64             `json:"rows"`
	Bytes      int64             `json:"bytes"`
	Partitions int               `json:"partitions"`
	Nodes      []string          `json:"nodes"`
	Snapshot   map[string]string `json:"snapshot"`
	Reused     bool              `json:"reused"`
	Seconds    float64           `json:"seconds"`
}

// loadService adds ActionLoad to the Flight service.
type loadService struct {
	flight.FlightServer
	s *Server
}

func (l *loadService) DoAction(action *flight.Action, stream flight.FlightService_DoActionServer) error {
	if action.Type != ActionLoad {
		return l.FlightServer.DoAction(action, stream)
	}
	if err := l.s.authorizeSomewhere(stream.Context(), auth.Admin, "loading a dataset"); err != nil {
		return rpcerr.ToStatus(err)
	}
	if len(action.Body) > maxLoadBody {
		return rpcerr.ToStatus(errs.Invalidf("%s: the spec is %d bytes, more than %d", ActionLoad, len(action.Body), maxLoadBody))
	}
	var spec engine.DatasetSpec
	dec := json.NewDecoder(bytes.NewReader(action.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return rpcerr.ToStatus(errs.Invalidf("%s: the spec is not valid JSON of a dataset: %v", ActionLoad, err))
	}
	// What the spec reads is checked as its query binds; making the dataset needs admin on it.
	if err := l.s.authorizeOn(stream.Context(), auth.Admin, "load", l.s.eng.TableTarget(spec.Name)); err != nil {
		return rpcerr.ToStatus(err)
	}
	send := func(m LoadMessage) error {
		body, err := json.Marshal(m)
		if err != nil {
			return rpcerr.ToStatus(errs.Internalf("%s: progress message: %v", ActionLoad, err))
		}
		return stream.Send(&flight.Result{Body: body})
	}
	start := time.Now()
	var sendErr error
	info, err := l.s.eng.Load(stream.Context(), spec, func(p cluster.Progress) {
		if sendErr == nil {
			sendErr = send(LoadMessage{Progress: &p})
		}
	})
	if err != nil {
		l.s.opts.Logger.Warn("load failed", "dataset", spec.Name, "err", err)
		return rpcerr.ToStatus(err)
	}
	if !info.Reused {
		// Who made which dataset, and whether it swapped out one that jobs may be reading.
		user := "(no login)"
		if p, ok := principalFrom(stream.Context()); ok {
			user = p.User
		}
		l.s.opts.Logger.Info("dataset loaded", "dataset", info.Name, "generation", info.Generation, "user", user, "replace", spec.Replace)
	}
	if sendErr != nil {
		return sendErr
	}
	return send(LoadMessage{Dataset: &LoadedDataset{
		Name: info.Name, Generation: info.Generation, Rows: info.Rows, Bytes: info.Bytes, Partitions: info.Partitions, Nodes: info.Nodes,
		Snapshot: info.Pins, Reused: info.Reused, Seconds: time.Since(start).Seconds(),
	}})
}

func (l *loadService) ListActions(in *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	if err := l.FlightServer.ListActions(in, stream); err != nil && errs.CategoryOf(rpcerr.FromStatus(err)) != errs.Unsupported {
		return err
	}
	return stream.Send(&flight.ActionType{Type: ActionLoad, Description: "materialize a dataset from a job spec (JSON); streams progress"})
}
