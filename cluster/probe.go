package cluster

import (
	"context"
	"errors"
	"net"
	"syscall"
)

// DialProbe opens a TCP connection to addr and closes it. Only a refused connection (no process
// listens on the port; the host answered) is ProbeRefused: a timeout, an unreachable network or
// a name that does not resolve are ProbeUnknown, because a busy or partitioned node looks the
// same way and must not lose its data for it.
func DialProbe(ctx context.Context, addr string) ProbeResult {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		_ = conn.Close()
		return ProbeReachable
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return ProbeRefused
	}
	return ProbeUnknown
}
