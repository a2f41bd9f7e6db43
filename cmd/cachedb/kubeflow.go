package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/httpserve"
	"github.com/cachedb/cachedb/internal/safe"
)

// Kubeflow Trainer drop-in mode (docs/kubernetes.md). Kubeflow's cache initializer starts its
// data cache as a LeaderWorkerSet whose pods run `head 0.0.0.0 50051` and `worker 0.0.0.0 50051`
// with only this environment: the table (METADATA_LOC, SCHEMA_NAME, TABLE_NAME), the group
// (LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX, set by LeaderWorkerSet), HEALTH_PORT
// (default 8080) and AWS credentials or IRSA (the AWS SDK's own chain). RUNTIME_ENV set is its
// local mode: the head on localhost:50051 and two workers. When METADATA_LOC is set, head and
// worker take their defaults from it: the table served as SCHEMA_NAME.TABLE_NAME of catalog
// files; data nodes register with the leader; the head waits for every worker of the group,
// loads the table as dataset TABLE_NAME, and is ready only then; a worker is ready once it is
// registered and the head holds the dataset; plain Flight PATH descriptors [shard, shards]
// read that dataset (flightsql/path.go). Flags and CACHEDB_* variables still win over every
// default taken from this environment.

// kubeflowPort is the Flight port of every pod of Kubeflow's data cache.
const kubeflowPort = "50051"

// kubeflowHealthPort is HEALTH_PORT's default, as Kubeflow's cache serves it.
const kubeflowHealthPort = "8080"

// kubeflowLocalWorkers is how many workers the local mode (RUNTIME_ENV) has by default.
const kubeflowLocalWorkers = 2

// kubeflowEnv is the environment of one pod of Kubeflow's data cache.
type kubeflowEnv struct {
	metadataLoc, schema, table string
	// leader is LWS_LEADER_ADDRESS: the head's DNS name, LWS-NAME-GROUP.LWS-NAME.NAMESPACE.
	leader string
	// groupSize is LWS_GROUP_SIZE (the head and its workers), 0 when unset.
	groupSize int
	// workerIndex is LWS_WORKER_INDEX (0 on the leader, 1… on the workers), -1 when unset.
	workerIndex int
	healthPort  string
	// local is RUNTIME_ENV set: everything on localhost.
	local bool
}

// kubeflowFromEnv reads the environment; nil (no error) when METADATA_LOC is unset: not
// started by Kubeflow.
func kubeflowFromEnv(lookup func(string) (string, bool)) (*kubeflowEnv, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	k := &kubeflowEnv{metadataLoc: get("METADATA_LOC"), schema: get("SCHEMA_NAME"), table: get("TABLE_NAME"),
		leader: get("LWS_LEADER_ADDRESS"), workerIndex: -1, healthPort: get("HEALTH_PORT")}
	if k.metadataLoc == "" {
		return nil, nil
	}
	_, k.local = lookup("RUNTIME_ENV")
	if k.table == "" {
		return nil, fmt.Errorf("METADATA_LOC is set (Kubeflow Trainer's data cache) but TABLE_NAME is not: both name the table to load")
	}
	if k.schema == "" {
		k.schema = "default"
	}
	if v := get("LWS_GROUP_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("LWS_GROUP_SIZE=%q: want the group's pod count, 1 or more", v)
		}
		k.groupSize = n
	}
	if v := get("LWS_WORKER_INDEX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("LWS_WORKER_INDEX=%q: want 0 or more", v)
		}
		k.workerIndex = n
	}
	if k.healthPort != "" {
		if n, err := strconv.Atoi(k.healthPort); err != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("HEALTH_PORT=%q: want a port number", k.healthPort)
		}
	}
	if !k.local && k.leader == "" {
		return nil, fmt.Errorf("METADATA_LOC is set (Kubeflow Trainer's data cache) but LWS_LEADER_ADDRESS is not: start it in a LeaderWorkerSet, or set RUNTIME_ENV for the local mode")
	}
	return k, nil
}

