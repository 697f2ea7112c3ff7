// Package openstack builds the gophercloud service clients kuryr talks to
// Neutron and Octavia with (from kuryr.conf or clouds.yaml, renewing
// tokens), explains in operator words why connecting failed (Explain), and
// classifies what both services answer at the transport level: refused,
// unclear (maybe done), unreachable, and the creates that went unanswered
// (Unanswered).
package openstack

import (
	"fmt"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
)

// Clients are the service clients for the OpenStack services kuryr uses.
type Clients struct {
	Network      *gophercloud.ServiceClient
	LoadBalancer *gophercloud.ServiceClient
	// Warnings are what an operator should know about how the clients
	// were built (TLS verification off, an Octavia endpoint not usable).
	Warnings []string
	// Identity says how kuryr authenticated and what verifies TLS, for
	// logs and `kubectl kuryr doctor`.
	Identity string
}

// Endpoints are fixed service URLs without a version path, e.g.
// "http://127.0.0.1:9696". They are what a cloud without Keystone (noauth)
// offers instead of a service catalog.
type Endpoints struct {
	Network      string
	LoadBalancer string
}

// NewNoAuthClients returns clients for services running with
// auth_strategy=noauth. Each request is bounded by timeout so that a hung
// service never blocks a caller forever.
func NewNoAuthClients(ep Endpoints, timeout time.Duration) (*Clients, error) {
	if ep.Network == "" {
		return nil, fmt.Errorf("noauth: the network (Neutron) endpoint is required")
	}
	pc := &gophercloud.ProviderClient{HTTPClient: httpClient(timeout, nil)}
	// The locator stands in for a service catalog: the gophercloud
	// constructors below still add the right version paths.
	pc.EndpointLocator = func(eo gophercloud.EndpointOpts) (string, error) {
		switch eo.Type {
		case "network":
			return withSlash(ep.Network), nil
		case "load-balancer":
			if ep.LoadBalancer == "" {
				return "", fmt.Errorf("noauth: no load-balancer (Octavia) endpoint configured")
			}
			return withSlash(ep.LoadBalancer), nil
		}
		return "", fmt.Errorf("noauth: no endpoint for service type %q", eo.Type)
	}
	c := &Clients{Identity: "none (noauth): Neutron at " + ep.Network}
	var err error
	if c.Network, err = gopenstack.NewNetworkV2(pc, gophercloud.EndpointOpts{}); err != nil {
		return nil, fmt.Errorf("network client: %w", err)
	}
	if ep.LoadBalancer != "" {
		if c.LoadBalancer, err = gopenstack.NewLoadBalancerV2(pc, gophercloud.EndpointOpts{}); err != nil {
			return nil, fmt.Errorf("load-balancer client: %w", err)
		}
	}
	return c, nil
}

func withSlash(u string) string {
	if strings.HasSuffix(u, "/") {
		return u
	}
	return u + "/"
}
