package flightsql

import (
	"context"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/metrics"
	"github.com/cachedb/cachedb/internal/rpcerr"
)

// Plain Arrow Flight reads of a dataset, by a PATH descriptor instead of a Flight SQL command:
// the protocol of Kubeflow Trainer's data cache, whose PyTorch DataCacheDataset asks the head
// for FlightDescriptor.for_path(str(shard), str(shards)) and reads every endpoint's ticket at
// every location the answer names. A path is one of
//
//	[shard, shards]            shard of shards of Options.PathDataset
//	[dataset, shard, shards]   shard of shards of the named dataset
//	[dataset]                  the whole named dataset
//
// Shard k of n is the k-th of n contiguous stretches of the dataset's own order (unshuffled: a
// training read with rank k, world_size n, shuffle false, shares exact), so the n shards
// together hold every row once and differ by at most one row; a shard may be empty (more
// shards than rows) and is then answered with no endpoints. The answer is a training read's
// (epochInfo): the dataset's schema, total_records the shard's rows, and one endpoint per
// stretch held by one data node, with exactly one location (that node) and a ticket signed
// like every other. Descriptors of type CMD keep their Flight SQL meaning.

// maxPathShards bounds the shard count a path may name.
const maxPathShards = 1 << 20

// pathService answers GetFlightInfo and GetSchema of PATH descriptors; it passes every other
// call, and CMD descriptors, to the Flight SQL service it wraps.
type pathService struct {
	flight.FlightServer
	s *Server
}

func (p *pathService) GetFlightInfo(ctx context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if desc.GetType() != flight.DescriptorPATH {
		return p.FlightServer.GetFlightInfo(ctx, desc)
	}
	info, err := p.s.pathInfo(ctx, desc)
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return info, nil
}

func (p *pathService) GetSchema(ctx context.Context, desc *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	if desc.GetType() != flight.DescriptorPATH {
		return p.FlightServer.GetSchema(ctx, desc)
	}
	info, err := p.s.pathInfo(ctx, desc)
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return &flight.SchemaResult{Schema: info.Schema}, nil
}

// pathRead is what a PATH descriptor asks for.
type pathRead struct {
	dataset       string
	shard, shards int
}

// parsePath reads a PATH descriptor's elements; defaultDataset answers the two-element form.
func parsePath(path []string, defaultDataset string) (pathRead, error) {
	const forms = "[shard, shards], [dataset, shard, shards] or [dataset]"
	r := pathRead{shards: 1}
	var nums []string
	switch len(path) {
	case 1:
		r.dataset = path[0]
	case 2:
		r.dataset, nums = defaultDataset, path
		if r.dataset == "" {
			return r, errs.Invalidf("the PATH descriptor %q names no dataset and this server has no default one (it serves one only in Kubeflow Trainer mode); use %s", path, forms)
		}
	case 3:
		r.dataset, nums = path[0], path[1:]
	default:
		return r, errs.Invalidf("a PATH descriptor has 1 to 3 elements (%s), not %d", forms, len(path))
	}
	if strings.TrimSpace(r.dataset) == "" {
		return r, errs.Invalidf("the PATH descriptor %q names an empty dataset", path)
	}
	if nums != nil {
		var err error
		if r.shard, err = strconv.Atoi(strings.TrimSpace(nums[0])); err != nil {
			return r, errs.Invalidf("the PATH descriptor's shard index %q is not an integer (%s)", nums[0], forms)
		}
		if r.shards, err = strconv.Atoi(strings.TrimSpace(nums[1])); err != nil {
			return r, errs.Invalidf("the PATH descriptor's shard count %q is not an integer (%s)", nums[1], forms)
		}
	}
	switch {
	case r.shards < 1 || r.shards > maxPathShards:
		return r, errs.Invalidf("the PATH descriptor's shard count %d is out of range: want 1 to %d", r.shards, maxPathShards)
	case r.shard < 0 || r.shard >= r.shards:
		return r, errs.Invalidf("the PATH descriptor's shard index %d is out of range: want 0 to %d for %d shards", r.shard, r.shards-1, r.shards)
	}
	return r, nil
}

// pathInfo plans the read a PATH descriptor asks for as a training read (epoch.go).
func (s *Server) pathInfo(ctx context.Context, desc *flight.FlightDescriptor) (_ *flight.FlightInfo, err error) {
	// Counted as a training read when it fails here; each endpoint counts its own at DoGet.
	rec := startStatement(metrics.KindTraining)
	defer func() { rec.endOnError(err) }()
	r, err := parsePath(desc.GetPath(), s.opts.PathDataset)
	if err != nil {
		return nil, err
	}
	release, err := s.slots.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	opts := map[string]string{
		"rank": strconv.Itoa(r.shard), "world_size": strconv.Itoa(r.shards),
		"shuffle": "false", "shares": "exact",
	}
	return s.epochInfo(ctx, desc, "SELECT * FROM "+quoteIdent(r.dataset), opts)
}

// quoteIdent quotes a name as a MySQL identifier.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
