package svcports

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// NFTables programs the table inet kuryr-node-ports with netlink, in the
// network namespace it is given (the node's).
type NFTables struct {
	// NetNS is a file descriptor of the network namespace to program; 0:
	// the calling thread's (the daemon runs in the node's). Tests program
	// throwaway namespaces of their own.
	NetNS int
}

func table() *nftables.Table {
	return &nftables.Table{Name: names.NodePortsTable, Family: nftables.TableFamilyINet}
}

// Replace makes the table hold exactly rs, in one netlink transaction:
// the table is added (so that deleting it cannot fail on a missing one),
// deleted with everything in it, and built anew. The kernel commits the
// batch as a whole or not at all, so packets never see a half-written
// table, and re-applying replaces rather than appends.
func (n NFTables) Replace(rs Ruleset) error {
	c, err := nftables.New(nftables.WithNetNSFd(n.NetNS))
	if err != nil {
		return fmt.Errorf("nftables connection: %w", err)
	}
	t := table()
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	p := build(t, rs)
	for _, ch := range p.chains {
		c.AddChain(ch)
	}
	for _, r := range p.rules {
		c.AddRule(r)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("replace table inet %s (%d chains, %d rules): %w", names.NodePortsTable, len(p.chains), len(p.rules), err)
	}
	return nil
}

// Delete removes the table, if it is there ([kubernetes] serve_node_ports
// = false, or kuryr serving no Services).
func (n NFTables) Delete() error {
	c, err := nftables.New(nftables.WithNetNSFd(n.NetNS))
	if err != nil {
		return fmt.Errorf("nftables connection: %w", err)
	}
	t := table()
	c.AddTable(t)
	c.DelTable(t)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete table inet %s: %w", names.NodePortsTable, err)
	}
	return nil
}
