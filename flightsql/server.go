package flightsql

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/flightwire"
	"github.com/cachedb/cachedb/node"
)

// PublicSchema is the one db schema of the catalog: every table is reported in it.
const PublicSchema = "public"

// Defaults for Options fields left zero.
const (
	DefaultMaxBatchBytes          = 4 << 20
	DefaultMaxRecvBytes           = 64 << 20
	DefaultTicketTTL              = time.Hour
	DefaultMaxPreparedStatements  = 4096
	DefaultMaxPreparedPerClient   = 256
	DefaultMaxConcurrentPerClient = 16
	DefaultPreparedStatementIdle  = 30 * time.Minute
	DefaultVersion                = "dev"
)

// Options configure a Server. The zero value is usable: each zero field takes its default.
type Options struct {
	// MaxBatchBytes caps the size of each record batch sent to a client (default 4 MiB, the
	// receive limit of a gRPC client that did not raise it). Larger batches are split by rows.
	MaxBatchBytes int64
	// MaxRecvBytes is the largest gRPC message the server accepts, e.g. a parameter batch
	// (default 64 MiB).
	MaxRecvBytes int
	// TicketTTL is how long a statement ticket stays redeemable (default 1 hour).
	TicketTTL time.Duration
	// MaxPreparedPerClient bounds the prepared statements one client (one gRPC connection)
	// holds open (default 256); creating one more fails with ResourceExhausted for that client
	// only. A connection's statements are closed when it ends.
	MaxPreparedPerClient int
	// MaxPreparedStatements bounds the prepared statements of all clients together (default
	// 4096), so memory stays bounded. When it is reached, the least recently used statement of
	// the client holding the most is evicted to make room (see preparedStore).
	MaxPreparedStatements int
	// MaxConcurrentPerClient bounds the statements one client executes at once (default 16):
	// GetFlightInfo and DoPut of statements while they run, and query results from DoGet until
	// their stream ends. One more is refused at once with ResourceExhausted (see
	// statementSlots); other clients are not affected.
	MaxConcurrentPerClient int
	// PreparedStatementIdle is how long an unused prepared statement lives (default 30 min).
	PreparedStatementIdle time.Duration
	// StatementTimeout, when positive, bounds how long one SQL statement may plan and run on
	// this server: GetFlightInfo's planning (and a statement without rows run there), a DoPut
	// update, and the DoGet of a statement ticket until its last batch (0: no bound; the
	// client's own deadline applies either way). A statement past it
	// fails with DEADLINE_EXCEEDED and stops, with everything it runs on the data nodes.
	// Training reads (epoch tickets) are not bounded by it. It is also the upper bound of a
	// session's own statement_timeout (statementTimeout).
	StatementTimeout time.Duration
	// Version is the server version reported by GetSqlInfo (default "dev").
	Version string
	// Alloc serves metadata results and incoming parameter batches (default
	// memory.DefaultAllocator). Query results use the engine's allocator.
	Alloc memory.Allocator
	// Logger receives request failures and recovered panics (default slog.Default()).
	Logger *slog.Logger
	// TicketKey seals statement tickets with its current key and opens those sealed with its
	// current or previous key. Servers that share it accept each other's tickets: the head and
	// the data nodes of a cluster (the cluster secret). Nil: a random key private to this server.
	TicketKey *ticket.Keyring
	// DataNodes, when set, returns the Flight addresses of the data nodes that serve this
	// server's tickets (signed with the same TicketKey and running the same catalogs). A query
	// that runs over data nodes (engine.Distribute) is then answered with endpoints located at
	// the data nodes instead of one endpoint on this server.
	DataNodes func() []string
	// ReachableNodes, when set, returns the addresses of data nodes that take no new work but
	// still serve what they hold (suspect nodes: late with their heartbeats). A query whose
	// data is held on one of them runs on it as well; free scan tasks still go only to
	// DataNodes.
	ReachableNodes func() []string
	// Node is the process's node runtime: it runs this server's part of distributed queries
	// (the stage tickets the head signs: the final stage on a data node, or on the head the
	// stage that gathers from the nodes) and produces training-read segments. Without it (a
	// server alone) such tickets fail with Unavailable. The caller closes it after Shutdown.
	Node *node.Runtime
	// Users, when set, requires every client to log in (auth.go): a Flight handshake with HTTP
	// Basic credentials checked against Users, answered with a bearer token that every later
	// call carries; a call without one is refused with UNAUTHENTICATED. Nil: no logins, any
	// client may call (a bearer token, when sent, is still verified).
	Users *auth.Users
	// JWTs, when set, requires every client to log in too, and accepts JSON Web Tokens it
	// verifies as bearer tokens (an OIDC provider's, Kubernetes service-account tokens): the
	// user and role come from the token's claims. Give every process of a cluster the same keys.
	JWTs *auth.JWTs
	// ServiceToken, when set, requires every client to log in too, and accepts the one token a
	// deployment shares with its clients (a mounted Secret) as a bearer token, as user
	// auth.ServiceUser. Give every process of a cluster the same token.
	ServiceToken *auth.ServiceToken
	// Revocations, when set, refuses the tokens it lists (those of a user issued before a time,
	// or all of a user's), and the logins of users all of whose tokens it revokes. Give every
	// process of a cluster the same file.
	Revocations *auth.Revocations
	// Grants raise users' roles on particular catalogs and datasets (authorize.go); nil: a
	// user's role applies everywhere alike.
	Grants *auth.Grants
	// TokenTTL is how long a login's bearer token is valid (default auth.DefaultTokenTTL).
	TokenTTL time.Duration
	// LoginBurst and LoginEvery limit failed logins per client address: LoginBurst at once, then
	// one more each LoginEvery (defaults auth.DefaultLoginBurst, auth.DefaultLoginEvery).
	LoginBurst int
	LoginEvery time.Duration
	// DataNode makes the server a data node's: it serves the tickets its head signs and the
	// cluster's signed actions, and refuses every other call, a client's statements above all,
	// with PERMISSION_DENIED (data_node.go).
	DataNode bool
	// TLS, when set, is the server's TLS configuration (internal/tlsconf): every connection is
	// encrypted, and the endpoints it hands out locate the data nodes as grpc+tls:// (the data
	// nodes of a cluster serve TLS when the head does). Nil: plaintext.
	TLS *tls.Config
	// Extend, when set, wraps the Flight service before it is registered, so that another part
	// of cachedb (cluster membership) can serve its own DoAction types on the same port. The
	// wrapper must pass every call it does not serve to the service it wraps. Its errors pass
	// through the same status mapping as the server's own.
	Extend func(flight.FlightServer) flight.FlightServer
	// PathDataset is the dataset a plain Flight PATH descriptor [shard, shards] reads (path.go:
	// Kubeflow Trainer's DataCacheDataset). Empty: such a descriptor must name its dataset.
	PathDataset string
}

