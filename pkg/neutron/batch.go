package neutron

import (
	"context"
	"sync"
)

// bulkCreator is the Neutron seam of the Batcher.
type bulkCreator interface {
	CreatePorts(ctx context.Context, specs []PortSpec) ([]Port, error)
	CreatePort(ctx context.Context, s PortSpec) (*Port, error)
}

// Batcher creates ports one caller at a time, but sends them to Neutron in
// bulk: the ports asked for while earlier requests are in flight go
// together in the next one (group commit). A quiet cluster sees one port
// per request and no added latency; a burst of pods costs Neutron a few
// bulk requests, which its ML2 plugin serves in one transaction with one
// IPAM and MAC allocation each, instead of one request per pod.
type Batcher struct {
	api      bulkCreator
	inFlight int // bound on concurrent requests to Neutron
	maxBatch int

	mu      sync.Mutex
	queue   []*createCall
	sending int
}

type createCall struct {
	ctx  context.Context
	spec PortSpec
	done chan struct{}
	port *Port
	err  error
}

// NewBatcher sends at most inFlight requests at a time, each of at most
// maxBatch ports.
func NewBatcher(api bulkCreator, inFlight, maxBatch int) *Batcher {
	return &Batcher{api: api, inFlight: max(inFlight, 1), maxBatch: max(maxBatch, 1)}
}

// CreatePort creates a port, in a bulk request with whatever else is
// waiting. Like Client.CreatePort, a port created with an error after it
// (tagging) is returned together with the error.
func (b *Batcher) CreatePort(ctx context.Context, s PortSpec) (*Port, error) {
	c := &createCall{ctx: ctx, spec: s, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	b.pump()
	// Not abandoned on ctx: once sent, the port exists and only its caller
	// can record it; each request is bounded by the client's timeout.
	<-c.done
	return c.port, c.err
}

// pump starts requests while there is work and a free slot.
func (b *Batcher) pump() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 || b.sending >= b.inFlight {
			b.mu.Unlock()
			return
		}
		// Share what is waiting among the free slots: Neutron serves each
		// request in one API worker, so parallel requests use its cores
		// (two requests of 25 ports finish in 0.7 x the time of one of 50).
		// Only free slots: waiting for a busy one would leave a port
		// queued behind a request that may take seconds.
		free := b.inFlight - b.sending
		n := min((len(b.queue)+free-1)/free, b.maxBatch)
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.sending++
		b.mu.Unlock()
		go b.send(batch)
	}
}

func (b *Batcher) send(batch []*createCall) {
	defer func() {
		b.mu.Lock()
		b.sending--
		b.mu.Unlock()
		b.pump()
	}()
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.finish(nil, err) // its caller is gone: never create it
			continue
		}
		live = append(live, c)
	}
	switch {
	case len(live) == 1:
		live[0].finish(b.api.CreatePort(live[0].ctx, live[0].spec))
	case len(live) > 1:
		b.sendBulk(live)
	}
}

// sendBulk creates the ports of live in one request. Neutron's bulk create
// is atomic: when it is refused (a full subnet, a quota, one bad request)
// nothing was created, and each port is tried alone so that every pod gets
// its own answer. An unanswered request may have been committed, so that
// error goes to every caller instead (the sweep removes what a retry
// duplicates).
func (b *Batcher) sendBulk(live []*createCall) {
	specs := make([]PortSpec, len(live))
	for i, c := range live {
		specs[i] = c.spec
	}
	ports, err := b.api.CreatePorts(live[0].ctx, specs)
	if err != nil && len(ports) == 0 && Refused(err) {
		var wg sync.WaitGroup
		for _, c := range live {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.finish(b.api.CreatePort(c.ctx, c.spec))
			}()
		}
		wg.Wait()
		return
	}
	for i, c := range live {
		var p *Port
		if i < len(ports) {
			p = &ports[i]
		}
		if p == nil && err == nil {
			c.finish(nil, errShortBulk)
			continue
		}
		c.finish(p, err)
	}
}

func (c *createCall) finish(p *Port, err error) {
	c.port, c.err = p, err
	close(c.done)
}
