package cluster

import (
	"context"
	"crypto/hmac"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/internal/errs"
)

// The internal actions between the head and the data nodes (register, heartbeat, materialize,
// drop-partitions) are authenticated with the cluster secret: the caller sends, in the gRPC
// metadata header actionAuthHeader, "<unix seconds>:<hex HMAC-SHA256>" over the action type,
// that time and the body. The receiver refuses with UNAUTHENTICATED an action without it, with
// a wrong MAC, or signed more than actionAuthSkew away from its own clock. A process without a
// cluster secret neither signs nor checks.
const actionAuthHeader = "cachedb-cluster-auth"

// actionAuthSkew is how far the signer's clock may be from the receiver's.
const actionAuthSkew = 5 * time.Minute

// signAction returns ctx carrying the authentication of action under key (ctx itself when key
// is empty).
func signAction(ctx context.Context, key []byte, action *flight.Action) context.Context {
	if len(key) == 0 {
		return ctx
	}
	at := strconv.FormatInt(time.Now().Unix(), 10)
	return metadata.AppendToOutgoingContext(ctx, actionAuthHeader, at+":"+hex.EncodeToString(actionMAC(key, action, at)))
}

// verifyAction checks the authentication that ctx's incoming metadata carries for action.
func verifyAction(ctx context.Context, key []byte, action *flight.Action, now time.Time) error {
	if len(key) == 0 {
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
	at, sum, ok := strings.Cut(values[0], ":")
	secs, err := strconv.ParseInt(at, 10, 64)
	mac, hexErr := hex.DecodeString(sum)
	if !ok || err != nil || hexErr != nil {
		return refuse("its signature is malformed")
	}
	if !hmac.Equal(mac, actionMAC(key, action, at)) {
		return refuse("its signature does not match this node's cluster secret")
	}
	if skew := now.Sub(time.Unix(secs, 0)); skew > actionAuthSkew || skew < -actionAuthSkew {
		return refuse(fmt.Sprintf("it was signed %s away from this node's clock", skew.Round(time.Second)))
	}
	return nil
}

func actionMAC(key []byte, action *flight.Action, at string) []byte {
	payload := make([]byte, 0, len(action.Type)+len(at)+len(action.Body)+24)
	payload = append(payload, "cachedb.action/1\n"...)
	payload = append(payload, action.Type...)
	payload = append(payload, '\n')
	payload = append(payload, at...)
	payload = append(payload, '\n')
	payload = append(payload, action.Body...)
	return mac(key, payload)
}
