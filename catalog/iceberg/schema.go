package iceberg

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/internal/errs"
)

// arrowSchema converts an Iceberg schema with iceberg-go's own conversion (the one its reader
// produces batches in), without field-id metadata, nullability from `required`. Iceberg uuid
// columns become fixed_size_binary(16) rather than arrow-go's uuid extension type: the engine's
// operators, casts and Flight SQL clients handle plain Arrow types, and the 16 bytes are the
// same. Types cachedb cannot serve (variant, geometry, geography, unknown) are errs.Unsupported,
// naming the column.
func arrowSchema(s *iceberg.Schema) (*arrow.Schema, error) {
	fields := s.Fields()
	out := make([]arrow.Field, len(fields))
	for i, f := range fields {
		if err := checkSupported(f.Name, f.Type); err != nil {
			return nil, err
		}
		dt, err := table.TypeToArrowType(f.Type, false, false)
		if err != nil {
			return nil, errs.Unsupportedf("column %s of Iceberg type %s: %v", f.Name, f.Type, err)
		}
		out[i] = arrow.Field{Name: f.Name, Type: plainType(dt), Nullable: !f.Required}
	}
	return arrow.NewSchema(out, nil), nil
}

// checkSupported rejects the Iceberg types cachedb does not serve; path names the column.
func checkSupported(path string, t iceberg.Type) error {
	switch t := t.(type) {
	case iceberg.VariantType, *iceberg.VariantType,
		iceberg.GeometryType, *iceberg.GeometryType,
		iceberg.GeographyType, *iceberg.GeographyType,
		iceberg.UnknownType, *iceberg.UnknownType:
		return errs.Unsupportedf("column %s has Iceberg type %s, which cachedb cannot read", path, t)
	case *iceberg.StructType:
		for _, f := range t.FieldList {
			if err := checkSupported(path+"."+f.Name, f.Type); err != nil {
				return err
			}
		}
	case *iceberg.ListType:
		return checkSupported(path+".element", t.Element)
	case *iceberg.MapType:
		if err := checkSupported(path+".key", t.KeyType); err != nil {
			return err
		}
		return checkSupported(path+".value", t.ValueType)
	}
	return nil
}

// plainType replaces extension types (uuid) by their storage type, at any depth, and drops
// field metadata from nested fields.
func plainType(dt arrow.DataType) arrow.DataType {
	switch t := dt.(type) {
	case arrow.ExtensionType:
		return plainType(t.StorageType())
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			fs[i] = arrow.Field{Name: f.Name, Type: plainType(f.Type), Nullable: f.Nullable}
		}
		return arrow.StructOf(fs...)
	case *arrow.MapType:
		kf, vf := t.KeyField(), t.ItemField()
		m := arrow.MapOfFields(arrow.Field{Name: kf.Name, Type: plainType(kf.Type), Nullable: kf.Nullable},
			arrow.Field{Name: vf.Name, Type: plainType(vf.Type), Nullable: vf.Nullable})
		m.KeysSorted = t.KeysSorted
		return m
	case *arrow.ListType:
		ef := t.ElemField()
		return arrow.ListOfField(arrow.Field{Name: ef.Name, Type: plainType(ef.Type), Nullable: ef.Nullable})
	case *arrow.LargeListType:
		ef := t.ElemField()
		return arrow.LargeListOfField(arrow.Field{Name: ef.Name, Type: plainType(ef.Type), Nullable: ef.Nullable})
	case *arrow.FixedSizeListType:
		ef := t.ElemField()
		return arrow.FixedSizeListOfField(t.Len(), arrow.Field{Name: ef.Name, Type: plainType(ef.Type), Nullable: ef.Nullable})
	}
	return dt
}

// conform returns arr with type want, sharing arr's buffers. arr must have the same physical
// layout as want (it differs only by extension types, field names or metadata).
func conform(arr arrow.Array, want arrow.DataType) (arrow.Array, error) {
	if arrow.TypeEqual(arr.DataType(), want) {
		arr.Retain()
		return arr, nil
	}
	data, err := conformData(arr.Data(), want)
	if err != nil {
		return nil, err
	}
	defer data.Release()
	return array.MakeFromData(data), nil
}

// conformData rebuilds d's type tree as want. The result holds its own references.
func conformData(d arrow.ArrayData, want arrow.DataType) (arrow.ArrayData, error) {
	got := d.DataType()
	if ext, ok := got.(arrow.ExtensionType); ok {
		got = ext.StorageType()
	}
	if got.ID() != want.ID() || !sameLayoutParams(got, want) {
		return nil, fmt.Errorf("read type %s, want %s", d.DataType(), want)
	}
	children := d.Children()
	wantChildren := childTypes(want)
	if len(children) != len(wantChildren) {
		return nil, fmt.Errorf("read type %s, want %s", d.DataType(), want)
	}
	newChildren := make([]arrow.ArrayData, len(children))
	for i, ch := range children {
		c, err := conformData(ch, wantChildren[i])
		if err != nil {
			for _, done := range newChildren[:i] {
				done.Release()
			}
			return nil, err
		}
		newChildren[i] = c
	}
	out := array.NewData(want, d.Len(), d.Buffers(), newChildren, d.NullN(), d.Offset())
	for _, c := range newChildren {
		c.Release()
	}
	return out, nil
}

func sameLayoutParams(got, want arrow.DataType) bool {
	switch w := want.(type) {
	case *arrow.FixedSizeBinaryType:
		return got.(*arrow.FixedSizeBinaryType).ByteWidth == w.ByteWidth
	case *arrow.Decimal128Type:
		g := got.(*arrow.Decimal128Type)
		return g.Precision == w.Precision && g.Scale == w.Scale
	case *arrow.TimestampType:
		return got.(*arrow.TimestampType).Unit == w.Unit
	case *arrow.Time64Type:
		return got.(*arrow.Time64Type).Unit == w.Unit
	case *arrow.FixedSizeListType:
		return got.(*arrow.FixedSizeListType).Len() == w.Len()
	}
	return true
}

// childTypes lists the types of a nested type's child arrays, in ArrayData order.
func childTypes(dt arrow.DataType) []arrow.DataType {
	switch t := dt.(type) {
	case *arrow.StructType:
		out := make([]arrow.DataType, t.NumFields())
		for i, f := range t.Fields() {
			out[i] = f.Type
		}
		return out
	case *arrow.MapType:
		return []arrow.DataType{t.Elem()}
	case arrow.ListLikeType:
		return []arrow.DataType{t.Elem()}
	}
	return nil
}

// fieldPaths names a schema's columns for messages.
func fieldPaths(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
