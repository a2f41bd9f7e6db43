package flightsql

import (
	"context"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/errs"
)

// Authorization. A logged-in user's role (auth.Role) decides what the server runs for them:
// every role reads (queries, metadata, training reads); writer also changes memory tables
// (engine.AccessWrite: DDL, DML, bulk ingest); admin also makes and frees datasets
// (engine.AccessDatasets, and the load action). The checks run before a statement does: the
// engine binds the statement to say what it would do (engine.StatementAccess). A call without a
// login is allowed all of it only on a server without Options.Users (nothing to check against).
//
// Tickets carry the user they were issued to: a statement or training ticket is redeemed only
// by that user's login, on the head or on any data node (which verifies the login's token with
// the cluster secret).

// authorize checks that the call's user has need; what names the operation in the refusal.
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

// authorizeStatement checks that the call's user may run sqlText, which it classifies first
// (unless no check can refuse it).
func (s *Server) authorizeStatement(ctx context.Context, sqlText string) error {
	if _, ok := principalFrom(ctx); !ok && !s.loginsRequired() {
		return nil
	}
	access, err := s.eng.StatementAccess(ctx, sqlText)
	if err != nil {
		return err
	}
	switch access {
	case engine.AccessRead:
		return s.authorize(ctx, auth.Reader, "a query")
	case engine.AccessWrite:
		return s.authorize(ctx, auth.Writer, "changing tables")
	default:
		return s.authorize(ctx, auth.Admin, "making or dropping a dataset")
	}
}

// authorizePrepared checks that the call's user may run a prepared statement.
func (s *Server) authorizePrepared(ctx context.Context, ps *preparedStatement) error {
	if ps.info.IsQuery {
		return s.authorize(ctx, auth.Reader, "a query")
	}
	return s.authorizeStatement(ctx, ps.sql)
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
