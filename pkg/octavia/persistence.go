package octavia

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// Session persistence: kuryr asks for SOURCE_IP with a timeout (a Service's
// ClientIP affinity). gophercloud's types have no persistence_timeout, so
// the request bodies are completed here.
const persistenceSourceIP = "SOURCE_IP"

// persistence is a pool's session_persistence body; nil without affinity.
func persistence(timeout int32) map[string]any {
	if timeout <= 0 {
		return nil
	}
	return map[string]any{"type": persistenceSourceIP, "persistence_timeout": timeout}
}

// poolCreate is a pool POST with kuryr's session persistence.
type poolCreate struct {
	opts    pools.CreateOpts
	timeout int32
}

func (p poolCreate) ToPoolCreateMap() (map[string]any, error) {
	m, err := p.opts.ToPoolCreateMap()
	if err != nil {
		return nil, err
	}
	if sp := persistence(p.timeout); sp != nil {
		m["pool"].(map[string]any)["session_persistence"] = sp
	}
	return m, nil
}

// lbCreate is a fully populated load balancer POST whose listeners'
// default pools carry kuryr's session persistence.
type lbCreate struct {
	opts    loadbalancers.CreateOpts
	timeout []int32 // per listener, in opts' order
}

func (c lbCreate) ToLoadBalancerCreateMap() (map[string]any, error) {
	m, err := c.opts.ToLoadBalancerCreateMap()
	if err != nil {
		return nil, err
	}
	ls, _ := m["loadbalancer"].(map[string]any)["listeners"].([]map[string]any)
	for i, l := range ls {
		if dp, ok := l["default_pool"].(map[string]any); ok && i < len(c.timeout) {
			if sp := persistence(c.timeout[i]); sp != nil {
				dp["session_persistence"] = sp
			}
		}
	}
	return m, nil
}

// persistenceUpdate is a pool PUT of its session persistence. It names
// admin_state_up too (kuryr's pools are always up): Octavia passes the
// provider only the fields a PUT names, and ovn-octavia-provider 8.0.0's
// pool update, having applied the affinity, reads admin_state_up from them
// and, without it, fails and leaves the pool in ERROR.
type persistenceUpdate struct{ timeout int32 }

func (u persistenceUpdate) ToPoolUpdateMap() (map[string]any, error) {
	return map[string]any{"pool": map[string]any{"session_persistence": persistence(u.timeout), "admin_state_up": true}}, nil
}

// SetAffinity gives a pool SOURCE_IP session persistence with timeout
// seconds. Removing it is left to replacing the pool: the ovn provider
// clears its OVN affinity when a pool is deleted, not when its persistence
// is unset.
func (c *Client) SetAffinity(ctx context.Context, poolID string, timeout int32) error {
	if timeout <= 0 {
		return fmt.Errorf("set session persistence on pool %s: timeout %d s: removing it is replacing the pool", poolID, timeout)
	}
	if _, err := pools.Update(ctx, c.sc, poolID, persistenceUpdate{timeout}).Extract(); err != nil {
		return fmt.Errorf("set session persistence SOURCE_IP (%d s) on pool %s: %w", timeout, poolID, err)
	}
	return nil
}

// poolPersistence reads what gophercloud's Pool leaves out: the timeout.
type poolPersistence struct {
	ID          string `json:"id"`
	Persistence *struct {
		Type    string `json:"type"`
		Timeout int32  `json:"persistence_timeout"`
	} `json:"session_persistence"`
}

// affinities maps pool ids to their SOURCE_IP persistence timeout (pools
// with another persistence type or none are left out).
func affinities(page pagination.Page) (map[string]int32, error) {
	var s struct {
		Pools []poolPersistence `json:"pools"`
	}
	if err := page.(pools.PoolPage).ExtractInto(&s); err != nil {
		return nil, err
	}
	out := map[string]int32{}
	for _, p := range s.Pools {
		if p.Persistence != nil && p.Persistence.Type == persistenceSourceIP {
			out[p.ID] = max(p.Persistence.Timeout, 1)
		}
	}
	return out, nil
}

// AffinityProbe is what a provider showed of session persistence.
type AffinityProbe struct {
	// Enforced: the provider checks the persistence types it is given and
	// names SOURCE_IP as one it implements.
	Enforced bool
	// Why, in a user's words.
	Why string
	// PoolID is a pool the probe left behind (the provider took it): delete
	// it.
	PoolID string
}

