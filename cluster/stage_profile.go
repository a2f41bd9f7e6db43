package cluster

import (
	"context"
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// ActionStageProfile (data node): body StageProfileRequest, one result StageProfile. The node
// answers the measurements of its part of an execution run with Stage.Analyze (EXPLAIN
// ANALYZE): its plan with each operator's rows, batches, bytes and time in this process. A
// node that did not run the execution analyzed, or whose tickets expired, answers NOT_FOUND.
const ActionStageProfile = "cachedb.stage-profile"

// StageProfileRequest names the execution (Stage.Query).
type StageProfileRequest struct {
	Query string `json:"query"`
}

// StageProfile is a node's measurements of its part of an execution.
type StageProfile struct {
	// Plan is the node's plan, one operator per line, each measured operator's line ending
	// with "  rows=R batches=B bytes=N time=T", "  (not run here)" for one another process ran
	// (exec.FormatAnalyzedPart).
	Plan string `json:"plan"`
}

// StageProfiler keeps the measurements of analyzed executions on a data node; the node runtime
// implements it.
type StageProfiler interface {
	StageProfile(query string) (string, error)
}

// maxProfileBody bounds a profile request: a query id.
const maxProfileBody = 4 << 10

// StageProfile asks the data node at addr for its measurements of st's execution.
func (s *Shuffles) StageProfile(ctx context.Context, addr string, st Stage) (string, error) {
	if s.key == nil {
		return "", errs.Internalf("stage profile: no cluster secret to sign it with")
	}
	body, err := json.Marshal(StageProfileRequest{Query: st.Query})
	if err != nil {
		return "", errs.Internalf("stage profile: %v", err)
	}
	var out StageProfile
	if err := s.clients.action(ctx, addr, ActionStageProfile, body, &out); err != nil {
		return "", err
	}
	return out.Plan, nil
}

// RunFinalStage redeems raw, a statement ticket of a distributed execution sealed by the head
// for data node addr, there, and returns the stream of that node's share of the final stage:
// the head reading the final stage itself, as a client would (EXPLAIN ANALYZE).
func (s *Shuffles) RunFinalStage(ctx context.Context, addr string, raw []byte) (array.RecordReader, error) {
	return s.clients.doGet(ctx, addr, raw)
}
