package openstack

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestResourceOf(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/v2.0/ports", "ports"},
		{"/v2.0/ports.json", "ports"},
		{"/networking/v2.0/ports/3f0c9d2e-5b1a-4c7e-9f00-1a2b3c4d5e6f", "ports"},
		{"/v2.0/ports/3f0c9d2e-5b1a-4c7e-9f00-1a2b3c4d5e6f/tags/kuryr-x", "ports"},
		{"/v2.0/security-group-rules", "security-group-rules"},
		{"/v2.0/address-groups/0d2/add_addresses", "address-groups"},
		{"/v2/lbaas/loadbalancers/1e2f/status", "loadbalancers"},
		{"/load-balancer/v2/lbaas/pools/1e2f/members/9a8b", "members"},
		{"/v2/lbaas/pools", "pools"},
		{"/v2.0/lbaas/loadbalancers/1e2f/status", "loadbalancers"},
		{"/v2.0/lbaas/pools/1e2f/members/9a8b", "members"},
		{"/load-balancer/v2.0/lbaas/listeners", "listeners"},
		{"/v3/auth/tokens", "tokens"},
		{"/identity/v3/auth/tokens", "tokens"},
		{"/v2.0/3f0c9d2e5b1a", "other"},
		{"/v2.0", "other"},
		{"/", "other"},
		{"/v2/octavia/amphorae", "other"},
	} {
		if got := resourceOf(tc.path); got != tc.want {
			t.Errorf("resourceOf(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestServiceOf(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/v2.0/ports", ServiceNetwork},
		{"/v2.0/lbaas/loadbalancers", ServiceLoadBalancer},
		{"/v3/auth/tokens", ServiceIdentity},
		{"/identity/v3/users/u1/application_credentials", ServiceIdentity},
		{"/v3", ServiceIdentity},
	} {
		if got := serviceOf(tc.path); got != tc.want {
			t.Errorf("serviceOf(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestOperationOf(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/v2.0/ports", "port_create"},
		{"GET", "/v2.0/ports.json", "port_list"},
		{"GET", "/networking/v2.0/ports/3f0c9d2e-5b1a-4c7e-9f00-1a2b3c4d5e6f", "port_get"},
		{"PUT", "/v2.0/ports/3f0c9d2e", "port_update"},
		{"DELETE", "/v2.0/ports/3f0c9d2e", "port_delete"},
		{"PUT", "/v2.0/ports/3f0c9d2e/tags/kuryr-x", "port_tags_update"},
		{"POST", "/v2.0/security-group-rules", "security_group_rule_create"},
		{"DELETE", "/v2.0/security-group-rules/9a8b", "security_group_rule_delete"},
		{"PUT", "/v2.0/address-groups/0d2/add_addresses", "address_group_add_addresses"},
		{"PUT", "/v2.0/trunks/0d2/remove_subports", "trunk_remove_subports"},
		{"GET", "/v2.0/trunks/0d2/get_subports", "trunk_get_subports"},
		{"GET", "/v2/lbaas/loadbalancers/1e2f/status", "loadbalancer_status_get"},
		{"POST", "/load-balancer/v2/lbaas/pools/1e2f/members", "member_create"},
		{"PUT", "/v2/lbaas/pools/1e2f/members", "member_update"},
		{"DELETE", "/v2.0/lbaas/pools/1e2f/members/9a8b", "member_delete"},
		{"GET", "/v2.0/network-ip-availabilities", "network_ip_availability_list"},
		{"POST", "/v3/auth/tokens", "token_create"},
		{"POST", "/v2.0/floatingips", "floating_ip_create"},
		{"GET", "/v2.0/3f0c9d2e5b1a", "other"},
		{"GET", "/v2/octavia/amphorae", "other"},
	} {
		if got := operationOf(tc.method, tc.path); got != tc.want {
			t.Errorf("operationOf(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestObserveOperationErrors(t *testing.T) {
	req := func(ctx context.Context) *http.Request {
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://neutron/v2.0/trunks", nil)
		return r
	}
	errorsOf := func() float64 { return testutil.ToFloat64(requestErrors.WithLabelValues("trunk_create")) }
	before := errorsOf()
	observeOperation(req(context.Background()), &http.Response{StatusCode: 409}, nil, 0.1)
	observeOperation(req(context.Background()), nil, errors.New("connection reset"), 0.1)
	if got := errorsOf() - before; got != 2 {
		t.Errorf("a 409 and no answer: %v errors, want 2", got)
	}
	observeOperation(req(context.Background()), &http.Response{StatusCode: 401}, nil, 0.1) // gophercloud reauthenticates
	observeOperation(req(context.Background()), &http.Response{StatusCode: 201}, nil, 0.1)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	observeOperation(req(cancelled), nil, context.Canceled, 0.1)
	if got := errorsOf() - before; got != 2 {
		t.Errorf("a 401, a 201 and a cancelled request counted as errors: %v, want 2", got)
	}
}
