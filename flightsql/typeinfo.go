package flightsql

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/cachedb/cachedb/internal/errs"
)

// xdbcType is one SQL type the engine computes with (see docs/architecture.md), as
// GetXdbcTypeInfo reports it.
type xdbcType struct {
	name         string
	dataType     int32 // XDBC / JDBC type code
	columnSize   *int32
	prefix       string // literal prefix and suffix ("" = none)
	createParams []string
	caseSens     bool
	searchable   int32 // 3 = searchable with any operator, 2 = all except LIKE
	fixedScale   bool
	minScale     *int32
	maxScale     *int32
	radix        *int32
}

func i32(v int32) *int32 { return &v }

// xdbcTypes are sorted by data type, as JDBC's getTypeInfo expects.
var xdbcTypes = []xdbcType{
	{name: "BIGINT", dataType: -5, columnSize: i32(19), searchable: 2, radix: i32(10)},
	{name: "DECIMAL", dataType: 3, columnSize: i32(38), createParams: []string{"precision", "scale"}, searchable: 2, fixedScale: true, minScale: i32(0), maxScale: i32(38), radix: i32(10)},
	{name: "DOUBLE", dataType: 8, columnSize: i32(15), searchable: 2, radix: i32(2)},
	{name: "VARCHAR", dataType: 12, columnSize: i32(65535), prefix: "'", createParams: []string{"length"}, caseSens: true, searchable: 3},
	{name: "DATE", dataType: 91, columnSize: i32(10), prefix: "'", searchable: 2},
	{name: "TIMESTAMP", dataType: 93, columnSize: i32(26), prefix: "'", searchable: 2, minScale: i32(6), maxScale: i32(6)},
}

// GetFlightInfoXdbcTypeInfo implements fsql.Server.
func (s *Server) GetFlightInfoXdbcTypeInfo(_ context.Context, _ fsql.GetXdbcTypeInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.commandInfo(desc, schema_ref.XdbcTypeInfo), nil
}

// DoGetXdbcTypeInfo lists the engine's SQL types, or only the one asked for.
func (s *Server) DoGetXdbcTypeInfo(_ context.Context, cmd fsql.GetXdbcTypeInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.opts.Alloc, schema_ref.XdbcTypeInfo)
	defer b.Release()
	for _, t := range xdbcTypes {
		if want := cmd.GetDataType(); want != nil && *want != t.dataType {
			continue
		}
		if err := appendXdbcType(b, t); err != nil {
			return nil, nil, err
		}
	}
	return s.oneBatch(b)
}

// appendXdbcType adds one row in schema_ref.XdbcTypeInfo's column order.
func appendXdbcType(b *array.RecordBuilder, t xdbcType) error {
	str := func(i int, v string) {
		if v == "" {
			b.Field(i).AppendNull()
			return
		}
		b.Field(i).(*array.StringBuilder).Append(v)
	}
	opt := func(i int, v *int32) {
		if v == nil {
			b.Field(i).AppendNull()
			return
		}
		b.Field(i).(*array.Int32Builder).Append(*v)
	}
	if b.Schema().NumFields() != 19 {
		return errs.Internalf("XDBC type info schema has %d fields, expected 19", b.Schema().NumFields())
	}
	b.Field(0).(*array.StringBuilder).Append(t.name)
	b.Field(1).(*array.Int32Builder).Append(t.dataType)
	opt(2, t.columnSize)
	str(3, t.prefix)
	str(4, t.prefix)
	params := b.Field(5).(*array.ListBuilder)
	if len(t.createParams) == 0 {
		params.AppendNull()
	} else {
		params.Append(true)
		for _, p := range t.createParams {
			params.ValueBuilder().(*array.StringBuilder).Append(p)
		}
	}
	b.Field(6).(*array.Int32Builder).Append(1) // nullable
	b.Field(7).(*array.BooleanBuilder).Append(t.caseSens)
	b.Field(8).(*array.Int32Builder).Append(t.searchable)
	b.Field(9).(*array.BooleanBuilder).Append(false) // unsigned
	b.Field(10).(*array.BooleanBuilder).Append(t.fixedScale)
	b.Field(11).(*array.BooleanBuilder).Append(false) // auto increment
	str(12, strings.ToLower(t.name))
	opt(13, t.minScale)
	opt(14, t.maxScale)
	b.Field(15).(*array.Int32Builder).Append(t.dataType)
	b.Field(16).AppendNull() // datetime subcode
	opt(17, t.radix)
	b.Field(18).AppendNull() // interval precision
	return nil
}
