package cluster

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cachedb/cachedb/internal/rpcerr"
)

// maxPartitionMessage bounds one message of a partition stream the head receives; a dataset's
// batches are engine-sized (thousands of rows), far below it.
const maxPartitionMessage = 256 << 20

// connectParams reconnect quickly after a peer restarts (gRPC's default backoff grows to
// 2 minutes), and give one connection attempt long enough to finish on a CPU-starved machine or
// a throttled pod: an attempt cut short fails every call made meanwhile with Unavailable, while
// a peer that is really gone refuses the connection at once.
var connectParams = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 20 * time.Second,
}

// Transport is how a process reaches the others of its cluster (the head its data nodes, a data
// node the head and its peers): over TLS with TLS set, in plaintext without. Every process of a
// cluster serves the same way, so one setting holds for all its peers. With TLS, the peer's
// certificate must name the address it is dialed at (its advertised HOST:PORT); the
// configuration's GetClientCertificate answers peers that require a client certificate.
type Transport struct {
	TLS *tls.Config
}

// credentials are the gRPC transport credentials of t.
func (t Transport) credentials() credentials.TransportCredentials {
	if t.TLS == nil {
		return insecure.NewCredentials()
	}
	return credentials.NewTLS(t.TLS)
}

// dialNode returns a Flight client of the data node at addr, reached over t. The connection is
// made lazily and re-made quickly after the node restarts.
func dialNode(addr string, t Transport) (flight.Client, error) {
	cl, err := flight.NewClientWithMiddleware(addr, nil, nil,
		grpc.WithTransportCredentials(t.credentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxPartitionMessage)),
		grpc.WithConnectParams(connectParams))
	if err != nil {
		return nil, fmt.Errorf("data node address %s: %w", addr, err)
	}
	return cl, nil
}

// remoteReader reads a stream another process serves; its error is read with
// rpcerr.FromStatus, so a failure mid-stream keeps the category it had there.
type remoteReader struct {
	array.RecordReader
}

func (r remoteReader) Err() error { return rpcerr.FromStatus(r.RecordReader.Err()) }
