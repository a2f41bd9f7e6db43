package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/cluster/ticket"
)

// secretFlags are the cluster secret flags of serve, head and worker: the secret that signs,
// and the previous one, still accepted while the secret rotates (docs/cluster.md).
type secretFlags struct {
	current, previous string
}

func (s *secretFlags) register(cmd *cobra.Command, usage string) {
	f := cmd.Flags()
	f.StringVar(&s.current, "cluster-secret", "", usage)
	f.StringVar(&s.previous, "cluster-secret-previous", "", "a second cluster secret, accepted when verifying tickets and calls but never signed with: the old secret while it rotates (prefer CACHEDB_CLUSTER_SECRET_PREVIOUS)")
}

// keyring returns the keys the flags give. Without a cluster secret, a head (randomWithout)
// draws a random key, which only its in-process data nodes share; a data node refuses to start.
func (s *secretFlags) keyring(randomWithout bool) (*ticket.Keyring, error) {
	switch {
	case s.current == "" && s.previous != "":
		return nil, fmt.Errorf("--cluster-secret-previous needs --cluster-secret (or CACHEDB_CLUSTER_SECRET): the previous secret is only accepted, the current one signs")
	case s.current == "" && randomWithout:
		return ticket.RandomKeyring(), nil
	case s.current == "":
		return nil, fmt.Errorf("a data node needs the head's --cluster-secret (or CACHEDB_CLUSTER_SECRET) to verify its tickets")
	}
	return ticket.NewKeyring([]byte(s.current), []byte(s.previous)), nil
}
