package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/rpcerr"
)

// Flight action types of the membership protocol.
const (
	// ActionRegister (head): body RegisterRequest, one result RegisterResponse.
	ActionRegister = "cachedb.register"
	// ActionHeartbeat (head): body HeartbeatRequest, one result HeartbeatResponse; NotFound
	// when the node must register again.
	ActionHeartbeat = "cachedb.heartbeat"
	// ActionNodeInfo (data node): empty body, one result NodeInfo.
	ActionNodeInfo = "cachedb.node-info"
)

// maxBody bounds an action body; membership messages are a few hundred bytes.
const maxBody = 64 << 10

// RegisterRequest announces a data node to the head.
type RegisterRequest struct {
	ID string `json:"id"`
	// Addr is the HOST:PORT of the node's Flight server, as other processes reach it.
	Addr string `json:"addr"`
	// BootID names the node's process (random at each start): the head tells a restarted node,
	// which holds nothing, from one that was only slow. Optional; without it every
	// registration counts as a restart.
	BootID string `json:"boot_id,omitempty"`
}

// RegisterResponse tells the node how often to heartbeat.
type RegisterResponse struct {
	HeartbeatIntervalMS int64 `json:"heartbeat_interval_ms"`
	SuspectAfterMS      int64 `json:"suspect_after_ms"`
	LostAfterMS         int64 `json:"lost_after_ms"`
}

// HeartbeatRequest says that a registered node is alive.
type HeartbeatRequest struct {
	ID string `json:"id"`
}

// HeartbeatResponse is empty for now; it is a JSON object so fields can be added.
type HeartbeatResponse struct{}

// NodeInfo is a data node's answer to ActionNodeInfo.
type NodeInfo struct {
	ID        string `json:"id"`
	BootID    string `json:"boot_id,omitempty"`
	StartedAt string `json:"started_at"` // RFC 3339, UTC
	Version   string `json:"version,omitempty"`
}

// Actions serves the head's side of the membership protocol over Flight DoAction.
type Actions struct {
	m   *Membership
	key *ticket.Keyring
}

// NewActions returns the Flight handler for m. With a cluster secret, it refuses every action
// not signed with one of its keys (UNAUTHENTICATED); a nil key accepts any caller.
func NewActions(m *Membership, key *ticket.Keyring) *Actions { return &Actions{m: m, key: key} }

// Handles reports whether actionType is one Actions serves.
func (a *Actions) Handles(actionType string) bool {
	return actionType == ActionRegister || actionType == ActionHeartbeat
}

// Do serves one membership action and returns the result body. Errors are gRPC statuses:
// InvalidArgument for a malformed body, NotFound when the node must register again.
func (a *Actions) Do(ctx context.Context, action *flight.Action) ([]byte, error) {
	if a.Handles(action.Type) {
		if err := verifyAction(ctx, a.key, action, time.Now()); err != nil {
			return nil, rpcerr.ToStatus(err)
		}
	}
	switch action.Type {
	case ActionRegister:
		var req RegisterRequest
		if err := decodeBody(action, &req, maxBody); err != nil {
			return nil, rpcerr.ToStatus(err)
		}
		if _, err := a.m.Register(req.ID, req.Addr, req.BootID); err != nil {
			return nil, rpcerr.ToStatus(err)
		}
		return json.Marshal(RegisterResponse{
			HeartbeatIntervalMS: a.m.HeartbeatInterval().Milliseconds(),
			SuspectAfterMS:      a.m.SuspectAfter().Milliseconds(),
			LostAfterMS:         a.m.LostAfter().Milliseconds(),
		})
	case ActionHeartbeat:
		var req HeartbeatRequest
		if err := decodeBody(action, &req, maxBody); err != nil {
			return nil, rpcerr.ToStatus(err)
		}
		if err := a.m.Heartbeat(req.ID); err != nil {
			return nil, rpcerr.ToStatus(err)
		}
		return json.Marshal(HeartbeatResponse{})
	default:
		return nil, rpcerr.ToStatus(errs.Unsupportedf("action type %q is not a membership action", action.Type))
	}
}

// Wrap returns next with the membership actions added: DoAction serves cachedb.register and
// cachedb.heartbeat and passes every other type to next; ListActions lists next's actions and
// then these. All other calls go to next unchanged.
func (a *Actions) Wrap(next flight.FlightServer) flight.FlightServer {
	return &wrapped{FlightServer: next, actions: a}
}

type wrapped struct {
	flight.FlightServer
	actions *Actions
}

func (w *wrapped) DoAction(action *flight.Action, stream flight.FlightService_DoActionServer) error {
	if !w.actions.Handles(action.Type) {
		return w.FlightServer.DoAction(action, stream)
	}
	body, err := w.actions.Do(stream.Context(), action)
	if err != nil {
		return err
	}
	return stream.Send(&flight.Result{Body: body})
}

func (w *wrapped) ListActions(in *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	if err := w.FlightServer.ListActions(in, stream); err != nil && errs.CategoryOf(rpcerr.FromStatus(err)) != errs.Unsupported {
		return err
	}
	for _, t := range []*flight.ActionType{
		{Type: ActionRegister, Description: "register a data node: JSON {id, addr, boot_id}"},
		{Type: ActionHeartbeat, Description: "heartbeat of a registered data node: JSON {id}"},
	} {
		if err := stream.Send(t); err != nil {
			return err
		}
	}
	return nil
}

// decodeBody parses an action's JSON body of at most limit bytes, rejecting unknown fields so
// that a node speaking a newer protocol is told instead of half understood.
func decodeBody(action *flight.Action, v any, limit int) error {
	if len(action.Body) > limit {
		return errs.Invalidf("%s: body is %d bytes, more than %d", action.Type, len(action.Body), limit)
	}
	if err := strictUnmarshal(action.Body, v); err != nil {
		return errs.Invalidf("%s: body is not the expected JSON: %v", action.Type, err)
	}
	return nil
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
