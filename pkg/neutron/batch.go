package neutron

import (
	"context"

	"github.com/kuryr-k8s/kuryr/pkg/batch"
)

// bulkCreator is the Neutron seam of the Batcher.
type bulkCreator interface {
	CreatePorts(ctx context.Context, specs []PortSpec) ([]Port, error)
	CreatePort(ctx context.Context, s PortSpec) (*Port, error)
}

// Batcher creates ports one caller at a time, but sends them to Neutron in
// bulk: a burst of pods costs Neutron a few bulk requests, which its ML2
// plugin serves in one transaction with one IPAM and MAC allocation each,
// instead of a request per pod. Neutron's bulk create is atomic: when it
// is refused (a full subnet, a quota, one bad request) nothing was created
// and each port is tried alone, so that every pod gets its own answer. An
// unanswered request may have been committed, so that error goes to every
// caller instead (the sweep removes what a retry duplicates).
type Batcher struct {
	g *batch.Group[PortSpec, *Port]
}

// NewBatcher sends at most inFlight requests at a time, each of at most
// maxBatch ports.
func NewBatcher(api bulkCreator, inFlight, maxBatch int) *Batcher {
	bulk := func(ctx context.Context, specs []PortSpec) ([]*Port, error) {
		ps, err := api.CreatePorts(ctx, specs)
		out := make([]*Port, len(ps))
		for i := range ps {
			out[i] = &ps[i]
		}
		return out, err
	}
	return &Batcher{g: batch.New(inFlight, maxBatch, bulk, api.CreatePort, Refused)}
}

// CreatePort creates a port, in a bulk request with whatever else is
// waiting. Like Client.CreatePort, a port created with an error after it
// (tagging) is returned together with the error.
func (b *Batcher) CreatePort(ctx context.Context, s PortSpec) (*Port, error) {
	return b.g.Do(ctx, s)
}
