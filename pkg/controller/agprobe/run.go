package agprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// neutronAPI is the Neutron seam of the probe.
type neutronAPI interface {
	CreatePort(ctx context.Context, s neutron.PortSpec) (*neutron.Port, error)
	GetPort(ctx context.Context, id string) (*neutron.Port, error)
	ListPorts(ctx context.Context, tags []string, status string) ([]neutron.Port, error)
	DeletePort(ctx context.Context, id string) error
	FindSecurityGroups(ctx context.Context, tags []string) ([]neutron.SecurityGroup, error)
	CreateSecurityGroup(ctx context.Context, name, description, project string, tags []string) (*neutron.SecurityGroup, error)
	DeleteSecurityGroup(ctx context.Context, id string) error
	CreateRule(ctx context.Context, sg, project string, r neutron.Rule) error
	AddressGroupsNamed(ctx context.Context, name string) ([]neutron.AddressGroup, error)
	CreateAddressGroup(ctx context.Context, name, description, project string, addresses []string) (*neutron.AddressGroup, error)
	RemoveAddresses(ctx context.Context, id string, addresses []string) (*neutron.AddressGroup, error)
	DeleteAddressGroup(ctx context.Context, id string) error
}

// subnetInfo serves the probe subnet's and its network's details.
type subnetInfo interface {
	Subnet(ctx context.Context, id string) (*neutron.Subnet, error)
	Network(ctx context.Context, id string) (*neutron.Network, error)
}

// DeviceOwner marks the probe's port.
const DeviceOwner = "compute:kuryr-address-group-probe"

// Timing bounds the probe's steps.
type Timing struct {
	Active time.Duration // the port bound and plugged
	Reach  time.Duration // the first reset, the group holding everyone
	Block  time.Duration // dropped connections, the group empty
}

// DefaultTiming is the probe's timing on a real cloud.
var DefaultTiming = Timing{Active: 90 * time.Second, Reach: 30 * time.Second, Block: 20 * time.Second}

const (
	dialTimeout = time.Second
	blockedRuns = 3 // consecutive timeouts that make the answer Enforced
	attempt     = 500 * time.Millisecond
)

func (p *Prober) timing() Timing {
	if p.Timing == (Timing{}) {
		return DefaultTiming
	}
	return p.Timing
}

// probe makes the probe's objects, asks the dataplane and deletes them.
func (p *Prober) probe(ctx context.Context) (kuryrv1.AddressGroupVerdict, string) {
	p.cleanup(ctx)
	defer p.cleanup(context.WithoutCancel(ctx))
	sub, err := p.Info.Subnet(ctx, p.Settings.Subnet)
	if err != nil {
		return Unknown, fmt.Sprintf("probe subnet %s: %v", p.Settings.Subnet, err)
	}
	everyone := "0.0.0.0/0"
	if pfx, err := netip.ParsePrefix(sub.CIDR); err == nil && pfx.Addr().Is6() {
		everyone = "::/0"
	}
	port, ag, err := p.makeObjects(ctx, sub, everyone)
	if err != nil {
		return Unknown, err.Error()
	}
	addr, err := p.plug(ctx, port, sub)
	if err != nil {
		return Unknown, err.Error()
	}
	if !p.reaches(ctx, addr) {
		return Unknown, fmt.Sprintf("the probe port %s (%s) on node %s was never reached in %s while its rule admitted "+
			"everyone: is kuryr-daemon running there, and does the node reach the pod subnet?", port.ID, addr, p.Settings.Node, p.timing().Reach)
	}
	if _, err := p.Neutron.RemoveAddresses(ctx, ag, []string{everyone}); err != nil {
		return Unknown, fmt.Sprintf("emptying the probe's address group: %v", err)
	}
	switch blocked, err := p.blocked(ctx, addr); {
	case err != nil:
		return Unknown, fmt.Sprintf("connecting to %s once the rule's address group held no address: %v (neither a reset "+
			"nor a timeout)", addr, err)
	case blocked:
		return Enforced, fmt.Sprintf("connections to %s were dropped once the rule's address group held no address", addr)
	}
	return NotEnforced, fmt.Sprintf("connections to %s were let through for %s by a rule whose address group held no address "+
		"(ML2/OVN enforces remote address groups from Neutron 26.0.0, 24.2.0 and 25.2.0)", addr, p.timing().Block)
}

