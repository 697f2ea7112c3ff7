package neutron

import (
	"context"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/batch"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// BatchingClient is a Client whose port creations go to Neutron in bulk: a
// burst of pods costs Neutron a few bulk requests, which its ML2 plugin
// serves in one transaction with one IPAM and MAC allocation each, instead
// of a request per pod. Neutron's bulk create is atomic: when it is refused
// (a full subnet, a quota, one bad request) nothing was created and each
// port is tried alone, so that every pod gets its own answer. An unanswered
// request may have been committed, so that error goes to every caller
// instead (the sweep removes what a retry duplicates).
type BatchingClient struct {
	*Client
	group *batch.Group[PortSpec, *Port]
}

// Batching returns c with CreatePort batched: at most inFlight requests at
// a time, each of at most maxBatch ports and of as many as Neutron is
// expected to create within budget at the pace it has shown (perPort until
// it has answered; releases and loads differ severalfold: 0.25 s per port
// for Neutron 21 on 2 idle cores, 1 s for Neutron 26 on 2 busy ones).
func (c *Client) Batching(inFlight, maxBatch int, budget, perPort time.Duration) *BatchingClient {
	bulk := func(ctx context.Context, specs []PortSpec) ([]*Port, error) {
		ps, err := c.CreatePorts(ctx, specs)
		out := make([]*Port, len(ps))
		for i := range ps {
			out[i] = &ps[i]
		}
		return out, err
	}
	g := batch.New(inFlight, maxBatch, bulk, c.CreatePort, openstack.Refused).Paced(budget, perPort)
	return &BatchingClient{Client: c, group: g}
}

// CreatePort creates a port, in a bulk request with whatever else is
// waiting. Like Client.CreatePort, a port created with an error after it
// (tagging) is returned together with the error.
func (b *BatchingClient) CreatePort(ctx context.Context, s PortSpec) (*Port, error) {
	return b.group.Do(ctx, s)
}
