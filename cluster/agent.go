package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/rpcerr"
)

// Defaults for AgentConfig fields left zero.
const (
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 2 * time.Second
)

// AgentConfig configures an Agent.
type AgentConfig struct {
	// ID is the node's ID, unique in the cluster.
	ID string
	// Addr is the node's Flight address as the head and other nodes reach it.
	Addr string
	// Head is the HOST:PORT of the head's Flight SQL server.
	Head string
	// Key is the cluster secret the agent signs its actions with (its current key; nil:
	// unsigned).
	Key *ticket.Keyring
	// Transport reaches the head (zero: plaintext).
	Transport Transport
	// BootID names this process of the node (default: NewBootID()). Give the same one to
	// NodeConfig, so node-info reports what the head was told.
	BootID string
	// MinBackoff and MaxBackoff bound the wait between failed registrations (defaults 100 ms
	// and 2 s); the wait doubles after each failure.
	MinBackoff, MaxBackoff time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// OnRegistered, when set, is told each change of whether the head holds this node as
	// registered: true once a registration is accepted, false when the head no longer knows
	// the node (it registers again) and when Run returns. A data node is ready (/ready) only
	// while registered.
	OnRegistered func(registered bool)
}

// Agent keeps a data node registered with the head.
type Agent struct {
	cfg AgentConfig
}

// NewAgent returns an agent; nothing happens until Run.
func NewAgent(cfg AgentConfig) *Agent {
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BootID == "" {
		cfg.BootID = NewBootID()
	}
	return &Agent{cfg: cfg}
}

// BootID is the boot ID the agent registers with.
func (a *Agent) BootID() string { return a.cfg.BootID }

// NewBootID draws a random boot ID: 16 random bytes in hex.
func NewBootID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Run registers with the head, retrying with exponential backoff while the head is unreachable
// or refuses, then heartbeats at the interval the head asked for. When a heartbeat is answered
// NotFound (the head restarted, or marked this node lost) it registers again at once, with the
// same boot ID: a head that only marked it lost uses again those of its partitions it has not
// rebuilt elsewhere yet; a head that restarted knows no partitions of it anyway. Run
// returns nil when ctx ends, and an error only when the head's address cannot be used at all.
func (a *Agent) Run(ctx context.Context) error {
	client, err := flight.NewClientWithMiddleware(a.cfg.Head, nil, nil,
		grpc.WithTransportCredentials(a.cfg.Transport.credentials()),
		grpc.WithConnectParams(connectParams))
	if err != nil {
		return fmt.Errorf("data node %s: head address %s: %w", a.cfg.ID, a.cfg.Head, err)
	}
	defer client.Close()

	log := a.cfg.Logger.With("node", a.cfg.ID, "head", a.cfg.Head)
	registered := false
	defer func() {
		if registered && a.cfg.OnRegistered != nil {
			a.cfg.OnRegistered(false)
		}
	}()
	interval := DefaultHeartbeatInterval
	wait := time.Duration(0)
	retry := a.cfg.MinBackoff
	failing := false // a failure was logged; log the recovery too
	for {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return nil
		}
		if !registered {
			var resp RegisterResponse
			err := a.call(ctx, client, ActionRegister, RegisterRequest{ID: a.cfg.ID, Addr: a.cfg.Addr, BootID: a.cfg.BootID}, &resp, interval)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				if !failing {
					log.Warn("cannot register with the head; retrying", "err", err)
					failing = true
				}
				wait, retry = retry, min(2*retry, a.cfg.MaxBackoff)
				continue
			}
			if resp.HeartbeatIntervalMS > 0 {
				interval = time.Duration(resp.HeartbeatIntervalMS) * time.Millisecond
			}
			log.Info("registered with the head", "addr", a.cfg.Addr, "boot_id", a.cfg.BootID, "heartbeat_interval", interval)
			registered, failing, retry, wait = true, false, a.cfg.MinBackoff, interval
			if a.cfg.OnRegistered != nil {
				a.cfg.OnRegistered(true)
			}
			continue
		}
		err := a.call(ctx, client, ActionHeartbeat, HeartbeatRequest{ID: a.cfg.ID}, &HeartbeatResponse{}, interval)
		switch {
		case ctx.Err() != nil:
			return nil
		case errs.CategoryOf(err) == errs.NotFound:
			log.Info("the head does not know this node; registering again", "reason", err)
			registered, wait = false, 0
			if a.cfg.OnRegistered != nil {
				a.cfg.OnRegistered(false)
			}
		case err != nil:
			if !failing {
				log.Warn("heartbeat failed; retrying", "err", err)
				failing = true
			}
			wait = interval
		default:
			if failing {
				log.Info("heartbeats reach the head again")
				failing = false
			}
			wait = interval
		}
	}
}

// minCallTimeout is the least time a membership call may take. On a machine whose cores are
// saturated a call can take seconds; cutting it off sooner only turns a late heartbeat into a
// missing one.
const minCallTimeout = 5 * time.Second

// call runs one membership action with a deadline of one heartbeat interval (at least
// minCallTimeout) and decodes its single JSON result into resp.
func (a *Agent) call(ctx context.Context, client flight.Client, actionType string, req, resp any, interval time.Duration) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, max(interval, minCallTimeout))
	defer cancel()
	ctx = signAction(ctx, a.cfg.Key, &flight.Action{Type: actionType, Body: body})
	out, err := DoAction(ctx, client, actionType, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, resp); err != nil {
		return fmt.Errorf("%s: the head answered with malformed JSON: %w", actionType, err)
	}
	return nil
}

// DoAction runs one Flight action and returns the body of its single result. A failure the
// server answered is read with rpcerr.FromStatus: it has the category it had there.
func DoAction(ctx context.Context, client flight.Client, actionType string, body []byte) ([]byte, error) {
	stream, err := client.DoAction(ctx, &flight.Action{Type: actionType, Body: body})
	if err != nil {
		return nil, rpcerr.FromStatus(err)
	}
	var out []byte
	got := false
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, rpcerr.FromStatus(err)
		}
		if !got {
			out, got = r.Body, true
		}
	}
	if !got {
		return nil, fmt.Errorf("%s: the server sent no result", actionType)
	}
	return out, nil
}
