package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

// plugNested gives a pod of a VM node its VLAN or macvlan interface on
// the VM's NIC and records the attachment (with the pod's namespace, as
// nothing of it is left on the node's side); a macvlan pod is routed
// through the node's shim, so that the node (its kubelet's probes) reaches
// it.
func (d *Daemon) plugNested(ctx context.Context, req *api.Request, vif kuryrv1.VIF, hostIf string, kp *kuryrv1.KuryrPort, res *current.Result) *types.Error {
	n, err := NestedOf(vif, d.Link)
	if err != nil {
		return types.NewError(types.ErrInvalidNetworkConfig, "port data and node disagree on nested mode", err.Error())
	}
	n.Netns, n.IfName, n.TempName, n.Result, n.TxChecksumOff = req.Netns, req.IfName, hostIf, res, d.TxChecksumOff
	if err := d.Kernel.CreateNested(n); errors.Is(err, plug.ErrNotAnnounced) {
		log.FromContext(ctx).Info("the pod's interface works, but its addresses were not announced: "+
			"a router that held one with another MAC keeps it (give kuryr-daemon CAP_NET_RAW)",
			"pod", key(kp.Namespace, kp.Name), "reason", err.Error())
	} else if err != nil {
		if errors.Is(err, plug.ErrInUse) {
			return tryAgain("plugging the pod's interface on the VM's NIC: %v", err)
		}
		return types.NewError(api.ErrPlug, "plugging the pod's interface on the VM's NIC failed", err.Error())
	}
	rec := ovs.Port{Name: hostIf, PortID: vif.PortID, MAC: vif.MACAddress, PodUID: kp.Spec.PodUID,
		ContainerID: req.ContainerID, IfName: req.IfName, PodName: key(kp.Namespace, kp.Name), Netns: req.Netns}
	if n.VLANID == 0 {
		rec.IPs = podIPs(vif)
	}
	// Recorded before the routes, so that a DEL after a failure takes
	// them away too; both under the routes' lock, which a DEL holds while
	// it reads which addresses other records still route.
	defer d.locks.Lock(shimRoutes)()
	if err := d.OVS.AddPort(ctx, rec); err != nil {
		_ = d.Kernel.RemovePodIf(req.Netns, req.IfName)
		return types.NewError(api.ErrPlug, "recording the pod's attachment failed", err.Error())
	}
	for _, ip := range rec.IPs {
		if err := d.Kernel.RouteViaShim(d.Link, net.ParseIP(ip)); err != nil {
			return types.NewError(api.ErrPlug, "routing the node to its macvlan pod failed", err.Error())
		}
	}
	return nil
}

// podIPs are the VIF's addresses without their prefix lengths.
func podIPs(vif kuryrv1.VIF) []string {
	var out []string
	for _, a := range vif.IPs {
		if ip, _, err := net.ParseCIDR(a.Address); err == nil {
			out = append(out, ip.String())
		}
	}
	return out
}

// NestedOf is the interface the port data asks for on a node whose NIC is
// link: a KuryrPort of a hypervisor's pod on a VM node, or the reverse, is
// refused (the controller and the daemons disagree on pod_vif_driver).
func NestedOf(vif kuryrv1.VIF, link string) (plug.Nested, error) {
	at := vif.Nested
	switch {
	case at == nil:
		return plug.Nested{}, fmt.Errorf("port %s is bound to a hypervisor, but this node is a VM (NIC %s)", vif.PortID, link)
	case link == "":
		return plug.Nested{}, fmt.Errorf("port %s sits on a VM's port (%s), but this node is not a VM node "+
			"([kubernetes] pod_vif_driver)", vif.PortID, at.Mode)
	case at.Mode == kuryrv1.NestedVLAN && (at.VLANID < 1 || at.VLANID > 4094):
		return plug.Nested{}, fmt.Errorf("port %s: VLAN id %d out of range", vif.PortID, at.VLANID)
	case at.Mode != kuryrv1.NestedVLAN && at.Mode != kuryrv1.NestedMacvlan:
		return plug.Nested{}, fmt.Errorf("port %s: unknown nested mode %q", vif.PortID, at.Mode)
	}
	n := plug.Nested{Link: link, MAC: vif.MACAddress, MTU: vif.MTU}
	if at.Mode == kuryrv1.NestedVLAN {
		n.VLANID = at.VLANID
	}
	return n, nil
}

// unplugNested removes a VM node's pod interface, then its record: a
// crash between the two leaves the record, which the next DEL or GC
// finishes.
func (d *Daemon) unplugNested(ctx context.Context, att *ovs.Port) *types.Error {
	if err := d.unrouteNested(ctx, att); err != nil {
		return err
	}
	if err := d.Kernel.RemovePodIf(att.Netns, att.IfName); err != nil {
		// A namespace half torn down (its path no longer a namespace):
		// what it held goes with it; the DEL must not fail forever.
		log.FromContext(ctx).Info("could not remove the pod's interface", "netns", att.Netns, "error", err.Error())
	}
	if err := d.OVS.DelPort(ctx, att.Name); err != nil {
		return tryAgain("forgetting attachment %s: %v", att.Name, err)
	}
	log.FromContext(ctx).Info("pod unplugged", "pod", att.PodName, "container", att.ContainerID, "port", att.PortID)
	return nil
}

// shimRoutes is the daemon's lock key for the routes through the shim.
const shimRoutes = "routes via " + names.MacvlanShim

// unrouteNested removes the routes to a macvlan pod's addresses, but not
// one to an address another attachment holds now: a late DEL of a pod
// whose address went to a new pod on this node leaves the new one's route.
func (d *Daemon) unrouteNested(ctx context.Context, att *ovs.Port) *types.Error {
	if len(att.IPs) == 0 {
		return nil
	}
	defer d.locks.Lock(shimRoutes)()
	all, err := d.OVS.Ports(ctx)
	if err != nil {
		return tryAgain("reading the node's attachments: %v", err)
	}
	held := map[string]bool{}
	for _, p := range all {
		if p.Name != att.Name {
			for _, ip := range p.IPs {
				held[ip] = true
			}
		}
	}
	for _, ip := range att.IPs {
		if held[ip] {
			log.FromContext(ctx).Info("route kept: another pod of this node has the address now", "ip", ip, "port", att.PortID)
			continue
		}
		if err := d.Kernel.UnrouteViaShim(net.ParseIP(ip)); err != nil {
			return tryAgain("%v", err)
		}
	}
	return nil
}

// podEndOnly is a VM node's result: its pod interface alone, as nothing of
// the attachment is on the node's side (Result's interface 0, the host
// end, does not exist there). Pure.
func podEndOnly(r *current.Result) *current.Result {
	out := *r
	out.Interfaces = r.Interfaces[1:]
	out.IPs = nil
	for _, ip := range r.IPs {
		c := *ip
		c.Interface = current.Int(0)
		out.IPs = append(out.IPs, &c)
	}
	return &out
}
