// Package flightsql serves the engine over Arrow Flight SQL.
//
// Server embeds arrow-go's flightsql.BaseServer and implements the commands a SQL client needs:
// statement queries and updates, prepared statements with bound parameters, and the metadata
// commands (GetSqlInfo, GetCatalogs, GetDbSchemas, GetTables, GetTableTypes, GetXdbcTypeInfo,
// GetPrimaryKeys).
//
// Decisions a client can observe:
//
//   - Namespace: the engine's one catalog (its name comes from engine.Config.CatalogName,
//     "cachedb" by default) holds one db schema, "public" (PublicSchema). Every table lives in
//     cachedb.public. Metadata filters on another catalog or schema match nothing.
//   - Statement queries are planned (not run) by GetFlightInfo to report their schema; they run
//     when the client calls DoGet on the returned ticket. A statement that returns no rows
//     (CREATE TABLE, INSERT, ...) sent as a query runs during GetFlightInfo and its ticket
//     yields an empty result with an empty schema.
//   - Tickets are opaque, signed by the server (HMAC-SHA256 with a key drawn at start-up) and
//     expire (Options.TicketTTL). A ticket the server did not issue, or one past its expiry, is
//     refused with InvalidArgument.
//   - Prepared statement handles are random, bounded in number per client connection
//     (Options.MaxPreparedPerClient) and in all (Options.MaxPreparedStatements, evicting from
//     the client holding the most), closed when their connection ends, and expire after
//     Options.PreparedStatementIdle without use. A connection executes at most
//     Options.MaxConcurrentPerClient statements at once; one more is ResourceExhausted. Parameters are reported as
//     null-typed fields ("parameter_1", ...): any Arrow type may be bound. A parameter batch with
//     several rows runs the statement once per row; query results are concatenated.
//   - Every batch sent to a client is at most Options.MaxBatchBytes (4 MiB by default, gRPC's
//     default receive limit) unless a single row is larger; larger batches are split by rows.
//   - Errors carry the gRPC code of their errs category (internal/rpcerr.ToStatus) and the engine's message.
//     A panic in a handler becomes an Internal error; the server keeps serving.
package flightsql
