package flightsql

import (
	"context"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/errs"
)

// Authorization. A logged-in user's role (auth.Role) decides what the server runs for them:
// every role but none reads (queries, metadata, training reads); writer also changes memory
// tables (engine.AccessWrite: DDL, DML, bulk ingest); admin also makes and frees datasets
// (engine.AccessDatasets, and the load action). Grants (Options.Grants) raise a user's role on
// particular catalogs and datasets: a change is checked against the user's role on each table it
// changes (engine.StatementAccess's targets), a load against their role on the dataset. The
// checks run before a statement does: the engine binds the statement to say what it would do.
//
// Reads are checked as names resolve: a user whose role everywhere is none reads through a
// guard (readGuard, engine.WithGuard) that refuses every table their grants do not let them read,
// whichever way the read arrives (statement, prepared statement, view, DESCRIBE, training read,
// a dataset's definition), and metadata and information_schema list only what they may read.
// A call without a login is allowed all of it only on a server without Options.Users (nothing
// to check against).
//
// Tickets carry the user they were issued to: a statement or training ticket is redeemed only
// by that user's login, on the head or on any data node (which verifies the login's token with
// the cluster secret). Data nodes check no grants: they run only what the head handed out.

// authorize checks that the call's user has need everywhere; what names the operation in the
// refusal.
func (s *Server) authorize(ctx context.Context, need auth.Role, what string) error {
	p, ok := principalFrom(ctx)
	if !ok {
		if !s.loginsRequired() {
			return nil
		}
		return requireLogin()
	}
	if p.Allows(need) {
		return nil
	}
	return errs.Deniedf("%s needs the %s role, and user %s has the %s role", what, need, p.User, p.Role)
}

// authorizeSomewhere checks that the call's user has need somewhere (everywhere, or on what a
// grant names), before the call says where: a user who has it nowhere is refused at once.
func (s *Server) authorizeSomewhere(ctx context.Context, need auth.Role, what string) error {
	p, ok := principalFrom(ctx)
	if ok && s.opts.Grants.Highest(p) >= need {
		return nil
	}
	return s.authorize(ctx, need, what)
}

// authorizeOn checks that the call's user may do action (a verb) on table t, which needs role
// need there (their role everywhere, or one a grant gives them on t).
func (s *Server) authorizeOn(ctx context.Context, need auth.Role, action string, t engine.Target) error {
	p, ok := principalFrom(ctx)
	if !ok {
		if !s.loginsRequired() {
			return nil
		}
		return requireLogin()
	}
	return s.opts.Grants.Check(p, action, objectOf(t), need)
}

func objectOf(t engine.Target) auth.Object {
	return auth.Object{Catalog: t.Catalog, Name: t.Name, Own: t.Own}
}

// authorizeStatement checks that the call's user may run sqlText, which it classifies first
// (unless no check can refuse it). What a query reads is checked as it binds (readGuard).
func (s *Server) authorizeStatement(ctx context.Context, sqlText string) error {
	if _, ok := principalFrom(ctx); !ok && !s.loginsRequired() {
		return nil
	}
	access, targets, err := s.eng.StatementAccess(ctx, sqlText)
	if err != nil {
		return err
	}
	need, action, what := auth.Writer, "change", "changing tables"
	switch access {
	case engine.AccessRead:
		return nil
	case engine.AccessDatasets:
		need, action, what = auth.Admin, "make or drop", "making or dropping a dataset"
	}
	if err := s.authorizeSomewhere(ctx, need, what); err != nil {
		return err
	}
	if len(targets) == 0 {
		return s.authorize(ctx, need, what) // no table to look for grants on
	}
	for _, t := range targets {
		if err := s.authorizeOn(ctx, need, action, t); err != nil {
			return err
		}
	}
	return nil
}

// authorizePrepared checks that the call's user may run a prepared statement; a query binds
// again in the caller's context, so what it reads is checked for whoever runs it.
func (s *Server) authorizePrepared(ctx context.Context, ps *preparedStatement) error {
	if !ps.info.IsQuery {
		return s.authorizeStatement(ctx, ps.sql)
	}
	if err := s.authorize(ctx, auth.None, "a query"); err != nil {
		return err // no login
	}
	if s.guardOf(ctx) == nil {
		return nil
	}
	_, _, err := s.eng.StatementAccess(ctx, ps.sql)
	return err
}

// readGuard is the catalog.Guard of a user whose role everywhere reads nothing (none): they read
// the tables their grants give them a role on, and see only those in listings.
type readGuard struct {
	grants *auth.Grants
	p      auth.Principal
}

func (g readGuard) Read(catalog, name string, own bool) error {
	return g.grants.Check(g.p, "read", auth.Object{Catalog: catalog, Name: name, Own: own}, auth.Reader)
}

func (g readGuard) Lists(catalog string, own bool) bool {
	return g.grants.RoleOn(g.p, auth.Object{Catalog: catalog, Own: own}) >= auth.Reader
}

// guardOf is the guard a call's reads pass: nil for a user who reads everything, for a call
// without a login, and on a data node (which runs only what its head handed out).
func (s *Server) guardOf(ctx context.Context) catalog.Guard {
	p, ok := principalFrom(ctx)
	if !ok || p.Role >= auth.Reader || s.opts.DataNode {
		return nil
	}
	return readGuard{grants: s.opts.Grants, p: p}
}

// userOf is the user a call runs as ("" without a login): the user its tickets are issued to.
func userOf(ctx context.Context) string {
	p, _ := principalFrom(ctx)
	return p.User
}

// checkTicketUser checks that the call redeeming a ticket issued to user (""; issued without a
// login) is that user's.
func checkTicketUser(ctx context.Context, user string) error {
	if user == "" {
		return nil
	}
	p, ok := principalFrom(ctx)
	if !ok {
		return requireLogin()
	}
	if p.User != user {
		return errs.Deniedf("the ticket was issued to another user: run the statement with your own login")
	}
	return nil
}
