// Package cluster holds what the head and the data nodes share about each other: membership,
// the dataset registry and its node actions, partition and shuffle tickets, and the
// authentication of every internal call with the cluster secret (action_auth.go).
//
// # Membership protocol
//
// Every message travels as an Arrow Flight DoAction on the existing Flight ports; there is no
// other RPC. Bodies and results are JSON objects; unknown fields are rejected. Register and
// heartbeat are signed with the cluster secret (see action_auth.go) and refused with
// Unauthenticated otherwise.
//
//   - cachedb.register (served by the head, on its Flight SQL port): body {"id", "addr",
//     "boot_id"}, where addr is the HOST:PORT of the node's own Flight server and boot_id names
//     the node's process (random at each start). The node becomes alive; a new boot ID or
//     address under a known ID is a restart (the old process is lost). Result
//     {"heartbeat_interval_ms", "suspect_after_ms", "lost_after_ms"}. A malformed body is
//     InvalidArgument.
//   - cachedb.heartbeat (head): body {"id"}. Result {}. NotFound when the head does not know the
//     node (it restarted) or has marked it lost: the node must register again.
//   - cachedb.node-info (served by each data node): empty body. Result {"id", "boot_id",
//     "started_at", "version"}.
//
// Nodes heartbeat every HeartbeatInterval (default 1 s). A node not heard from for SuspectAfter
// (default 5 s) is suspect: no new work goes to it, nothing it holds moves. It is lost (its
// partitions are rebuilt) after LostAfter (default 60 s), or at once when it registers as a
// new process or refuses connections while suspect. Membership reports the changes to its
// OnChange callback in order. The head mounts Actions on its Flight SQL server (flightsql.Options.Extend with
// Actions.Wrap); an Agent on each data node registers, heartbeats and re-registers. The
// SystemCatalog shows the membership to SQL as system.nodes.
package cluster
