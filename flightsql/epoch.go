package flightsql

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

// Training reads (engine.PlanEpochRead) over Flight SQL. A query is a training read when it
// carries a /*+ TRAINING(...) */ hint or any call header named epochHeaderPrefix + option
// (dashes or underscores alike: cachedb-world-size, cachedb-world_size). Both may be given; an
// option set in both must agree. The answer has one endpoint per segment, located at the data
// node that holds it, in order (FlightInfo.ordered); each ticket carries its segment, signed.

// epochHeaderPrefix starts the names of the call headers that carry training read options.
const epochHeaderPrefix = "cachedb-"

// epochOptions collects a query's training read options from its hint and the call headers;
// ok is false when the query is not a training read.
func epochOptions(ctx context.Context, query string) (opts map[string]string, ok bool, err error) {
	hint, err := engine.TrainingHint(query)
	if err != nil {
		return nil, false, err
	}
	opts = map[string]string{}
	for k, v := range hint {
		opts[k] = v
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for key, values := range md {
		name, found := strings.CutPrefix(strings.ToLower(key), epochHeaderPrefix)
		name = strings.ReplaceAll(name, "-", "_")
		if !found || !slices.Contains(engine.EpochOptionNames, name) || len(values) == 0 {
			continue
		}
		value := values[len(values)-1]
		if prev, dup := opts[name]; dup && prev != value {
			return nil, false, errs.Invalidf("training read option %s is %q in the query's hint and %q in a call header", name, prev, value)
		}
		opts[name] = value
	}
	return opts, hint != nil || len(opts) > 0, nil
}

// epochInfo answers a training read: its schema, and one located endpoint per segment.
func (s *Server) epochInfo(ctx context.Context, desc *flight.FlightDescriptor, query string, opts map[string]string) (*flight.FlightInfo, error) {
	req, err := engine.ParseEpochOptions(opts)
	if err != nil {
		return nil, err
	}
	plan, err := s.eng.PlanEpochRead(ctx, query, req)
	if err != nil {
		return nil, err
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(plan.Schema, s.opts.Alloc),
		FlightDescriptor: desc,
		TotalRecords:     plan.Rows,
		TotalBytes:       -1,
		Ordered:          true,
	}
	expires := s.now().Add(s.opts.TicketTTL)
	for i := range plan.Segments {
		t := statementTicket{kind: ticketEpoch, expires: expires, epoch: &plan.Segments[i]}
		ticket, err := fsql.CreateStatementQueryTicket(s.tickets.encode(t))
		if err != nil {
			return nil, errs.Internalf("encoding ticket: %v", err)
		}
		ep := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: ticket}}
		if loc := plan.Locations[i]; loc != "" {
			ep.Location = []*flight.Location{{Uri: "grpc://" + loc}}
		}
		info.Endpoint = append(info.Endpoint, ep)
	}
	return info, nil
}

// appendEpochSlice encodes a segment for a ticket.
func appendEpochSlice(buf []byte, e *engine.EpochSlice) []byte {
	u := func(v uint64) { buf = binary.AppendUvarint(buf, v) }
	buf = appendString(buf, e.Dataset)
	u(e.Generation)
	u(uint64(len(e.Columns)))
	for i, c := range e.Columns {
		u(uint64(c))
		buf = appendString(buf, e.Names[i])
	}
	u(uint64(len(e.PartRows)))
	for _, n := range e.PartRows {
		u(uint64(n))
	}
	r, rd := e.Request, e.Request.Reader
	shuffle := uint64(0)
	if r.Shuffle {
		shuffle = 1
	}
	for _, v := range []uint64{r.Seed, uint64(r.Epoch), shuffle, uint64(r.ChunkRows), uint64(r.WindowRows),
		uint64(rd.WorldSize), uint64(rd.Rank), uint64(rd.NumWorkers), uint64(rd.Worker), uint64(rd.BatchSize),
		uint64(rd.Offset), uint64(rd.Start), uint64(rd.Shares), uint64(e.From), uint64(e.To)} {
		u(v)
	}
	return buf
}

// readEpochSlice decodes what appendEpochSlice wrote; the caller has verified the ticket's
// signature, but the numbers are still bounded so that no ticket can make the server allocate
// without limit.
func readEpochSlice(rest []byte) (*engine.EpochSlice, []byte, error) {
	truncated := errs.Invalidf("ticket is not valid: truncated")
	bad := false
	u := func() uint64 {
		v, k := binary.Uvarint(rest)
		if k <= 0 {
			bad = true
			return 0
		}
		rest = rest[k:]
		return v
	}
	count := func() int {
		v := u()
		if v > uint64(len(rest)) {
			bad = true
			return 0
		}
		return int(v)
	}
	str := func() string {
		s, r, ok := readString(rest)
		if !ok {
			bad = true
			return ""
		}
		rest = r
		return s
	}
	e := &engine.EpochSlice{Dataset: str(), Generation: u()}
	n := count()
	for range n {
		e.Columns = append(e.Columns, int(min(u(), 1<<30)))
		e.Names = append(e.Names, str())
	}
	n = count()
	for range n {
		e.PartRows = append(e.PartRows, int64(min(u(), 1<<62)))
	}
	var v [15]uint64
	for i := range v {
		v[i] = u()
	}
	if bad {
		return nil, nil, truncated
	}
	small := func(x uint64) int { return int(min(x, 1<<30)) }
	e.Request = engine.EpochRequest{
		Seed: v[0], Epoch: int64(v[1]), Shuffle: v[2] == 1, ChunkRows: small(v[3]), WindowRows: small(v[4]),
		Reader: cluster.EpochReader{
			WorldSize: small(v[5]), Rank: small(v[6]), NumWorkers: small(v[7]), Worker: small(v[8]), BatchSize: small(v[9]),
			Offset: int64(v[10]), Start: int64(v[11]), Shares: cluster.ShareMode(small(v[12])),
		},
	}
	e.From, e.To = int64(v[13]), int64(v[14])
	return e, rest, nil
}