// makeObjects: the address group holding everyone, the security group
// admitting the probe's TCP port from it, and the port with that group,
// bound to the node.
func (p *Prober) makeObjects(ctx context.Context, sub *neutron.Subnet, everyone string) (*neutron.Port, string, error) {
	s := p.Settings
	desc := names.AddressGroupProbeDescription(s.Cluster)
	ag, err := p.Neutron.CreateAddressGroup(ctx, names.AddressGroupProbeName, desc, s.ProjectID, []string{everyone})
	if err != nil {
		return nil, "", fmt.Errorf("creating the probe's address group: %w", err)
	}
	sg, err := p.Neutron.CreateSecurityGroup(ctx, names.AddressGroupProbeName, desc, s.ProjectID, p.tags())
	if err != nil {
		return nil, "", fmt.Errorf("creating the probe's security group: %w", err)
	}
	eth := "IPv4"
	if everyone == "::/0" {
		eth = "IPv6"
	}
	rule := neutron.Rule{Direction: "ingress", EtherType: eth, Protocol: "tcp", PortMin: s.Port, PortMax: s.Port, RemoteAddressGroup: ag.ID}
	if err := p.Neutron.CreateRule(ctx, sg.ID, s.ProjectID, rule); err != nil {
		return nil, "", fmt.Errorf("creating the probe's rule: %w", err)
	}
	port, err := p.Neutron.CreatePort(ctx, neutron.PortSpec{Name: names.AddressGroupProbeName, NetworkID: sub.NetworkID,
		SubnetID: sub.ID, ProjectID: s.ProjectID, HostID: s.Node, DeviceID: names.AddressGroupProbeName,
		DeviceOwner: DeviceOwner, SecurityGroups: []string{sg.ID}, Tags: p.tags()})
	if err != nil {
		return nil, "", fmt.Errorf("creating the probe's port: %w", err)
	}
	return port, ag.ID, nil
}

func (p *Prober) tags() []string {
	return append([]string{names.ClusterTag(p.Settings.Cluster), names.AddressGroupProbeTag}, p.Settings.Tags...)
}

// plug asks the node's daemon to plug the port and waits until Neutron
// shows it ACTIVE; it returns the address to connect to.
func (p *Prober) plug(ctx context.Context, port *neutron.Port, sub *neutron.Subnet) (string, error) {
	var ip string
	for _, f := range port.FixedIPs {
		if f.SubnetID == sub.ID {
			ip = f.IPAddress
		}
	}
	pfx, err := netip.ParsePrefix(sub.CIDR)
	if ip == "" || err != nil || sub.GatewayIP == "" {
		return "", fmt.Errorf("the probe port %s has no address on subnet %s (%s), or the subnet no gateway", port.ID, sub.ID, sub.CIDR)
	}
	n, err := p.Info.Network(ctx, sub.NetworkID)
	if err != nil {
		return "", fmt.Errorf("the probe subnet's network: %w", err)
	}
	everywhere := "0.0.0.0/0"
	if pfx.Addr().Is6() {
		everywhere = "::/0"
	}
	np := kuryrv1.NodePort{PortID: port.ID, MACAddress: port.MACAddress, MTU: n.MTU,
		IPs:    []string{fmt.Sprintf("%s/%d", ip, pfx.Bits())},
		Routes: []kuryrv1.Route{{Destination: everywhere, Gateway: sub.GatewayIP}}}
	raw, _ := json.Marshal(np)
	if err := p.annotate(ctx, kuryrv1.ProbePortAnnotation, string(raw)); err != nil {
		return "", fmt.Errorf("asking node %s to plug the probe port: %w", p.Settings.Node, err)
	}
	deadline := time.Now().Add(p.timing().Active)
	for {
		got, err := p.Neutron.GetPort(ctx, port.ID)
		if err == nil && got.Status == "ACTIVE" {
			return net.JoinHostPort(ip, strconv.Itoa(p.Settings.Port)), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("the probe port %s was not ACTIVE %s after node %s was asked to plug it (is kuryr-daemon running there?)",
				port.ID, p.timing().Active, p.Settings.Node)
		}
		p.pause(ctx, attempt)
	}
}

// reaches: a connection is answered (reset or accepted) within
// Timing.Reach.
func (p *Prober) reaches(ctx context.Context, addr string) bool {
	deadline := time.Now().Add(p.timing().Reach)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if answered(p.dial(ctx, addr)) {
			return true
		}
		p.pause(ctx, attempt)
	}
	return false
}

