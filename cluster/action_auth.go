package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
)

// The internal actions between the head and the data nodes (register, heartbeat, materialize,
// drop-partitions, cancel-stage) are authenticated with the cluster secret: the caller sends, in
// the gRPC metadata header actionAuthHeader, a ticket.Action envelope (unpadded base64url)
// sealed with its current key over the action type and the SHA-256 of the body, expiring
// actionAuthSkew after it was signed. The receiver refuses with UNAUTHENTICATED an action
// without it, signed with a key it does not hold (current or previous), for another type or
// body, or signed more than actionAuthSkew away from its own clock. Each signature carries a
// random nonce, and a process refuses a signature it has already received (until it expires), so
// a captured call cannot be replayed: a recorded heartbeat does not keep a dead node alive. A
// process without a cluster secret neither signs nor checks.
const actionAuthHeader = "cachedb-cluster-auth"

// actionAuthSkew is how far the signer's clock may be from the receiver's.
const actionAuthSkew = 5 * time.Minute

// actionClaim is the payload of a ticket.Action envelope: the one call it signs.
type actionClaim struct {
	Type       string `json:"type"`
	BodySHA256 []byte `json:"body_sha256"`
	// Nonce makes every signature unique, so that a repeated one is a replay.
	Nonce []byte `json:"nonce"`
}

// actionNonceLen is the length of a signature's random nonce.
const actionNonceLen = 16

// TicketKind makes actionClaim the payload of ticket.Action envelopes.
func (actionClaim) TicketKind() ticket.Kind { return ticket.Action }

func claimOf(action *flight.Action) actionClaim {
	sum := sha256.Sum256(action.Body)
	return actionClaim{Type: action.Type, BodySHA256: sum[:]}
}

// signAction returns ctx carrying the authentication of action under key's current key (ctx
// itself when key is nil).
func signAction(ctx context.Context, key *ticket.Keyring, action *flight.Action) context.Context {
	if key == nil {
		return ctx
	}
	claim := claimOf(action)
	claim.Nonce = make([]byte, actionNonceLen)
	_, _ = rand.Read(claim.Nonce) // crypto/rand.Read never fails
	raw, err := key.Seal(time.Now().Add(actionAuthSkew), claim)
	if err != nil {
		// A claim always encodes; the receiver refuses the unsigned call and says why.
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, actionAuthHeader, base64.RawURLEncoding.EncodeToString(raw))
}

// verifyAction checks the authentication that ctx's incoming metadata carries for action, and
// records its nonce: the handler that carries out the action calls it, once per call.
func verifyAction(ctx context.Context, key *ticket.Keyring, action *flight.Action, now time.Time) error {
	return checkAction(ctx, key, action, now, true)
}

// checkAction checks action's authentication; with record, it also refuses a nonce already
// received and records this one.
func checkAction(ctx context.Context, key *ticket.Keyring, action *flight.Action, now time.Time, record bool) error {
	if key == nil {
		return nil
	}
	refuse := func(why string) error {
		return errs.Unauthenticatedf("%s: %s; the head and every data node must share one cluster secret (--cluster-secret or CACHEDB_CLUSTER_SECRET)", action.Type, why)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get(actionAuthHeader)
	if len(values) != 1 {
		return refuse("the call is not signed with the cluster secret")
	}
	raw, err := base64.RawURLEncoding.DecodeString(values[0])
	if err != nil {
		return refuse("its signature is malformed")
	}
	// The envelope expires actionAuthSkew after signing: expired means signed too long ago.
	claim, expires, err := ticket.OpenAs[actionClaim](key, raw, now)
	if err != nil {
		// err names the keys when they differ, and how to make them agree.
		return errs.Unauthenticatedf("%s: its signature is not valid here: %v", action.Type, err)
	}
	if want := claimOf(action); claim.Type != want.Type || string(claim.BodySHA256) != string(want.BodySHA256) {
		return refuse("its signature does not match this call (signed for another action or body)")
	}
	if signed := expires.Add(-actionAuthSkew); signed.Sub(now) > actionAuthSkew {
		return refuse(fmt.Sprintf("it was signed %s away from this node's clock", signed.Sub(now).Round(time.Second)))
	}
	if len(claim.Nonce) != actionNonceLen {
		return refuse("its signature has no nonce (signed by an older cachedb: run one version across the cluster)")
	}
	if record && !receivedActions.first(claim.Nonce, expires, now) {
		return errs.Unauthenticatedf("%s: this signed call was already received: a replay is refused", action.Type)
	}
	return nil
}

// receivedActions remembers the nonces of the signed calls this process has accepted. It is one
// per process: each signed call goes to exactly one receiver, whichever server of the process
// (head, in-process data node) that is.
var receivedActions = replayGuard{seen: map[string]time.Time{}}

// replayGuard remembers nonces until their signatures expire. Only calls whose signature
// verified reach it, so only the cluster's own traffic grows it: a heartbeat per node and
// interval, and the head's dataset and cancel calls, for actionAuthSkew each.
type replayGuard struct {
	mu   sync.Mutex
	seen map[string]time.Time
	// pruned is when expired nonces were last forgotten.
	pruned time.Time
}

// first records nonce, valid until expires, and reports whether it was not seen before.
func (g *replayGuard) first(nonce []byte, expires, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.pruned) > time.Minute || now.Before(g.pruned) {
		for n, exp := range g.seen {
			if !exp.After(now) {
				delete(g.seen, n)
			}
		}
		g.pruned = now
	}
	if _, ok := g.seen[string(nonce)]; ok {
		return false
	}
	g.seen[string(nonce)] = expires
	return true
}

// VerifyAction checks that the call in ctx carries a valid signature of action with key (nil:
// refused). A server lets such a call through without a user's login: only the processes of the
// cluster hold the secret. It gates the call and records nothing: the handler that carries the
// action out verifies it again and refuses a replay.
func VerifyAction(ctx context.Context, key *ticket.Keyring, action *flight.Action) error {
	if key == nil {
		return errs.Unauthenticatedf("%s: this process has no cluster secret to verify the call with", action.Type)
	}
	return checkAction(ctx, key, action, time.Now(), false)
}

// SignedAction reports whether the call in ctx claims to be an internal action (it carries the
// cluster's signature header, valid or not), so a refusal can speak to a process of the cluster
// rather than to a user.
func SignedAction(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(actionAuthHeader)) > 0
}
