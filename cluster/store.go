package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/util"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/rpcerr"
)

// ActionStorePartition names the internal call by which the head hands a data node the rows of
// one partition of an ingested dataset (rows a client sent, with no source to make them from):
// a Flight DoPut whose batches are the partition's rows, in the order the node must hold them.
// The call carries its StoreRequest as JSON in the gRPC header storeRequestHeader (unpadded
// base64url), signed with the cluster secret as actions are (the type and that body), so that
// the request is checked before any batch is read. The node answers with one PutResult whose
// app metadata is the PartitionStats of what it holds (JSON).
const ActionStorePartition = "cachedb.store-partition"

// storeRequestHeader carries a store call's StoreRequest.
const storeRequestHeader = "cachedb-store-request"

// maxStoreBatchBytes bounds one batch the head sends in a store call, well under the smallest
// message size a data node takes (flightsql's default is 64 MiB).
const maxStoreBatchBytes = 8 << 20

// StoreRequest asks a data node to hold the batches of a store call as partition Partition (of
// Partitions) of generation Generation of the dataset. The node holds them as they come: it
// cannot make them again, so it never evicts them (they may move to its disk tier unless Pin
// is PinMemory).
type StoreRequest struct {
	Dataset    string `json:"dataset"`
	Generation uint64 `json:"generation"`
	Partitions int    `json:"partitions"`
	Partition  int    `json:"partition"`
	// Pin is DatasetJob.Pin.
	Pin string `json:"pin,omitempty"`
}

// RowStore is what a data node does with the rows of ingested datasets; a NodeConfig.Store that
// implements it takes store calls.
type RowStore interface {
	// StorePartition holds the batches of rdr (read to its end) as one partition of req's
	// dataset generation, replacing anything held for an older generation of the same dataset,
	// and reports what it holds. rdr's schema is the dataset's.
	StorePartition(ctx context.Context, req StoreRequest, rdr array.RecordReader) (PartitionStats, error)
}

// storeCall returns the request and the signature check of a store call in ctx's incoming
// metadata; ok is false when ctx is no store call (it carries no request header).
func storeCall(ctx context.Context) (req StoreRequest, action *flight.Action, ok bool, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get(storeRequestHeader)
	if len(values) == 0 {
		return StoreRequest{}, nil, false, nil
	}
	if len(values) > 1 {
		return StoreRequest{}, nil, true, errs.Invalidf("%s: the call carries %d requests", ActionStorePartition, len(values))
	}
	body, err := base64.RawURLEncoding.DecodeString(values[0])
	if err != nil {
		return StoreRequest{}, nil, true, errs.Invalidf("%s: the request header is not base64url", ActionStorePartition)
	}
	action = &flight.Action{Type: ActionStorePartition, Body: body}
	if err := decodeBody(action, &req, maxBody); err != nil {
		return StoreRequest{}, nil, true, err
	}
	return req, action, true, nil
}

// VerifyStoreCall checks, without recording its nonce, that ctx's call is a store call signed
// with the cluster secret: what a server that requires logins lets through without one (the
// node's handler verifies it again, and records the nonce). ok is false when ctx carries no
// store request at all.
func VerifyStoreCall(ctx context.Context, key *ticket.Keyring) (ok bool, err error) {
	_, action, ok, err := storeCall(ctx)
	if !ok || err != nil {
		return ok, err
	}
	return true, VerifyAction(ctx, key, action)
}

// DoPut serves store calls (ActionStorePartition) when the node's store takes them, and passes
// every other DoPut on (the Flight SQL server's bulk ingest and updates).
func (n *nodeService) DoPut(stream flight.FlightService_DoPutServer) error {
	rs, takes := n.cfg.Store.(RowStore)
	ctx := stream.Context()
	req, action, isStore, err := storeCall(ctx)
	if !isStore {
		return n.FlightServer.DoPut(stream)
	}
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	if !takes {
		return rpcerr.ToStatus(errs.Unsupportedf("%s: this process holds no dataset partitions", ActionStorePartition))
	}
	if err := verifyAction(ctx, n.cfg.Key, action, time.Now()); err != nil {
		return rpcerr.ToStatus(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return rpcerr.ToStatus(errs.Invalidf("%s: the partition's stream: %v", ActionStorePartition, err))
	}
	defer rdr.Release()
	stats, err := rs.StorePartition(ctx, req, rdr)
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	body, err := json.Marshal(stats)
	if err != nil {
		return rpcerr.ToStatus(errs.Internalf("%s result: %v", ActionStorePartition, err))
	}
	return stream.Send(&flight.PutResult{AppMetadata: body})
}

// store hands the node at addr one partition of an ingested dataset (a store call) and returns
// what the node holds. The batches (of schema, the dataset's) are sent as they are, cut into
// slices of at most maxStoreBatchBytes; the caller keeps them.
func (c *nodeClients) store(ctx context.Context, addr string, req StoreRequest, schema *arrow.Schema, batches []arrow.RecordBatch) (PartitionStats, error) {
	var stats PartitionStats
	cl, err := c.client(addr)
	if err != nil {
		return stats, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return stats, errs.Internalf("store request: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the call, and its stream, on every early return
	ctx = signAction(ctx, c.key, &flight.Action{Type: ActionStorePartition, Body: body})
	ctx = metadata.AppendToOutgoingContext(ctx, storeRequestHeader, base64.RawURLEncoding.EncodeToString(body))
	stream, err := cl.DoPut(ctx)
	if err != nil {
		return stats, rpcerr.FromStatus(err)
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(ActionStorePartition)})
	var sendErr error
	for _, b := range batches {
		if sendErr != nil {
			break
		}
		for _, piece := range byteSlices(b, maxStoreBatchBytes) {
			if sendErr == nil {
				sendErr = w.Write(piece)
			}
			piece.Release()
		}
	}
	// Close sends the schema when no batch did (an empty partition).
	if closeErr := w.Close(); sendErr == nil {
		sendErr = closeErr
	}
	if err := stream.CloseSend(); sendErr == nil {
		sendErr = err
	}
	// The node's answer says why it stopped reading, which a failed send does not.
	var last []byte
	for {
		res, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return stats, rpcerr.FromStatus(err)
		}
		last = res.GetAppMetadata()
	}
	if sendErr != nil && !errors.Is(sendErr, io.EOF) {
		return stats, rpcerr.FromStatus(sendErr)
	}
	if err := json.Unmarshal(last, &stats); err != nil {
		return stats, errs.Internalf("%s result from %s: %v", ActionStorePartition, addr, err)
	}
	return stats, nil
}

// byteSlices cuts b into zero-copy slices of about at most limit bytes each (at least one row);
// the caller releases them.
func byteSlices(b arrow.RecordBatch, limit int64) []arrow.RecordBatch {
	rows := b.NumRows()
	size := util.TotalRecordSize(b)
	if rows <= 1 || size <= limit {
		b.Retain()
		return []arrow.RecordBatch{b}
	}
	per := max(rows*limit/size, 1)
	out := make([]arrow.RecordBatch, 0, (rows+per-1)/per)
	for off := int64(0); off < rows; off += per {
		out = append(out, b.NewSlice(off, min(off+per, rows)))
	}
	return out
}
