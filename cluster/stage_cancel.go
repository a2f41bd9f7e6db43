package cluster

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

// ActionCancelStage (data node): body CancelStageRequest, one result {}. The node stops every
// part of that distributed execution it runs (shuffle producers, a final stage being read) and
// frees what they hold; later shuffle fetches and statement tickets of the execution are
// refused with CANCELLED until the execution's tickets expire.
const ActionCancelStage = "cachedb.cancel-stage"

// CancelStageRequest names the execution to stop (Stage.Query) and when its tickets expire:
// how long the node must remember that it was canceled.
type CancelStageRequest struct {
	Query   string    `json:"query"`
	Expires time.Time `json:"expires"`
}

// maxCancelBody bounds a cancel body: a query id and a time.
const maxCancelBody = 4 << 10

// StageCanceler stops a distributed execution on a data node; the node runtime implements it.
type StageCanceler interface {
	CancelStage(query string, expires time.Time)
}

// CancelStage asks the data node at addr to stop everything it runs of st's execution. It is
// best effort: a node that cannot be reached is running nothing a client can still read, and
// forgets the execution when its consumers are gone (see the node runtime's stage idle timeout).
func (s *Shuffles) CancelStage(ctx context.Context, addr string, st Stage) error {
	if s.key == nil {
		return errs.Internalf("cancel stage: no cluster secret to sign it with")
	}
	body, err := json.Marshal(CancelStageRequest{Query: st.Query, Expires: st.Expires})
	if err != nil {
		return errs.Internalf("cancel stage: %v", err)
	}
	return s.clients.action(ctx, addr, ActionCancelStage, body, nil)
}