func (o Options) withDefaults() Options {
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.MaxRecvBytes <= 0 {
		o.MaxRecvBytes = DefaultMaxRecvBytes
	}
	if o.TicketTTL <= 0 {
		o.TicketTTL = DefaultTicketTTL
	}
	if o.MaxPreparedStatements <= 0 {
		o.MaxPreparedStatements = DefaultMaxPreparedStatements
	}
	if o.MaxPreparedPerClient <= 0 {
		o.MaxPreparedPerClient = DefaultMaxPreparedPerClient
	}
	if o.MaxConcurrentPerClient <= 0 {
		o.MaxConcurrentPerClient = DefaultMaxConcurrentPerClient
	}
	if o.PreparedStatementIdle <= 0 {
		o.PreparedStatementIdle = DefaultPreparedStatementIdle
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TicketKey == nil {
		o.TicketKey = ticket.RandomKeyring()
	}
	if o.LoginBurst <= 0 {
		o.LoginBurst = auth.DefaultLoginBurst
	}
	if o.LoginEvery <= 0 {
		o.LoginEvery = auth.DefaultLoginEvery
	}
	return o
}

// Server is a Flight SQL server over one engine. It is safe for concurrent use; it serves on
// any number of listeners until Shutdown.
type Server struct {
	fsql.BaseServer

	eng      *engine.Engine
	opts     Options
	tickets  *ticket.Keyring
	tokens   *auth.Tokens
	logins   *auth.Limiter
	prepared *preparedStore
	slots    *statementSlots
	grpc     *grpc.Server
	// service is the Flight service registered with grpc (Extend applied).
	service flight.FlightServer
	// health is the standard gRPC health service on the same port (SetServing).
	health *health.Server
	// sqlInfoIDs are the GetSqlInfo ids registered with BaseServer.
	sqlInfoIDs map[uint32]bool
	now        func() time.Time

	// streams counts result streams still producing batches (tests watch it drain).
	streams activeCounter
}

// sendBufferBytes is the most a connection writes to its socket at once.
const sendBufferBytes = 256 << 10

// NewServer returns a server over eng. Nothing listens until Serve.
func NewServer(eng *engine.Engine, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		eng:     eng,
		opts:    opts,
		tickets: opts.TicketKey,
		tokens:  auth.NewTokens(opts.TicketKey, opts.TokenTTL),
		logins:  auth.NewLimiter(opts.LoginBurst, opts.LoginEvery),
		now:     time.Now,
	}
	s.BaseServer.Alloc = opts.Alloc
	s.prepared = newPreparedStore(opts.MaxPreparedStatements, opts.MaxPreparedPerClient, opts.PreparedStatementIdle, func() time.Time { return s.now() })
	s.slots = newStatementSlots(opts.MaxConcurrentPerClient)
	s.registerSQLInfo()
	if opts.DataNodes != nil && opts.Node != nil {
		eng.SetDistributedAnalyzer(s.analyzeDistributed)
	}
	serverOpts := []grpc.ServerOption{
		grpc.ForceServerCodecV2(flightwire.Codec()), // results are sent by flightwire
		grpc.MaxRecvMsgSize(opts.MaxRecvBytes),
		// Results and training reads leave in writes of up to sendBufferBytes rather than gRPC's
		// 32 KiB: an eighth of the system calls, and fewer, larger segments for the client to
		// take in. (gRPC returns the buffer to a shared pool after each flush, so an idle
		// connection holds none.)
		grpc.WriteBufferSize(sendBufferBytes),
		grpc.StatsHandler(&connTracker{ended: s.connectionEnded}),
		grpc.ChainUnaryInterceptor(unaryInterceptor, s.authUnary, withSessionUnary),
		grpc.ChainStreamInterceptor(streamInterceptor, s.authStream, withSessionStream),
	}
	if opts.TLS != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.grpc = grpc.NewServer(serverOpts...)
	var svc flight.FlightServer = &loadService{FlightServer: resultStreams{FlightServer: fsql.NewFlightServerWithAllocator(s, opts.Alloc), s: s}, s: s}
	svc = &pathService{FlightServer: svc, s: s}
	if opts.Extend != nil {
		svc = opts.Extend(svc)
	}
	if opts.DataNode {
		svc = &dataNodeService{FlightServer: svc, keys: opts.TicketKey}
	}
	svc = &authService{FlightServer: svc, s: s}
	s.service = svc
	flight.RegisterFlightServiceServer(s.grpc, svc)
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	return s
}

// healthServices are the names the gRPC health service answers for: the whole server ("")
// and the Flight service.
var healthServices = []string{"", "arrow.flight.protocol.FlightService"}

// SetServing sets what the gRPC health service (grpc.health.v1.Health, on the Flight port)
// answers: SERVING or NOT_SERVING. A new server is SERVING; the process sets it from its
// readiness (cmd/cachedb), and Shutdown makes it NOT_SERVING for good.
func (s *Server) SetServing(serving bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		st = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range healthServices {
		s.health.SetServingStatus(name, st)
	}
}

// connectionEnded forgets a client whose connection closed: its prepared statements are
// closed, its statement count dropped.
func (s *Server) connectionEnded(id clientID) {
	s.prepared.dropClient(id)
	s.slots.forget(id)
}
