// Command rawflight is the training benchmark's protocol baseline: a trivial Arrow Flight
// server that holds the record batches of an Arrow IPC file in memory and streams them, as
// they are, over DoGet. No SQL, no planning, no shuffle, no copy: what arrow-go Flight itself
// delivers on this machine.
//
//	rawflight -file data.arrow -streams 2 -batch-rows 8192
//
// It listens on a free loopback port and prints "listening on HOST:PORT". GetFlightInfo, for
// any descriptor, answers with -streams endpoints (no locations: read them from this server);
// endpoint i streams the i-th of -streams contiguous shares of the rows, in batches of
// -batch-rows rows (slices of the file's batches).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func main() {
	file := flag.String("file", "", "Arrow IPC file of the rows to serve")
	streams := flag.Int("streams", 1, "endpoints to divide the rows among")
	batchRows := flag.Int64("batch-rows", 8192, "rows per streamed record batch")
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	if *file == "" || *streams < 1 || *batchRows < 1 {
		log.Fatal("rawflight: need -file, -streams >= 1 and -batch-rows >= 1")
	}
	schema, batches, err := readIPC(*file)
	if err != nil {
		log.Fatalf("rawflight: %v", err)
	}
	srv := &server{schema: schema, shares: divide(batches, *streams, *batchRows)}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("rawflight: %v", err)
	}
	g := grpc.NewServer()
	flight.RegisterFlightServiceServer(g, srv)
	fmt.Printf("listening on %s\n", lis.Addr())
	os.Stdout.Sync()
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		g.Stop()
	}()
	if err := g.Serve(lis); err != nil {
		log.Fatalf("rawflight: %v", err)
	}
}

// readIPC reads every record batch of an Arrow IPC file into memory.
func readIPC(path string) (*arrow.Schema, []arrow.RecordBatch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var batches []arrow.RecordBatch
	for i := 0; i < r.NumRecords(); i++ {
		b, err := r.RecordBatch(i)
		if err != nil {
			return nil, nil, err
		}
		b.Retain() // the reader releases its own reference when it moves on
		batches = append(batches, b)
	}
	return r.Schema(), batches, nil
}

// divide cuts the rows of batches into n contiguous shares of record batches of at most
// batchRows rows each (zero-copy slices).
func divide(batches []arrow.RecordBatch, n int, batchRows int64) [][]arrow.RecordBatch {
	var total int64
	for _, b := range batches {
		total += b.NumRows()
	}
	shares := make([][]arrow.RecordBatch, n)
	var at int64 // row number of the next row to place
	share := 0
	end := func(s int) int64 { return total * int64(s+1) / int64(n) }
	for _, b := range batches {
		for from := int64(0); from < b.NumRows(); {
			for at >= end(share) && share < n-1 {
				share++
			}
			to := min(b.NumRows(), from+batchRows, from+end(share)-at)
			shares[share] = append(shares[share], b.NewSlice(from, to))
			at += to - from
			from = to
		}
	}
	return shares
}

type server struct {
	flight.BaseFlightServer
	schema *arrow.Schema
	shares [][]arrow.RecordBatch
}

func (s *server) GetFlightInfo(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(s.schema, memory.DefaultAllocator),
		FlightDescriptor: desc,
		Ordered:          true,
	}
	for i, share := range s.shares {
		var rows int64
		for _, b := range share {
			rows += b.NumRows()
		}
		info.TotalRecords += rows
		info.Endpoint = append(info.Endpoint, &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: []byte(strconv.Itoa(i))}})
	}
	return info, nil
}

func (s *server) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	i, err := strconv.Atoi(string(t.GetTicket()))
	if err != nil || i < 0 || i >= len(s.shares) {
		return status.Errorf(codes.InvalidArgument, "no stream %q", t.GetTicket())
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(s.schema))
	defer w.Close()
	for _, b := range s.shares[i] {
		if err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