// ProbeAffinity asks the provider of an ACTIVE load balancer what it does
// with session persistence, by creating a pool with HTTP_COOKIE
// persistence, a type no L4 provider implements: a provider that
// implements SOURCE_IP checks the type and refuses it (501, naming
// SOURCE_IP: ovn-octavia-provider from 5.0); one that takes it ignores
// persistence altogether (ovn-octavia-provider before 5.0, which accepts
// SOURCE_IP as well and leaves its OVN load balancer without affinity).
// Octavia's API takes HTTP_COOKIE on a TCP pool. A refused probe changes
// nothing; a taken one leaves a pool without a listener (PoolID).
//
// ovn-octavia-provider 8.0.0 fails while it refuses (Octavia answers 500
// "Provider 'ovn' reports error: ..."): a provider that raises the same
// error on HTTP_COOKIE twice is asked for a SOURCE_IP pool, and one that
// takes it while refusing HTTP_COOKIE tells the types apart, so it
// implements SOURCE_IP (the second pool is left behind as PoolID).
func (c *Client) ProbeAffinity(ctx context.Context, lbID, algorithm string, tags []string) (AffinityProbe, error) {
	p, err := c.probePool(ctx, lbID, algorithm, tags, "HTTP_COOKIE")
	if err == nil {
		return ignored(p), nil
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) {
		return AffinityProbe{}, fmt.Errorf("probe session persistence on load balancer %s: %w", lbID, err)
	}
	msg := faultString(ue.Body)
	switch {
	case ue.Actual == http.StatusNotImplemented && strings.Contains(msg, persistenceSourceIP):
		return AffinityProbe{Enforced: true, Why: "the provider implements SOURCE_IP session persistence (" + msg + ")"}, nil
	case ue.Actual == http.StatusNotImplemented:
		return AffinityProbe{Why: "the provider refuses session persistence (" + msg + ")"}, nil
	case ue.Actual == http.StatusInternalServerError && strings.HasPrefix(msg, "Provider '"):
		return c.probeAfterProviderError(ctx, lbID, algorithm, tags, msg)
	}
	return AffinityProbe{}, fmt.Errorf("probe session persistence on load balancer %s: %w", lbID, err)
}

// ignored is a probe whose HTTP_COOKIE pool the provider took.
func ignored(poolID string) AffinityProbe {
	return AffinityProbe{PoolID: poolID, Why: "the provider takes any session persistence type without checking it " +
		"(ovn-octavia-provider before 5.0 ignores them all)"}
}

// probeAfterProviderError follows a provider error msg on HTTP_COOKIE:
// once more (an error that is not the provider's refusal passes), then
// SOURCE_IP.
func (c *Client) probeAfterProviderError(ctx context.Context, lbID, algorithm string, tags []string, msg string) (AffinityProbe, error) {
	p, err := c.probePool(ctx, lbID, algorithm, tags, "HTTP_COOKIE")
	if err == nil {
		return ignored(p), nil
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) || ue.Actual != http.StatusInternalServerError || faultString(ue.Body) != msg {
		return AffinityProbe{}, fmt.Errorf("probe session persistence on load balancer %s: %w", lbID, err)
	}
	if p, err = c.probePool(ctx, lbID, algorithm, tags, persistenceSourceIP); err != nil {
		return AffinityProbe{}, fmt.Errorf("probe SOURCE_IP session persistence on load balancer %s "+
			"(HTTP_COOKIE was refused: %s): %w", lbID, msg, err)
	}
	return AffinityProbe{Enforced: true, PoolID: p, Why: "the provider refuses HTTP_COOKIE session persistence (" +
		msg + ") and takes SOURCE_IP"}, nil
}

// probePool creates the probe pool with a persistence type and returns its
// id.
func (c *Client) probePool(ctx context.Context, lbID, algorithm string, tags []string, persistence string) (string, error) {
	o := pools.CreateOpts{LoadbalancerID: lbID, Name: names.AffinityProbePool, Protocol: pools.ProtocolTCP,
		LBMethod: pools.LBMethod(algorithm), Tags: tags, Persistence: &pools.SessionPersistence{Type: persistence}}
	p, err := pools.Create(ctx, c.sc, o).Extract()
	if err != nil {
		return "", err
	}
	return p.ID, nil
}

// faultString is Octavia's error message (its faultstring), or the body.
func faultString(body []byte) string {
	var f struct {
		Faultstring string `json:"faultstring"`
	}
	if json.Unmarshal(body, &f) != nil || f.Faultstring == "" {
		return strings.TrimSpace(string(body))
	}
	return f.Faultstring
}
