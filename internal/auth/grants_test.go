package auth

import (
	"strings"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestGrantsRaiseRolesOnTheirObjects(t *testing.T) {
	g, err := NewGrants([]Grant{
		{User: "alice", Dataset: "team_a_*", Role: Admin},
		{User: "bob", Catalog: "lake", Role: Reader},
		{Group: "etl", Dataset: "staging", Role: Writer},
		{Group: "etl", Catalog: "LAKE", Role: Writer},
	})
	if err != nil {
		t.Fatal(err)
	}
	alice := Principal{User: "alice", Role: Reader}
	bob := Principal{User: "bob", Role: None}
	carol := Principal{User: "carol", Role: None, Groups: []string{"etl"}}
	own := func(name string) Object { return Object{Catalog: "cachedb", Name: name, Own: true} }
	lake := Object{Catalog: "lake", Name: "sales.orders"}
	for _, tt := range []struct {
		p    Principal
		o    Object
		want Role
	}{
		{alice, own("team_a_clicks"), Admin},
		{alice, own("TEAM_A_x"), Admin}, // names compare case-insensitively, as tables resolve
		{alice, own("team_a_"), Admin},
		{alice, own("team_b_clicks"), Reader},
		{alice, own("team_"), Reader},
		{alice, Object{Catalog: "team_a_x", Name: "t"}, Reader}, // a dataset grant names no source table
		{alice, lake, Reader},
		{bob, lake, Reader},
		{bob, Object{Catalog: "Lake", Name: "x"}, Reader},
		{bob, Object{Catalog: "lakehouse", Name: "x"}, None},
		{bob, own("team_a_clicks"), None},
		{carol, own("staging"), Writer},
		{carol, own("staging2"), None},
		{carol, lake, Writer},
		{Principal{User: "carol", Role: Admin}, own("x"), Admin}, // grants only add
		{Principal{User: "alice", Role: None, Groups: []string{"ETL"}}, own("staging"), None}, // groups and users match exactly
		// A catalog as a whole: the highest role on some table of it (listings).
		{alice, Object{Catalog: "cachedb", Own: true}, Admin},
		{bob, Object{Catalog: "cachedb", Own: true}, None},
		{bob, Object{Catalog: "lake"}, Reader},
	} {
		if got := g.RoleOn(tt.p, tt.o); got != tt.want {
			t.Errorf("RoleOn(%s, %s) = %s, want %s", tt.p.User, tt.o, got, tt.want)
		}
	}
	err = g.Check(bob, "read", own("team_a_clicks"), Reader)
	if errs.CategoryOf(err) != errs.PermissionDenied {
		t.Fatalf("Check = %v, want Denied", err)
	}
	for _, want := range []string{"user bob", "read", "table cachedb.team_a_clicks", "reader role"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if err := g.Check(alice, "make or drop", own("team_a_x"), Admin); err != nil {
		t.Errorf("alice on her datasets: %v", err)
	}
	var none *Grants
	if none.RoleOn(alice, own("x")) != Reader || none.Len() != 0 || none.Catalogs() != nil {
		t.Error("nil Grants")
	}
	if got := strings.Join(g.Catalogs(), ","); got != "lake,LAKE" {
		t.Errorf("Catalogs = %s", got)
	}
}

func TestGrantsAreChecked(t *testing.T) {
	for name, tc := range map[string]struct {
		g    Grant
		want string
	}{
		"no principal":     {Grant{Catalog: "lake", Role: Reader}, "one of user and group"},
		"two principals":   {Grant{User: "a", Group: "b", Catalog: "lake", Role: Reader}, "one of user and group"},
		"no object":        {Grant{User: "a", Role: Reader}, "one of catalog and dataset"},
		"two objects":      {Grant{User: "a", Catalog: "lake", Dataset: "d", Role: Reader}, "one of catalog and dataset"},
		"inner star":       {Grant{User: "a", Dataset: "team_*_x", Role: Reader}, "* may only end"},
		"no role":          {Grant{User: "a", Catalog: "lake"}, "role must be"},
		"granting no role": {Grant{User: "a", Catalog: "lake", Role: None}, "role must be"},
		"an unknown role":  {Grant{User: "a", Catalog: "lake", Role: Admin + 1}, "role must be"},
	} {
		_, err := NewGrants([]Grant{{User: "ok", Catalog: "lake", Role: Reader}, tc.g})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "grants[1]") {
			t.Errorf("%s: %v, want grants[1] … %q", name, err, tc.want)
		}
	}
}

func TestHighestRole(t *testing.T) {
	g, err := NewGrants([]Grant{{User: "alice", Dataset: "a_*", Role: Writer}, {Group: "ops", Catalog: "lake", Role: Admin}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p    Principal
		want Role
	}{
		{Principal{User: "alice", Role: Reader}, Writer},
		{Principal{User: "alice", Role: Admin}, Admin},
		{Principal{User: "bob", Role: None, Groups: []string{"ops"}}, Admin},
		{Principal{User: "bob", Role: None}, None},
	} {
		if got := g.Highest(tt.p); got != tt.want {
			t.Errorf("Highest(%+v) = %s, want %s", tt.p, got, tt.want)
		}
	}
}