// tableName is the table's name in catalog files: SCHEMA_NAME.TABLE_NAME.
func (k *kubeflowEnv) tableName() string { return k.schema + "." + k.table }

var notDatasetChars = regexp.MustCompile(`[^A-Za-z0-9_]`)

// dataset is the dataset's name: TABLE_NAME, with what a dataset name cannot hold made _.
func (k *kubeflowEnv) dataset() string {
	name := notDatasetChars.ReplaceAllString(k.table, "_")
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		name = "_" + name
	}
	return name[:min(len(name), 128)]
}

// dataNodes is how many workers the head waits for before it loads the table.
func (k *kubeflowEnv) dataNodes() int {
	switch {
	case k.groupSize > 0:
		return k.groupSize - 1
	case k.local:
		return kubeflowLocalWorkers
	}
	return 0
}

// leaderHost is the host the head is reached at.
func (k *kubeflowEnv) leaderHost() string {
	if k.leader == "" {
		return "127.0.0.1"
	}
	return k.leader
}

// workerHost is the DNS name of this worker's pod, LWS-NAME-GROUP-INDEX.LWS-NAME.NAMESPACE,
// made from the leader's as LeaderWorkerSet names them; "" when it cannot be (no index, no
// leader DNS name, the local mode).
func (k *kubeflowEnv) workerHost() string {
	first, rest, ok := strings.Cut(k.leader, ".")
	if k.local || k.workerIndex < 0 || !ok || net.ParseIP(k.leader) != nil {
		return ""
	}
	return fmt.Sprintf("%s-%d.%s", first, k.workerIndex, rest)
}

