// Package ovs is kuryr's client of the node's Open vSwitch database
// (OVSDB, RFC 7047): one long-lived libovsdb session that monitors the
// tables kuryr reads, and the transactions ovs-vsctl used to make for it
// (adding and removing the OVS ports of pods, node-port and refusal
// interfaces; waiting for ovn-installed; listing interfaces).
package ovs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/kuryr-k8s/kuryr/pkg/batch"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// opTimeout bounds each call as ovs-vsctl's --timeout=30 did; connectWait
// is how long a call waits for a session with ovsdb-server (ovs-vsctl
// failed at once on a refused connection).
const (
	opTimeout   = 30 * time.Second
	connectWait = 2 * time.Second
)

// Client talks OVSDB (RFC 7047) to the node's ovsdb-server through
// libovsdb, one long-lived session that monitors the tables it reads: no
// ovs-vsctl binary, no client connection per call.
type Client struct {
	db     string
	noWait bool
	adds   *batch.Group[Port, struct{}]

	once sync.Once
	sess *session
}

// New talks to the ovsdb-server at db, e.g.
// "unix:/run/openvswitch/db.sock". With noWait, AddPort returns once OVSDB
// has the port, without waiting for ovs-vswitchd to apply it: for callers
// whose next wait implies that anyway (ovn-installed is set only on an
// interface vswitchd has applied). Under a burst of pods each waiting
// add-port otherwise waits for a reconfiguration of the whole bridge.
// The session starts at the first call.
func New(db string, noWait bool) *Client {
	o := &Client{db: db, noWait: noWait}
	one := func(ctx context.Context, p Port) (struct{}, error) {
		_, err := o.addPorts(ctx, []Port{p})
		return struct{}{}, err
	}
	// A failed transaction did nothing: retry each port alone.
	o.adds = batch.New(1, 64, o.addPorts, one, func(error) bool { return true })
	return o
}

// Port is what kuryr records on the OVS interface of a pod: enough to find
// the attachment of a sandbox again, after a daemon restart too.
type Port struct {
	Bridge, Name                 string // bridge; host interface (tap...)
	PortID, MAC, PodUID          string // the Neutron port; Nova-style vm-uuid
	ContainerID, IfName, PodName string // the CNI attachment; namespace/name
	// Netns is the pod's network namespace, and IPs its addresses with a
	// host route through the node's macvlan shim (nested-macvlan): kept by
	// a VM node's file records (package records), whose pod interface is
	// not a veth with an end on the node; OVS keeps neither.
	Netns string   `json:",omitempty"`
	IPs   []string `json:",omitempty"`
}

func (o *Client) session() *session {
	o.once.Do(func() { o.sess = newSession(o.db) })
	return o.sess
}

// Close ends the session with ovsdb-server, if any.
func (o *Client) Close() {
	o.once.Do(func() {})
	if o.sess != nil {
		o.sess.Close()
	}
}

// AddPort (re)creates the OVS port of p in one transaction. The ports
// asked for while a transaction is running go together in the next one: a
// burst of pods on a node otherwise costs ovsdb-server (single-threaded)
// one transaction per pod.
func (o *Client) AddPort(ctx context.Context, p Port) error {
	_, err := o.adds.Do(ctx, p)
	return err
}

func (o *Client) addPorts(ctx context.Context, ps []Port) ([]struct{}, error) {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	build := func(ctx context.Context, c client.Client) ([]ovsdb.Operation, error) {
		var ops []ovsdb.Operation
		for i, p := range ps {
			if _, ok, err := findBridge(ctx, c, p.Bridge); err != nil || !ok {
				return nil, noBridge(p.Bridge, err)
			}
			del, err := delPortOps(ctx, c, p.Name)
			if err != nil {
				return nil, err
			}
			add, err := addPortOps(c, p.Bridge, p.Name, fmt.Sprint(i), &ovsIface{ExternalIDs: PodExternalIDs(p)})
			if err != nil {
				return nil, err
			}
			ops = append(append(ops, del...), add...)
		}
		return ops, nil
	}
	if err := o.transact(ctx, build); err != nil {
		return nil, fmt.Errorf("add OVS ports %s: %w", strings.Join(names, ","), err)
	}
	return make([]struct{}, len(ps)), nil
}

// EnsureInternalPort makes name an internal interface of bridge bound to
// the Neutron port portID with the port's MAC (what ovn-controller binds),
// in one transaction; what exists is updated in place.
func (o *Client) EnsureInternalPort(ctx context.Context, bridge, name, portID, mac string) error {
	return o.ensurePort(ctx, bridge, name, "internal", portID, mac)
}

