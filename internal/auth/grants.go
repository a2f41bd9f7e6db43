package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
)

// Grant gives a principal a role on some tables, besides the role it has everywhere
// (Principal.Role). Grants only add: a user's role on a table is the highest of their role
// everywhere and the roles of every grant that names them and the table.
type Grant struct {
	// User or Group names the principal: a user by name, or every user of a group (the users
	// file's groups, a JWT's groups claim). Exactly one is set.
	User, Group string
	// Catalog or Dataset names the tables: every table of a catalog, or tables of cachedb's own
	// catalog (datasets, memory tables and views, which share its one namespace) by name.
	// Exactly one is set. A trailing * matches every name that starts with what precedes it.
	Catalog, Dataset string
	// Role is what the principal may do there: reader, writer or admin.
	Role Role
}

// Object is a table an action reads or changes: the catalog it is found in and its name there.
type Object struct {
	Catalog string
	// Name is the table's name in Catalog (namespace-qualified in a namespaced catalog), without
	// a version; empty for a catalog as a whole.
	Name string
	// Own is set for a table of cachedb's own catalog, which Dataset grants name.
	Own bool
}

func (o Object) String() string {
	if o.Name == "" {
		return "catalog " + o.Catalog
	}
	return "table " + o.Catalog + "." + o.Name
}

// Grants are the grants of a configuration. A nil *Grants holds none. Safe for concurrent use
// (immutable).
type Grants struct {
	list []Grant
}

// NewGrants checks grants; its errors name the grant by its index.
func NewGrants(list []Grant) (*Grants, error) {
	for i, g := range list {
		where := fmt.Sprintf("grants[%d]", i)
		if (g.User == "") == (g.Group == "") {
			return nil, fmt.Errorf("%s: give exactly one of user and group", where)
		}
		if (g.Catalog == "") == (g.Dataset == "") {
			return nil, fmt.Errorf("%s: give exactly one of catalog and dataset", where)
		}
		for key, pattern := range map[string]string{"catalog": g.Catalog, "dataset": g.Dataset} {
			if err := checkPattern(pattern); err != nil {
				return nil, fmt.Errorf("%s: %s %q: %w", where, key, pattern, err)
			}
		}
		if g.Role < Reader || g.Role > Admin {
			return nil, fmt.Errorf("%s: role must be reader, writer or admin", where)
		}
	}
	return &Grants{list: slices.Clone(list)}, nil
}

// checkPattern accepts a name, or a prefix followed by one trailing *.
func checkPattern(p string) error {
	if i := strings.IndexByte(p, '*'); i >= 0 && i != len(p)-1 {
		return errors.New("* may only end the name (a prefix match)")
	}
	return nil
}

// matches reports whether name matches pattern, case-insensitively (catalog and table names
// are).
func matches(pattern, name string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix)
	}
	return strings.EqualFold(pattern, name)
}

// names reports whether g names p.
func (g Grant) names(p Principal) bool {
	if g.User != "" {
		return g.User == p.User
	}
	return slices.Contains(p.Groups, g.Group)
}

// covers reports whether g names o, or, for a catalog as a whole (o.Name empty), some table of
// it.
func (g Grant) covers(o Object) bool {
	if g.Catalog != "" {
		return matches(g.Catalog, o.Catalog)
	}
	return o.Own && (o.Name == "" || matches(g.Dataset, o.Name))
}

// RoleOn is p's role on o: the highest of p.Role and the roles of the grants naming p and o.
// For a catalog as a whole (o.Name empty) it is the highest role p has on some table of it.
func (g *Grants) RoleOn(p Principal, o Object) Role {
	role := p.Role
	if g == nil {
		return role
	}
	for _, gr := range g.list {
		if gr.Role > role && gr.names(p) && gr.covers(o) {
			role = gr.Role
		}
	}
	return role
}

// Highest is the highest role p has anywhere: p.Role, or a grant's that names p.
func (g *Grants) Highest(p Principal) Role {
	role := p.Role
	if g == nil {
		return role
	}
	for _, gr := range g.list {
		if gr.Role > role && gr.names(p) {
			role = gr.Role
		}
	}
	return role
}

// Check returns nil when p may do action (a verb: "read", "change", "make or drop") on o, which
// needs role need there, and otherwise a PermissionDenied error naming the user, the action and
// the object.
func (g *Grants) Check(p Principal, action string, o Object, need Role) error {
	have := g.RoleOn(p, o)
	if have >= need {
		return nil
	}
	return errs.Deniedf("user %s may not %s %s: that needs the %s role on it, and %s has the %s role there (grants in the configuration give roles on catalogs and datasets)",
		p.User, action, o, need, p.User, have)
}

// Catalogs lists the catalog names grants give exactly (not by prefix), so that a server can
// check at start that they exist.
func (g *Grants) Catalogs() []string {
	if g == nil {
		return nil
	}
	var out []string
	for _, gr := range g.list {
		if gr.Catalog != "" && !strings.HasSuffix(gr.Catalog, "*") && !slices.Contains(out, gr.Catalog) {
			out = append(out, gr.Catalog)
		}
	}
	return out
}

// Len is the number of grants.
func (g *Grants) Len() int {
	if g == nil {
		return 0
	}
	return len(g.list)
}
