package exec

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// HEX(x): for a number, the hexadecimal digits of its (rounded) value as an unsigned 64-bit
// integer; for text, two upper-case hexadecimal digits per byte.

func init() {
	RegisterScalar("hex", resolveHex)
}

func resolveHex(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	sig := stringSig{name: "hex", kinds: "s"}
	if err := sig.check(types); err != nil {
		return nil, nil, err
	}
	numeric := isNumericType(types[0])
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		if numeric {
			c, err := CastArray(ctx, tc, args[0], arrow.PrimitiveTypes.Int64)
			if err != nil {
				return nil, err
			}
			defer c.Release()
			v := int64Values(c)
			return mapValid(newStringBuilder(tc.Alloc), c, func(i int) string {
				return strings.ToUpper(strconv.FormatUint(uint64(v[i]), 16))
			}), nil
		}
		c, err := CastArray(ctx, tc, args[0], arrow.BinaryTypes.String)
		if err != nil {
			return nil, err
		}
		defer c.Release()
		s := c.(*array.String)
		return mapValid(newStringBuilder(tc.Alloc), c, func(i int) string {
			return strings.ToUpper(hex.EncodeToString([]byte(s.Value(i))))
		}), nil
	}
	return k, arrow.BinaryTypes.String, nil
}
