// Package plug wires a pod's interface into its Neutron port on the node:
// a veth pair whose host end is an OVS port of the integration bridge
// carrying the port's id (what ovn-controller or the OVS agent binds), and
// whose pod end has the port's MAC, addresses and routes.
package plug

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/batch"
)

// OVS talks to the node's ovsdb-server through ovs-vsctl, which ships with
// Open vSwitch on every node that can run kuryr.
type OVS struct {
	db     string
	noWait bool
	adds   *batch.Group[Port, struct{}]
}

// NewOVS talks to the ovsdb-server at db, e.g.
// "unix:/run/openvswitch/db.sock". With noWait, AddPort returns once OVSDB
// has the port, without waiting for ovs-vswitchd to apply it: for callers
// whose next wait implies that anyway (ovn-installed is set only on an
// interface vswitchd has applied). Under a burst of pods each waiting
// add-port otherwise waits for a reconfiguration of the whole bridge.
func NewOVS(db string, noWait bool) *OVS {
	o := &OVS{db: db, noWait: noWait}
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
}

// Keys of Interface external_ids kuryr owns, besides the standard ones.
const (
	extContainer = "kuryr-container-id"
	extIfName    = "kuryr-ifname"
	extPod       = "kuryr-pod"
)

func (o *OVS) vsctl(ctx context.Context, args ...string) (string, error) {
	full := append([]string{"--timeout=30", "--db=" + o.db}, args...)
	out, err := exec.CommandContext(ctx, "ovs-vsctl", full...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ovs-vsctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// AddPort (re)creates the OVS port of p in one transaction. The ports
// asked for while an ovs-vsctl is running go together in the next one: a
// burst of pods on a node otherwise costs ovsdb-server (single-threaded)
// one client connection and transaction per pod.
func (o *OVS) AddPort(ctx context.Context, p Port) error {
	_, err := o.adds.Do(ctx, p)
	return err
}

func (o *OVS) addPorts(ctx context.Context, ps []Port) ([]struct{}, error) {
	var args []string
	if o.noWait {
		args = append(args, "--no-wait")
	}
	for _, p := range ps {
		args = append(args, "--", "--if-exists", "del-port", p.Name,
			"--", "add-port", p.Bridge, p.Name,
			"--", "set", "Interface", p.Name,
			"external_ids:iface-id="+p.PortID, "external_ids:attached-mac="+p.MAC,
			"external_ids:iface-status=active", "external_ids:vm-uuid="+p.PodUID,
			"external_ids:"+extContainer+"="+p.ContainerID, "external_ids:"+extIfName+"="+p.IfName,
			"external_ids:"+extPod+"="+p.PodName)
	}
	if _, err := o.vsctl(ctx, args...); err != nil {
		return nil, err
	}
	return make([]struct{}, len(ps)), nil
}

// EnsureInternalPort makes name an internal interface of bridge bound to
// the Neutron port portID with the port's MAC (what ovn-controller binds),
// in one transaction; what exists is updated in place.
func (o *OVS) EnsureInternalPort(ctx context.Context, bridge, name, portID, mac string) error {
	_, err := o.vsctl(ctx, "--may-exist", "add-port", bridge, name,
		"--", "set", "Interface", name, "type=internal", fmt.Sprintf("mac=%q", mac),
		"external_ids:iface-id="+portID, "external_ids:attached-mac="+mac, "external_ids:iface-status=active")
	return err
}

// DelPort removes an OVS port; absent is fine.
func (o *OVS) DelPort(ctx context.Context, name string) error {
	_, err := o.vsctl(ctx, "--if-exists", "del-port", name)
	return err
}

// Ports lists the OVS interfaces kuryr plugged.
func (o *OVS) Ports(ctx context.Context) ([]Port, error) {
	out, err := o.vsctl(ctx, "--format=json", "--columns=name,external_ids", "find", "Interface",
		"external_ids:"+extContainer+"!=\"\"")
	if err != nil {
		return nil, err
	}
	return parsePorts(out)
}

// WaitInstalled blocks until ovn-controller has installed the flows of an
// interface (it sets external_ids:ovn-installed), watching OVSDB rather
// than polling.
func (o *OVS) WaitInstalled(ctx context.Context, name string, timeout time.Duration) error {
	secs := max(1, int(timeout.Seconds()))
	_, err := o.vsctl(ctx, fmt.Sprintf("--timeout=%d", secs), "wait-until", "Interface", name,
		"external_ids:ovn-installed=true")
	return err
}

// parsePorts reads ovs-vsctl's JSON table: rows of [name, ["map", [[k, v]...]]].
func parsePorts(out string) ([]Port, error) {
	var table struct {
		Data [][]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &table); err != nil {
		return nil, fmt.Errorf("parse ovs-vsctl output: %w", err)
	}
	var ports []Port
	for _, row := range table.Data {
		if len(row) != 2 {
			continue
		}
		var name string
		var ext []json.RawMessage
		if json.Unmarshal(row[0], &name) != nil || json.Unmarshal(row[1], &ext) != nil || len(ext) != 2 {
			continue
		}
		var pairs [][2]string
		if err := json.Unmarshal(ext[1], &pairs); err != nil {
			continue
		}
		m := map[string]string{}
		for _, kv := range pairs {
			m[kv[0]] = kv[1]
		}
		ports = append(ports, Port{
			Name: name, PortID: m["iface-id"], MAC: m["attached-mac"], PodUID: m["vm-uuid"],
			ContainerID: m[extContainer], IfName: m[extIfName], PodName: m[extPod],
		})
	}
	return ports, nil
}
