package auth

import (
	"fmt"
	"strings"
	"time"
)

// Role is what a user may do. Roles are ordered: each includes what the ones below it allow.
// The zero Role is no role at all (invalid in a users file, a token or a grant).
type Role uint8

const (
	// None may do nothing by itself: a user whose role everywhere is none does only what
	// grants (Grants) allow on particular catalogs and datasets.
	None Role = iota + 1
	// Reader runs queries (SELECT, EXPLAIN, SHOW, training reads) and reads metadata.
	Reader
	// Writer also changes memory tables: CREATE / INSERT / UPDATE / DELETE / DROP of tables,
	// views, indexes and triggers, and bulk ingest.
	Writer
	// Admin also makes and frees datasets on the data nodes: load, CREATE TABLE … AS SELECT over
	// Iceberg tables, DROP TABLE of a dataset, replace.
	Admin
)

var roleNames = map[Role]string{None: "none", Reader: "reader", Writer: "writer", Admin: "admin"}

func (r Role) String() string {
	if name, ok := roleNames[r]; ok {
		return name
	}
	return fmt.Sprintf("role %d", uint8(r))
}

// ParseRole reads a role by name (case-insensitive).
func ParseRole(s string) (Role, error) {
	for r, name := range roleNames {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return r, nil
		}
	}
	return 0, fmt.Errorf("unknown role %q: want none, reader, writer or admin", s)
}

// Principal is the authenticated caller of a request.
type Principal struct {
	User string
	// Role is the user's role everywhere; grants may raise it on particular objects.
	Role Role
	// Groups are the groups the user belongs to (the users file's groups, a JWT's groups
	// claim), which grants may name.
	Groups []string
	// Issued is when the token the call carries was issued (zero when unknown: a service
	// token, a JWT without iat), which revocations compare.
	Issued time.Time
}

// Allows reports whether p may do what needs role everywhere, without grants.
func (p Principal) Allows(need Role) bool { return p.Role >= need }
