package main

import (
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/auth/jwttest"
)

// TestGrantsFromTheConfiguration serves with the grants section of a configuration and JWT
// logins whose tokens carry no role (--jwt-default-role none) but groups: what each user may
// do is what the grants give their name and groups, and the refusals say who, what and where.
func TestGrantsFromTheConfiguration(t *testing.T) {
	idp := jwttest.New(t, "k1")
	config := writeConfig(t, `
grants:
  - {group: analysts, catalog: local, role: reader}
  - {user: svc-trainer, dataset: "train_*", role: admin}
`)
	args := []string{"serve", "--listen", "127.0.0.1:0", "--warehouse", warehouseDir, "--workers", "1", "--config", config,
		"--jwt-keys", idp.WriteJWKS(t), "--jwt-default-role", "none"}
	cmd, addr, log := startProcessLog(t, listeningLine, args...)
	defer stopServe(t, cmd)
	if !strings.Contains(log(), "grants=2") {
		t.Errorf("the log does not count the grants:\n%s", log())
	}
	token := func(user string, groups ...string) string {
		claims := map[string]any{"sub": user, "exp": time.Now().Add(time.Hour).Unix()}
		if len(groups) > 0 {
			claims["groups"] = groups
		}
		return idp.Sign(t, claims)
	}
	trainer, analyst, nobody := token("svc-trainer", "analysts"), token("ann", "analysts"), token("norbert")
	as := func(tok, query, want string) {
		t.Helper()
		out, errOut, _ := runCLI(t, "", []string{"CACHEDB_TOKEN=" + tok}, "sql", "--connect", addr, "-e", query)
		if !strings.Contains(out+errOut, want) {
			t.Errorf("%s: want %q in\n%s%s", query, want, out, errOut)
		}
	}
	// Registration is asynchronous; the bound only keeps a broken build from hanging.
	const ctas = "CREATE TABLE %s AS SELECT ride_id, city FROM demo.rides WHERE ride_id <= 500"
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, errOut, _ := runCLI(t, "", []string{"CACHEDB_TOKEN=" + trainer}, "sql", "--connect", addr, "-e", strings.Replace(ctas, "%s", "train_a", 1))
		if strings.Contains(out, "500 rows affected") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the trainer could not make train_a:\n%s%s", out, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
	as(trainer, strings.Replace(ctas, "%s", "other_a", 1), "ERROR (PermissionDenied): user svc-trainer may not make or drop table cachedb.other_a")
	as(analyst, "SELECT count(*) AS n FROM demo.rides WHERE ride_id <= 500", "| 500 |")
	as(analyst, "SELECT count(*) AS n FROM train_a", "ERROR (PermissionDenied): user ann may not read table cachedb.train_a")
	as(analyst, "DROP TABLE train_a", "ERROR (PermissionDenied)")
	as(nobody, "SELECT count(*) FROM demo.rides", "ERROR (PermissionDenied): user norbert may not read table local.demo.rides")
	as(nobody, "SHOW DATABASES", "information_schema")
	as(trainer, "SELECT count(*) AS n FROM train_a", "| 500 |")
	as(trainer, "DROP TABLE train_a", "Query OK")

	// Grants need logins, and name catalogs that exist.
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", "127.0.0.1:0", "--warehouse", warehouseDir, "--config", config}, "grants need logins"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--warehouse", warehouseDir, "--jwt-keys", idp.WriteJWKS(t), "--config",
			writeConfig(t, "grants:\n  - {user: a, catalog: lakehouse, role: reader}\n")}, `catalog "lakehouse" is not configured`},
	} {
		if _, errOut, err := runCLI(t, "", nil, bad.args...); err == nil || !strings.Contains(errOut, bad.want) {
			t.Errorf("%v: %v, want an error containing %q\n%s", bad.args, err, bad.want, errOut)
		}
	}
}
