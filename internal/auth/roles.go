package auth

import (
	"fmt"
	"strings"
)

// Role is what a user may do. Roles are ordered: each includes what the ones below it allow.
type Role uint8

const (
	// Reader runs queries (SELECT, EXPLAIN, SHOW, training reads) and reads metadata.
	Reader Role = iota + 1
	// Writer also changes memory tables: CREATE / INSERT / UPDATE / DELETE / DROP of tables,
	// views, indexes and triggers, and bulk ingest.
	Writer
	// Admin also makes and frees datasets on the data nodes: load, CREATE TABLE … AS SELECT over
	// Iceberg tables, DROP TABLE of a dataset, replace.
	Admin
)

var roleNames = map[Role]string{Reader: "reader", Writer: "writer", Admin: "admin"}

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
	return 0, fmt.Errorf("unknown role %q: want reader, writer or admin", s)
}

// Principal is the authenticated caller of a request.
type Principal struct {
	User string
	Role Role
}

// Allows reports whether p may do what needs role.
func (p Principal) Allows(need Role) bool { return p.Role >= need }