// clusterSecret is the secret the head and workers share when none is given: a hash of the
// environment they all get. It is not secret from anyone who can read the pods' specs; it
// makes tickets of another cluster (another table or group) fail to verify, and no more.
func (k *kubeflowEnv) clusterSecret() string {
	h := sha256.New()
	for _, v := range []string{"cachedb kubeflow drop-in v1", k.metadataLoc, k.schema, k.table, k.leaderHost()} {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// positionalListen is the listen address of the positional form `head HOST PORT` (Kubeflow's
// container arguments); "" without arguments.
func positionalListen(args []string) (string, error) {
	switch len(args) {
	case 0:
		return "", nil
	case 2:
		if _, err := strconv.ParseUint(args[1], 10, 16); err != nil {
			return "", fmt.Errorf("port %q: want a number", args[1])
		}
		return net.JoinHostPort(args[0], args[1]), nil
	}
	return "", fmt.Errorf("want HOST PORT (as in `head 0.0.0.0 50051`) or no arguments, not %q", args)
}

// kubeflowSetup applies the positional HOST PORT and, when the environment is Kubeflow's, its
// defaults to the flags of head or worker (role) that were not given. It returns nil outside
// Kubeflow's environment.
func kubeflowSetup(cmd *cobra.Command, args []string, role string) (*kubeflowEnv, error) {
	f := cmd.Flags()
	listen, err := positionalListen(args)
	if err != nil {
		return nil, err
	}
	if listen != "" {
		if err := f.Set("listen", listen); err != nil {
			return nil, err
		}
	}
	k, err := kubeflowFromEnv(os.LookupEnv)
	if k == nil || err != nil {
		return nil, err
	}
	set := func(name, value string) error {
		if f.Changed(name) {
			return nil
		}
		return f.Set(name, value)
	}
	if listen == "" {
		if err := set("listen", net.JoinHostPort("0.0.0.0", kubeflowPort)); err != nil {
			return nil, err
		}
	}
	// HEALTH_PORT names the port Kubeflow probes: it wins over the image's CACHEDB_HTTP_LISTEN.
	if k.healthPort != "" {
		err = f.Set("http-listen", net.JoinHostPort("", k.healthPort))
	} else {
		err = set("http-listen", net.JoinHostPort("", kubeflowHealthPort))
	}
	if err != nil {
		return nil, err
	}
	// Kubeflow's clients speak plaintext grpc://.
	if !f.Changed("tls-cert") {
		if err := set("insecure", "true"); err != nil {
			return nil, err
		}
	}
	if secret, ok := f.Lookup("cluster-secret").Value.(*secretValue); ok && !secret.given() {
		if login := loginFlag(f); login != "" {
			// The derived key would sign login tokens anyone who reads the pod specs could make.
			return nil, fmt.Errorf("logins in Kubeflow mode (%s) need a cluster secret: set CACHEDB_CLUSTER_SECRET or CACHEDB_CLUSTER_SECRET_FILE (a mounted Secret) on the head and every worker", login)
		}
		slog.Warn("Kubeflow mode: no cluster secret (CACHEDB_CLUSTER_SECRET or --cluster-secret-file) given, so tickets are signed with a key derived from the pods' shared environment, which anyone who can read the pod specs can derive; keep the cache's ports inside the namespace")
		secret.setFromEnv(k.clusterSecret())
	}
	if err := f.Set("table", k.tableName()+"="+k.metadataLoc); err != nil {
		return nil, err
	}
	if role == "worker" {
		_, port, err := net.SplitHostPort(f.Lookup("listen").Value.String())
		if err != nil {
			return nil, fmt.Errorf("--listen: %w", err)
		}
		headPort := kubeflowPort
		if !k.local && net.ParseIP(k.leader) != nil {
			// A leader given as an address rather than a pod's DNS name: processes on one
			// host, each on its own loopback address, all on this worker's port as pods are.
			headPort = port
		}
		if err := set("head", net.JoinHostPort(k.leaderHost(), headPort)); err != nil {
			return nil, err
		}
		if k.workerIndex >= 0 {
			// Unique in the group, and the same for a pod started again in its place.
			if err := set("id", fmt.Sprintf("worker-%d", k.workerIndex)); err != nil {
				return nil, err
			}
		}
		advertise := k.workerHost()
		if advertise != "" {
			advertise = net.JoinHostPort(advertise, port)
		} else if host, _, _ := net.SplitHostPort(f.Lookup("listen").Value.String()); k.local && (host == "" || net.ParseIP(host) == nil || net.ParseIP(host).IsUnspecified()) {
			advertise = net.JoinHostPort("127.0.0.1", port)
		}
		if advertise != "" {
			if err := set("advertise", advertise); err != nil {
				return nil, err
			}
		}
	}
	slog.Info("Kubeflow Trainer mode: serving the data cache", "role", role, "table", k.tableName(), "metadata_location", k.metadataLoc,
		"dataset", k.dataset(), "data_nodes", k.dataNodes(), "leader", k.leaderHost(), "local", k.local)
	return k, nil
}

// loginFlag names a flag that turns logins on and was given ("" when none was): without a real
// cluster secret, logins in Kubeflow mode would be worth nothing.
func loginFlag(f *pflag.FlagSet) string {
	for _, name := range []string{"users", "jwt-keys", "service-token-file"} {
		if fl := f.Lookup(name); fl != nil && fl.Value.String() != "" {
			return "--" + name
		}
	}
	if fl := f.Lookup("service-token"); fl != nil {
		if v, ok := fl.Value.(*secretValue); ok && v.given() {
			return "--service-token"
		}
	}
	return ""
}

// kubeflowHead is what a head in Kubeflow mode does besides serving: load the table as its
// dataset once the group's workers registered.
type kubeflowHead struct {
	env *kubeflowEnv
	// columns and filter narrow the dataset (--kubeflow-columns, --kubeflow-filter).
	columns []string
	filter  string
}

func (h *kubeflowHead) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&h.columns, "kubeflow-columns", nil, "Kubeflow mode: the feature columns of the dataset loaded from METADATA_LOC (default: all)")
	f.StringVar(&h.filter, "kubeflow-filter", "", "Kubeflow mode: a SQL condition the dataset's rows satisfy, pushed down to the scan (default: every row)")
}

// pathDataset is the dataset plain Flight PATH descriptors read: none outside Kubeflow mode.
func (h *kubeflowHead) pathDataset() string {
	if h == nil {
		return ""
	}
	return h.env.dataset()
}

