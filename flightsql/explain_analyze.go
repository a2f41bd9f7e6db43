package flightsql

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/engine"
)

// EXPLAIN ANALYZE of a query that divides among data nodes runs it as a client's query runs:
// the head places its scan tasks, every process of the execution plans it with each operator
// measured (cluster.Stage.Analyze), the head reads the whole result itself (its own final stage,
// or each data node's share of it) and then asks every data node for its measurements
// (cluster.ActionStageProfile). The answer is the distributed plan as each process ran it, with
// the rows, batches, bytes and time of every operator there: a Shuffle's line on a node is what
// that node received into its buckets, the line below it what the node produced for all of them.

// analyzeDistributed is the engine's DistributedAnalyzer on a head with data nodes.
func (s *Server) analyzeDistributed(ctx context.Context, query string) (string, bool, error) {
	rt, err := s.runtime()
	if err != nil || rt.Peers() == nil {
		return "", false, nil
	}
	session := engine.SessionFrom(ctx)
	pins := session.Pins
	if len(pins) == 0 {
		// Pinned as a client's query is (GetFlightInfoStatement): every process then plans the
		// datasets with the head's row counts, so alike, and reads the same table versions.
		prep, err := s.eng.Prepare(ctx, query)
		if err != nil {
			return "", false, err
		}
		pins = prep.Pins
	}
	st := newStage(query, session, pins, s.now().Add(s.opts.TicketTTL))
	st.DatasetRows = s.eng.DatasetRows(pins)
	st.Analyze = true
	plan, st, err := s.placeStage(ctx, st)
	if err != nil || plan == nil {
		return "", false, err
	}
	peers := rt.Peers()
	start := time.Now()
	var (
		headPart  *finalStagePart
		nodeParts = map[int]*finalStagePart{}
	)
	if !plan.OnNodes {
		headPart = &finalStagePart{}
		res, err := rt.ExecuteStage(ctx, st, -1)
		if err != nil {
			return "", false, err
		}
		err = headPart.drain(res.Reader, time.Now())
		// Measured before the reader's release ends the head's part of the execution.
		headPart.profile, _ = rt.StageProfile(st.Query)
		res.Reader.Release()
		if err != nil {
			return "", false, err
		}
	} else {
		g, gctx := errgroup.WithContext(forwardLogin(ctx))
		var mu sync.Mutex
		for _, i := range finalStageNodes(plan, st) {
			tk, err := s.sealTicket(st.Expires, statementTicket{Stage: st, Self: i, User: userOf(ctx)})
			if err != nil {
				return "", false, err
			}
			g.Go(func() error {
				began := time.Now()
				rdr, err := peers.RunFinalStage(gctx, st.Nodes[i], tk)
				if err != nil {
					return err
				}
				defer rdr.Release()
				part := &finalStagePart{}
				if err := part.drain(rdr, began); err != nil {
					return err
				}
				mu.Lock()
				nodeParts[i] = part
				mu.Unlock()
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return "", false, err
		}
	}
	elapsed := time.Since(start)
	profiles := make([]string, len(st.Nodes))
	failures := make([]error, len(st.Nodes))
	var wg sync.WaitGroup
	for i, addr := range st.Nodes {
		wg.Go(func() { profiles[i], failures[i] = peers.StageProfile(ctx, addr, st) })
	}
	wg.Wait()

	var b strings.Builder
	where := "on the head, which gathered from the data nodes"
	if plan.OnNodes {
		where = "on the data nodes"
	}
	rows := int64(0)
	if headPart != nil {
		rows = headPart.rows
	}
	for _, p := range nodeParts {
		rows += p.rows
	}
	fmt.Fprintf(&b, "%s, %s, %s; the final stage ran %s; %d rows in %s\n",
		countOf(len(st.Nodes), "data node"), countOf(len(plan.Scans), "distributed scan"), countOf(plan.Shuffles, "shuffle"),
		where, rows, elapsed.Round(time.Microsecond))
	if headPart != nil {
		fmt.Fprintf(&b, "head: final stage %s\n", headPart)
		writeIndented(&b, headPart.profile)
	}
	for i, addr := range st.Nodes {
		fmt.Fprintf(&b, "data node %d (%s): ", i, addr)
		if p, ok := nodeParts[i]; ok {
			fmt.Fprintf(&b, "final stage %s\n", p)
		} else {
			b.WriteString("shuffle producers\n")
		}
		if failures[i] != nil {
			fmt.Fprintf(&b, "  (no measurements: %v)\n", failures[i])
			continue
		}
		writeIndented(&b, profiles[i])
	}
	return b.String(), true, nil
}

// finalStagePart is what one process's share of a final stage returned to the head.
type finalStagePart struct {
	rows, batches, bytes int64
	elapsed              time.Duration
	profile              string
}

// drain reads rdr to its end, counting what it returns; began is when the read was asked for.
func (p *finalStagePart) drain(rdr array.RecordReader, began time.Time) error {
	for rdr.Next() {
		b := rdr.RecordBatch()
		p.rows += b.NumRows()
		p.batches++
		for _, c := range b.Columns() {
			for _, buf := range c.Data().Buffers() {
				if buf != nil {
					p.bytes += int64(buf.Len())
				}
			}
		}
	}
	p.elapsed = time.Since(began)
	return rdr.Err()
}

func (p *finalStagePart) String() string {
	return fmt.Sprintf("rows=%d batches=%d bytes=%d time=%s", p.rows, p.batches, p.bytes, p.elapsed.Round(time.Microsecond))
}

// writeIndented writes text's lines indented by two spaces.
func writeIndented(b *strings.Builder, text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if line != "" {
			b.WriteString("  " + line + "\n")
		}
	}
}

// forwardLogin makes the calls made under ctx present the login of the call ctx serves, so that
// the data nodes run what the head asks for this user as the user (a ticket issued to a user
// is redeemed only under that user's login).
func forwardLogin(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx
	}
	if v := md.Get("authorization"); len(v) > 0 {
		return metadata.AppendToOutgoingContext(ctx, "authorization", v[0])
	}
	return ctx
}

// countOf writes n and noun, with an s unless n is 1.
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