// EnsureSystemPort makes the existing device name (e.g. the host end of a
// veth pair) a port of bridge bound to the Neutron port portID, the way a
// pod's is but without the CNI attachment's ids: the daemon's DEL and GC
// never take it for a pod's.
func (o *Client) EnsureSystemPort(ctx context.Context, bridge, name, portID, mac string) error {
	return o.ensurePort(ctx, bridge, name, "", portID, mac)
}

func (o *Client) ensurePort(ctx context.Context, bridge, name, typ, portID, mac string) error {
	ext := internalExternalIDs(portID, mac)
	var ifaceMAC *string
	if typ == "internal" { // OVS sets the MAC of internal devices only
		ifaceMAC = &mac
	}
	build := func(ctx context.Context, c client.Client) ([]ovsdb.Operation, error) {
		_, b, ok, err := findPort(ctx, c, name)
		if err != nil {
			return nil, err
		}
		if ok {
			if b.Name != bridge {
				return nil, fmt.Errorf("port %s already exists on bridge %s", name, b.Name)
			}
			if _, ok, err := findIface(ctx, c, name); err != nil || !ok {
				return nil, errors.Join(fmt.Errorf("no row %s in table Interface", name), err)
			}
			return setIfaceOps(c, name, typ, ifaceMAC, ext)
		}
		if _, ok, err := findBridge(ctx, c, bridge); err != nil || !ok {
			return nil, noBridge(bridge, err)
		}
		return addPortOps(c, bridge, name, "0", &ovsIface{Type: typ, MAC: ifaceMAC, ExternalIDs: ext})
	}
	if err := o.transact(ctx, build); err != nil {
		return fmt.Errorf("ensure OVS port %s on %s: %w", name, bridge, err)
	}
	return nil
}

// DelPort removes an OVS port; absent is fine.
func (o *Client) DelPort(ctx context.Context, name string) error {
	return o.delPort(ctx, name, !o.noWait)
}

// DelPortApplied is DelPort that waits for ovs-vswitchd to apply it even
// when the client does not wait otherwise: a port added again under the
// same name after its device was made anew is else taken, when both
// changes reach ovs-vswitchd together, for the port it has, and the
// userspace datapath keeps reading the gone device.
func (o *Client) DelPortApplied(ctx context.Context, name string) error {
	return o.delPort(ctx, name, true)
}

func (o *Client) delPort(ctx context.Context, name string, wait bool) error {
	build := func(ctx context.Context, c client.Client) ([]ovsdb.Operation, error) {
		return delPortOps(ctx, c, name)
	}
	if err := o.transactWait(ctx, build, wait); err != nil {
		return fmt.Errorf("delete OVS port %s: %w", name, err)
	}
	return nil
}

// Ports lists the OVS interfaces kuryr plugged (those with a non-empty
// kuryr-container-id), by name.
func (o *Client) Ports(ctx context.Context) ([]Port, error) {
	s := o.session()
	if err := s.connected(ctx, connectWait); err != nil {
		return nil, fmt.Errorf("list OVS ports: %w", err)
	}
	var ifaces []*ovsIface
	err := s.cl.WhereCache(func(i *ovsIface) bool { return i.ExternalIDs[names.ExtContainerID] != "" }).List(ctx, &ifaces)
	if err != nil {
		return nil, fmt.Errorf("list OVS ports: %w", err)
	}
	var ports []Port
	for _, i := range ifaces {
		ports = append(ports, portOfIface(i))
	}
	sort.Slice(ports, func(a, b int) bool { return ports[a].Name < ports[b].Name })
	return ports, nil
}

// WaitInstalled blocks until ovn-controller has installed the flows of an
// interface (it sets external_ids:ovn-installed), watching OVSDB rather
// than polling. The interface need not exist yet. The wait lasts timeout,
// at least a second, within ctx.
func (o *Client) WaitInstalled(ctx context.Context, name string, timeout time.Duration) error {
	secs := max(1, int(timeout.Seconds()))
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second)
	defer cancel()
	s := o.session()
	err := s.connected(ctx, connectWait)
	if err == nil {
		err = s.waitFor(ctx, func(ctx context.Context, c client.Client) (bool, error) {
			i, ok, err := findIface(ctx, c, name)
			return ok && i.ExternalIDs["ovn-installed"] == "true", err
		})
	}
	if err != nil {
		return fmt.Errorf("wait for ovn-installed on %s (%ds): %w", name, secs, err)
	}
	return nil
}

// noBridge is ovs-vsctl's error for a bridge the cache does not hold.
func noBridge(bridge string, err error) error {
	return errors.Join(fmt.Errorf("no bridge named %s", bridge), err)
}
