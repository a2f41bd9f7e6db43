package flightsql

import (
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
)

// FuzzIngest sends bulk ingests of batches built from arbitrary bytes (columns of the types
// parameterMessages makes, some refused, some converted), with headers or bodies replaced by raw
// bytes, into arbitrary table names in each mode; whatever it stores must then read back.
// Errors are fine; panics and hangs are not.
func FuzzIngest(f *testing.F) {
	s := newFuzzServer(f)
	f.Add("ing", []byte{0, 1, 2, 3, 6, 9}, []byte("\x01\x00\x00\x00\x00\x00\x00\x00\x05hello\x01"), uint8(0), []byte{})
	f.Add("r", []byte{0, 2}, []byte("\x07\x00\x00\x00\x00\x00\x00\x00\x03abc"), uint8(1<<4), []byte{}) // append to r
	f.Add("ing", []byte{8}, []byte("\xff\xff\xff\xff\xff\xff\xff\xff"), uint8(0), []byte{})            // a uint64 beyond BIGINT
	f.Add("ing", []byte{7, 4}, []byte("\x02\xff\xfe"), uint8(0), []byte{})                             // binary: refused
	f.Add("ing", []byte{2}, []byte("\x02\xff\xfe"), uint8(2<<4), []byte{})                             // not UTF-8
	f.Add("ing", []byte{0, 2}, []byte{}, uint8(3), []byte{0x10, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add("a.b", []byte{0}, []byte{}, uint8(0), []byte{})

	f.Fuzz(func(t *testing.T, table string, kinds, values []byte, mode uint8, raw []byte) {
		ctx, cancel := fuzzContext()
		defer cancel()
		if !utf8.ValidString(table) {
			return // protobuf strings are UTF-8: no client can send such a name
		}
		if len(kinds) == 0 {
			kinds = []byte{0}
		}
		msgs := parameterMessages(t, kinds, values, int(mode>>6)%3+1)
		if len(msgs) > 1 && mode&1 != 0 {
			msgs[1].DataHeader = raw
		}
		if len(msgs) > 1 && mode&2 != 0 {
			msgs[1].DataBody = raw
		}
		opts := ingestOpts(table, []string{"create", "append", "replace", "create_append"}[mode>>4%4])
		msgs[0].FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: anyCmd((*pb.CommandStatementIngest)(opts))}
		in := make([]*flight.FlightData, len(msgs))
		for i, m := range msgs {
			in[i] = proto.Clone(m).(*flight.FlightData)
		}
		err := s.service.DoPut(fakeDoPut{&fakeStream{ctx: ctx, limit: 64, in: in}})
		if noPanic(t, "DoPut ingest", err); err != nil {
			return
		}
		res, err := s.eng.Execute(ctx, "SELECT * FROM `"+table+"`", nil)
		if noPanic(t, "reading the ingested table", err); err != nil {
			return
		}
		defer res.Reader.Release()
		for res.Reader.Next() {
		}
		noPanic(t, "reading the ingested table", res.Reader.Err())
	})
}
