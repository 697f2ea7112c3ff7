package neutron

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// EnsureRouterInterface attaches subnet to router. Already attached is
// success: Neutron answers 400 "already has a port on subnet".
func (c *Client) EnsureRouterInterface(ctx context.Context, router, subnet string) error {
	attached, err := c.routerHasSubnet(ctx, router, subnet)
	if err != nil || attached {
		return err
	}
	_, err = routers.AddInterface(ctx, c.sc, router, routers.AddInterfaceOpts{SubnetID: subnet}).Extract()
	if err != nil && strings.Contains(err.Error(), "already has a port") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("attach subnet %s to router %s: %w", subnet, router, err)
	}
	return nil
}

// RemoveRouterInterface detaches subnet from router; not attached, or
// router or subnet gone, is success.
func (c *Client) RemoveRouterInterface(ctx context.Context, router, subnet string) error {
	_, err := routers.RemoveInterface(ctx, c.sc, router, routers.RemoveInterfaceOpts{SubnetID: subnet}).Extract()
	if err == nil || IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("detach subnet %s from router %s: %w", subnet, router, err)
}

func (c *Client) routerHasSubnet(ctx context.Context, router, subnet string) (bool, error) {
	subnets, err := c.RouterSubnets(ctx, router)
	return slices.Contains(subnets, subnet), err
}

// RouterSubnets are the subnets a router has interfaces on (its gateway
// on the external network aside).
func (c *Client) RouterSubnets(ctx context.Context, router string) ([]string, error) {
	pages, err := ports.List(c.sc, ports.ListOpts{DeviceID: router}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ports of router %s: %w", router, err)
	}
	all, err := ports.ExtractPorts(pages)
	if err != nil {
		return nil, fmt.Errorf("decode ports: %w", err)
	}
	var out []string
	for _, p := range all {
		if p.DeviceOwner == "network:router_gateway" {
			continue
		}
		for _, ip := range p.FixedIPs {
			out = append(out, ip.SubnetID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// routerInterfaceOwners are the device owners of a router's interfaces:
// legacy, distributed and HA routers.
var routerInterfaceOwners = []string{"network:router_interface", "network:router_interface_distributed",
	"network:ha_router_replicated_interface"}

// RouterOf is the router with an interface on subnet ("" when none). It
// asks for the router interfaces only: the subnet's other ports (every
// pod's) would make it cost as much as a listing of the pods.
func (c *Client) RouterOf(ctx context.Context, subnet string) (string, error) {
	var body struct {
		Ports []struct {
			DeviceID string `json:"device_id"`
		} `json:"ports"`
	}
	q := url.Values{"fixed_ips": {"subnet_id=" + subnet}, "device_owner": routerInterfaceOwners, "fields": {"device_id"}}
	if _, err := c.sc.Get(ctx, c.sc.ServiceURL("ports")+"?"+q.Encode(), &body, nil); err != nil {
		return "", fmt.Errorf("list router interfaces on subnet %s: %w", subnet, err)
	}
	if len(body.Ports) == 0 {
		return "", nil
	}
	return body.Ports[0].DeviceID, nil
}

// RouterExists reports whether router exists (a read, for diagnostics).
func (c *Client) RouterExists(ctx context.Context, router string) (bool, error) {
	_, err := routers.Get(ctx, c.sc, router).Extract()
	if IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get router %s: %w", router, err)
	}
	return true, nil
}
