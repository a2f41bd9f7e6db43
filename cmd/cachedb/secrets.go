package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/cluster/ticket"
)

// secretFlags are the cluster secret flags of serve, head and worker: the secret that signs,
// and the previous one, still accepted while the secret rotates (docs/cluster.md).
type secretFlags struct {
	current, previous secretValue
}

func (s *secretFlags) register(cmd *cobra.Command, usage string) {
	f := cmd.Flags()
	registerSecret(f, &s.current, "cluster-secret", usage)
	registerSecret(f, &s.previous, "cluster-secret-previous", "a second cluster secret, accepted when verifying tickets and calls but never signed with: the old secret while it rotates")
}

// keyring returns the keys the flags give. Without a cluster secret, a head (randomWithout)
// draws a random key, which only its in-process data nodes share; a data node refuses to start.
func (s *secretFlags) keyring(randomWithout bool) (*ticket.Keyring, error) {
	current, err := s.current.get()
	if err != nil {
		return nil, err
	}
	previous, err := s.previous.get()
	if err != nil {
		return nil, err
	}
	switch {
	case current == "" && previous != "":
		return nil, fmt.Errorf("CACHEDB_CLUSTER_SECRET_PREVIOUS needs CACHEDB_CLUSTER_SECRET (or --cluster-secret-file): the previous secret is only accepted, the current one signs")
	case current == "" && randomWithout:
		return ticket.RandomKeyring(), nil
	case current == "":
		return nil, fmt.Errorf("a data node needs the head's cluster secret (CACHEDB_CLUSTER_SECRET or --cluster-secret-file) to verify its tickets")
	}
	return ticket.NewKeyring([]byte(current), []byte(previous)), nil
}
