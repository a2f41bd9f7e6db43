package flightwire

import (
	"context"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkDoGet streams 64 MiB of record batches of 2 MiB (an int64 and 16 float32 columns)
// over loopback gRPC, sent by Writer or by arrow-go's flight.Writer, and received as raw
// FlightData messages (not decoded): the difference between the two is the sender's.
func BenchmarkDoGet(b *testing.B) {
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	for range 16 {
		fields = append(fields, arrow.Field{Name: "f", Type: arrow.PrimitiveTypes.Float32})
	}
	schema := arrow.NewSchema(fields, nil)
	const rows = 2 << 20 / 72
	bld := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	for i := range rows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		for f := 1; f <= 16; f++ {
			bld.Field(f).(*array.Float32Builder).Append(float32(i * f))
		}
	}
	batch := bld.NewRecordBatch()
	bld.Release()
	defer batch.Release()
	const batches = 32
	for _, sender := range []string{"flightwire", "arrow-go"} {
		b.Run(sender, func(b *testing.B) {
			svc := &benchService{schema: schema, batch: batch, batches: batches, arrowGo: sender == "arrow-go"}
			client := flight.NewFlightServiceClient(serve(b, svc))
			b.SetBytes(batches * 2 << 20)
			for b.Loop() {
				stream, err := client.DoGet(context.Background(), &flight.Ticket{})
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := stream.Recv(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

type benchService struct {
	flight.BaseFlightServer
	schema  *arrow.Schema
	batch   arrow.RecordBatch
	batches int
	arrowGo bool
}

func (s *benchService) DoGet(_ *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	if s.arrowGo {
		w := flight.NewRecordWriter(stream, ipc.WithSchema(s.schema))
		defer w.Close()
		for range s.batches {
			if err := w.Write(s.batch); err != nil {
				return err
			}
		}
		return nil
	}
	w := NewWriter(stream, s.schema)
	defer w.Close()
	for range s.batches {
		if err := w.Write(s.batch, nil); err != nil {
			return err
		}
	}
	return nil
}