// blocked: blockedRuns connections in a row time out within Timing.Block
// (the first ones may still pass while OVN applies the change). Any other
// failure (no route, refused by the host) proves nothing: it is returned.
func (p *Prober) blocked(ctx context.Context, addr string) (bool, error) {
	deadline := time.Now().Add(p.timing().Block)
	run := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		err := p.dial(ctx, addr)
		switch {
		case answered(err):
			run = 0
			p.pause(ctx, attempt)
		case timedOut(err):
			if run++; run >= blockedRuns {
				return true, nil
			}
		default:
			return false, err
		}
	}
	return false, ctx.Err()
}

// timedOut: the connection went unanswered (dropped).
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func (p *Prober) dial(ctx context.Context, addr string) error {
	if p.Dial != nil {
		return p.Dial(ctx, addr, dialTimeout)
	}
	c, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, "tcp", addr)
	if err == nil {
		_ = c.Close()
	}
	return err
}

// answered: the connection was accepted or reset (the port was reached).
func answered(err error) bool {
	return err == nil || errors.Is(err, syscall.ECONNREFUSED)
}

// cleanup removes the probe port's annotation and deletes the probe's
// objects, this run's or a crashed run's. A port Neutron may still be
// creating (an unanswered create's) is deleted once it is done (see
// neutron.CreateFinished). Failures are logged: the next start deletes
// what is left.
func (p *Prober) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, p.Settings.BindTimeout+time.Minute)
	defer cancel()
	logger := log.FromContext(ctx)
	p.unannotate(ctx)
	ports, err := p.Neutron.ListPorts(ctx, p.tags()[:2], "")
	if err != nil {
		logger.Error(err, "listing the probe's ports")
	}
	for _, port := range ports {
		if err := p.deleteCreated(ctx, port); err != nil {
			logger.Error(err, "deleting the probe's port", "port", port.ID)
		}
	}
	sgs, err := p.Neutron.FindSecurityGroups(ctx, p.tags()[:2])
	if err != nil {
		logger.Error(err, "listing the probe's security groups")
	}
	for _, sg := range sgs {
		if err := p.Neutron.DeleteSecurityGroup(ctx, sg.ID); err != nil {
			logger.Error(err, "deleting the probe's security group", "group", sg.ID)
		}
	}
	ags, err := p.Neutron.AddressGroupsNamed(ctx, names.AddressGroupProbeName)
	if err != nil {
		logger.Error(err, "listing the probe's address groups")
	}
	desc := names.AddressGroupProbeDescription(p.Settings.Cluster)
	for _, ag := range ags {
		if ag.Description != desc {
			continue
		}
		if err := p.Neutron.DeleteAddressGroup(ctx, ag.ID); err != nil {
			logger.Error(err, "deleting the probe's address group", "addressGroup", ag.ID)
		}
	}
}

// unannotate removes the probe port's annotation from every node that has
// it (a previous leader's node too: its daemon unplugs the port).
func (p *Prober) unannotate(ctx context.Context) {
	var nodes corev1.NodeList
	if err := p.Client.List(ctx, &nodes); err != nil {
		log.FromContext(ctx).Error(err, "listing nodes for the probe port's annotation")
		return
	}
	patch := annotationPatch(kuryrv1.ProbePortAnnotation, nil)
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if _, ok := n.Annotations[kuryrv1.ProbePortAnnotation]; !ok {
			continue
		}
		if err := p.Client.Patch(ctx, n, patch); client.IgnoreNotFound(err) != nil {
			log.FromContext(ctx).Error(err, "removing the probe port's annotation", "node", n.Name)
		}
	}
}

// deleteCreated deletes the probe's port once Neutron is done creating it,
// reading it again every second until then: deleted before, its OVN port
// could be made after the delete and stay.
func (p *Prober) deleteCreated(ctx context.Context, port neutron.Port) error {
	for !neutron.CreateFinished(&port, p.Settings.BindTimeout, time.Now()) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("port %s still being created: %w", port.ID, ctx.Err())
		case <-time.After(time.Second):
		}
		fresh, err := p.Neutron.GetPort(ctx, port.ID)
		if neutron.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		port = *fresh
	}
	return p.Neutron.DeletePort(ctx, port.ID)
}
