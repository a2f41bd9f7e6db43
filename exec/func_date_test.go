package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// Date functions over the column types Iceberg tables bring (date32, timestamp[us] with and
// without a zone, timestamp[ns], time64[us]) and over text, with their MySQL result types.
func TestDateFunctionsOverColumnTypes(t *testing.T) {
	date := arrow.FixedWidthTypes.Date32
	tsUTC := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tsNs := &arrow.TimestampType{Unit: arrow.Nanosecond}
	// 2024-02-29 = day 19782; 2024-02-29 13:05:09.5 UTC in microseconds and nanoseconds.
	const us = "1709211909500000"
	const ns = "1709211909500000000"
	runFuncCases(t, []funcCase{
		{name: "year", args: []arg{{date, "[19782, null]"}}, want: "2024,NULL", wantT: i64},
		{name: "month", args: []arg{{tsUTC, "[" + us + "]"}}, want: "2", wantT: i64},
		{name: "hour", args: []arg{{tsNs, "[" + ns + "]"}}, want: "13", wantT: i64},
		{name: "microsecond", args: []arg{{tsUTC, "[" + us + "]"}}, want: "500000", wantT: i64},
		{name: "dayofweek", args: []arg{{date, "[19782]"}}, want: "5", wantT: i64}, // a Thursday
		{name: "date_add_month", args: []arg{{date, "[19782]"}, {i64, "[12]"}}, want: "2025-02-28", wantT: dateType},
		{name: "date_add_day", args: []arg{{tsUTC, "[" + us + "]"}, {i64, "[1]"}}, want: "2024-03-01 13:05:09.500000", wantT: dateTimeType},
		{name: "date_sub_hour", args: []arg{{date, "[19782]"}, {i64, "[1]"}}, want: "2024-02-28 23:00:00", wantT: dateTimeType},
		{name: "date_add_hour_minute", args: []arg{{str, `["2024-02-29", "bad", null]`}, {str, `["-1:30", "1:00", "1:00"]`}}, want: "2024-02-28 22:30:00,NULL,NULL", wantT: str},
		{name: "date_add_day", args: []arg{{str, `["2024-02-29"]`}, {null, "[null]"}}, want: "NULL", wantT: str},
		{name: "date_add_second", args: []arg{{timeType, "[36000000000]"}, {f64, "[1.25]"}}, want: "10:00:01.250000", wantT: timeType},
		{name: "date_add_day", args: []arg{{date, "[19782]"}, {f64, "[1.5]"}}, want: "2024-03-02", wantT: dateType},
		{name: "date_add_day", args: []arg{{date, "[19782]"}, {date, "[1]"}}, errCat: invalid()},
		{name: "extract_year_month", args: []arg{{tsNs, "[" + ns + "]"}}, want: "202402", wantT: i64},
		{name: "timestampdiff_month", args: []arg{{date, "[19753]"}, {date, "[19782]"}}, want: "0", wantT: i64}, // Jan 31 → Feb 29
		{name: "timestampdiff_second", args: []arg{{tsUTC, "[" + us + "]"}, {date, "[19783]"}}, want: "39290", wantT: i64},
		{name: "datediff", args: []arg{{tsUTC, "[" + us + "]"}, {str, `["2024-1-1"]`}}, want: "59", wantT: i64},
		{name: "last_day", args: []arg{{str, `["2023-02-10", "2024-02-10"]`}}, want: "2023-02-28,2024-02-29", wantT: dateType},
		{name: "week", args: []arg{{date, "[19782, 19782]"}, {i64, "[0, 3]"}}, want: "8,9", wantT: i64},
		{name: "date_format", args: []arg{{tsUTC, "[" + us + "]"}, {str, `["%Y%m%d %T.%f"]`}}, want: "20240229 13:05:09.500000", wantT: str},
		{name: "unix_timestamp", args: []arg{{tsNs, "[" + ns + "]"}}, want: "1709211909", wantT: i64},
		{name: "=", args: []arg{{tsUTC, "[" + us + "]"}, {str, `["2024-2-29 13:05:09.5"]`}}, want: "1"},
		{name: "<", args: []arg{{date, "[19782]"}, {tsNs, "[" + ns + "]"}}, want: "1"},
		{name: "-", args: []arg{{date, "[19782]"}, {date, "[19781]"}}, want: "1", wantT: i64}, // 20240229 - 20240228
	})
}
