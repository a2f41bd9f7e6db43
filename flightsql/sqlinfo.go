package flightsql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
)

// ServerName is the name GetSqlInfo reports.
const ServerName = "cachedb"

// arrowVersion is the Arrow library the server is built with.
const arrowVersion = "18.8.0"

// registerSQLInfo records the answers to GetSqlInfo: who the server is and the MySQL dialect
// facts clients (ADBC, JDBC) ask about. BaseServer serves them.
func (s *Server) registerSQLInfo() {
	info := map[fsql.SqlInfo]any{
		fsql.SqlInfoFlightSqlServerName:                        ServerName,
		fsql.SqlInfoFlightSqlServerVersion:                     s.opts.Version,
		fsql.SqlInfoFlightSqlServerArrowVersion:                arrowVersion,
		fsql.SqlInfoFlightSqlServerReadOnly:                    false,
		fsql.SqlInfoFlightSqlServerSql:                         true,
		fsql.SqlInfoFlightSqlServerSubstrait:                   false,
		fsql.SqlInfoFlightSqlServerTransaction:                 int32(fsql.SqlTransactionNone),
		fsql.SqlInfoFlightSqlServerCancel:                      false,
		fsql.SqlInfoFlightSqlServerBulkIngestion:               true,
		fsql.SqlInfoFlightSqlServerStatementTimeout:            int32(0),
		fsql.SqlInfoFlightSqlServerTransactionTimeout:          int32(0),
		fsql.SqlInfoFlightSqlServerIngestTransactionsSupported: false,
		fsql.SqlInfoDDLCatalog:                                 false,
		fsql.SqlInfoDDLSchema:                                  false,
		fsql.SqlInfoDDLTable:                                   true,
		fsql.SqlInfoIdentifierCase:                             int64(fsql.SqlCaseSensitivityCaseInsensitive),
		fsql.SqlInfoIdentifierQuoteChar:                        "`",
		fsql.SqlInfoQuotedIdentifierCase:                       int64(fsql.SqlCaseSensitivityCaseInsensitive),
		fsql.SqlInfoNullOrdering:                               int64(fsql.SqlNullOrderingSortLow),
		fsql.SqlInfoSearchStringEscape:                         `\`,
		fsql.SqlInfoSupportsColumnAliasing:                     true,
		fsql.SqlInfoTransactionsSupported:                      false,
		fsql.SqlInfoKeywords: []string{
			"CASE", "CAST", "CREATE", "DISTINCT", "DIV", "DROP", "EXISTS", "EXPLAIN",
			"GROUP", "HAVING", "INSERT", "JOIN", "LIMIT", "OFFSET", "ORDER", "SELECT",
			"TABLE", "UNION", "VALUES", "WHERE",
		},
	}
	s.sqlInfoIDs = make(map[uint32]bool, len(info))
	for id, v := range info {
		s.sqlInfoIDs[uint32(id)] = true
		// Every value above has a type RegisterSqlInfo accepts; a failure is a bug here.
		if err := s.RegisterSqlInfo(id, v); err != nil {
			panic(err)
		}
	}
}

// DoGetSqlInfo answers the requested ids that the server knows and leaves out the others (the
// Flight SQL spec lets a server omit ids; failing the whole request would break clients that
// ask for everything they know about).
func (s *Server) DoGetSqlInfo(ctx context.Context, cmd fsql.GetSqlInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	asked := cmd.GetInfo()
	if len(asked) == 0 {
		return s.BaseServer.DoGetSqlInfo(ctx, cmd)
	}
	known := make([]uint32, 0, len(asked))
	for _, id := range asked {
		if s.sqlInfoIDs[id] {
			known = append(known, id)
		}
	}
	if len(known) == 0 {
		b := array.NewRecordBuilder(s.opts.Alloc, schema_ref.SqlInfo)
		defer b.Release()
		return s.oneBatch(b)
	}
	return s.BaseServer.DoGetSqlInfo(ctx, knownSQLInfo(known))
}

// knownSQLInfo is a GetSqlInfo request for a fixed list of ids.
type knownSQLInfo []uint32

func (k knownSQLInfo) GetInfo() []uint32 { return k }
