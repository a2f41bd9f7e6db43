// Package auth is who may call a cachedb server, and what they may do: the users file (names,
// bcrypt password hashes, roles), the bearer tokens a login is exchanged for, and the limit on
// failed logins per client address. The Flight SQL server (flightsql) applies it; nothing here
// knows about gRPC.
//
// A token is a ticket envelope of kind ticket.Token (cluster/ticket) sealed with the cluster
// secret, unpadded base64url: every process of a cluster verifies the tokens any of them issued,
// and rotating the secret rotates the tokens' key with it. It carries the user name and role and
// expires; it is signed, not encrypted (a client can read its own name and role in it).
package auth