// spec is the dataset the head loads.
func (h *kubeflowHead) spec() engine.DatasetSpec {
	return engine.DatasetSpec{Name: h.env.dataset(), Table: filesCatalog + "." + h.env.tableName(), Columns: h.columns, Filter: h.filter}
}

// readyCondition is the readiness condition of a process of the cache: the dataset is held.
func (k *kubeflowEnv) readyCondition() string { return "dataset " + k.dataset() + " loaded" }

// start requires the dataset for readiness and loads it in the background once the group's
// data nodes are alive (members), retrying a failed load until ctx ends.
func (h *kubeflowHead) start(ctx context.Context, eng *engine.Engine, members *cluster.Membership, ready *httpserve.Readiness) {
	cond := h.env.readyCondition()
	ready.Require(cond)
	safe.Spawn("Kubeflow dataset load", func() error {
		want := h.env.dataNodes()
		slog.Info("Kubeflow mode: waiting for the group's data nodes before loading the dataset", "data_nodes", want, "dataset", h.env.dataset())
		for len(aliveAddrs(members)) < want {
			if !sleepCtx(ctx, 200*time.Millisecond) {
				return nil
			}
		}
		wait := time.Second
		for {
			start := time.Now()
			info, err := eng.Load(ctx, h.spec(), nil)
			if err == nil {
				slog.Info("Kubeflow mode: dataset loaded", "dataset", info.Name, "rows", info.Rows, "bytes", info.Bytes,
					"partitions", info.Partitions, "nodes", strings.Join(info.Nodes, ","), "seconds", time.Since(start).Seconds())
				ready.Set(cond, true)
				return nil
			}
			if ctx.Err() != nil {
				return nil
			}
			slog.Error("Kubeflow mode: loading the dataset failed; trying again", "dataset", h.env.dataset(), "table", h.env.tableName(), "err", err, "retry_in", wait)
			if !sleepCtx(ctx, wait) {
				return nil
			}
			wait = min(2*wait, 30*time.Second)
		}
	}, nil)
}

// awaitDataset makes a worker ready only once its head holds the dataset: it requires the
// condition and asks the head (a PATH descriptor naming the dataset) until it answers. It
// presents a token the cluster secret signs for user id (a reader), which a head that
// requires logins accepts whatever its clients log in with.
func (k *kubeflowEnv) awaitDataset(ctx context.Context, head, id string, key *ticket.Keyring, sec security, ready *httpserve.Readiness) {
	cond := k.readyCondition()
	ready.Require(cond)
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if sec.cluster.TLS != nil {
		creds = credentials.NewTLS(sec.cluster.TLS)
	}
	safe.Spawn("Kubeflow dataset check", func() error {
		cl, err := flight.NewClientWithMiddleware(head, nil, nil, grpc.WithTransportCredentials(creds))
		if err != nil {
			return fmt.Errorf("head address %s: %w", head, err)
		}
		defer cl.Close()
		desc := &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{k.dataset()}}
		tokens := auth.NewTokens(key, time.Minute)
		for {
			token, _, err := tokens.Issue(auth.Principal{User: id, Role: auth.Reader}, time.Now())
			if err != nil {
				return err
			}
			callCtx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, auth.Header, auth.BearerValue(token)), 10*time.Second)
			_, err = cl.GetSchema(callCtx, desc)
			cancel()
			if err == nil {
				slog.Info("Kubeflow mode: the head holds the dataset", "dataset", k.dataset())
				ready.Set(cond, true)
				return nil
			}
			slog.Debug("Kubeflow mode: the head does not hold the dataset yet", "dataset", k.dataset(), "err", err)
			if !sleepCtx(ctx, 500*time.Millisecond) {
				return nil
			}
		}
	}, func(err error) {
		if err != nil {
			slog.Error("Kubeflow mode: checking the dataset on the head", "err", err)
		}
	})
}

// sleepCtx waits d or until ctx ends; false when ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
