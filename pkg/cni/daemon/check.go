package daemon

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/containernetworking/cni/pkg/types"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// check verifies the attachment against the pod's port: OVS port (or
// attachment record), MAC, addresses, default route, the interface's kind
// (and VLAN id), and on a VM node the route to a macvlan pod via the shim.
func (d *Daemon) check(ctx context.Context, req *api.Request) *types.Error {
	if cerr := validateSandbox(req); cerr != nil {
		return cerr
	}
	if cerr := d.validateNetns(req.Netns); cerr != nil {
		return cerr
	}
	pa, cerr := parsePodArgs(req)
	if cerr != nil {
		return cerr
	}
	kp, ok := d.Registry.Get(pa.Namespace, pa.Name)
	if !ok {
		return types.NewError(types.ErrUnknownContainer, "no KuryrPort for this pod", req.Args)
	}
	vif, ok := kp.Status.DefaultVIF()
	if !ok {
		return types.NewError(types.ErrUnknownContainer, "the pod's KuryrPort has no port yet", "")
	}
	att, err := d.attachment(ctx, req.ContainerID, req.IfName)
	if err != nil {
		return tryAgain("reading OVS: %v", err)
	}
	if att == nil || att.PortID != vif.PortID {
		return types.NewError(api.ErrCheckFailed, "no OVS port plugged for this attachment into port "+vif.PortID, "")
	}
	obs, err := d.Kernel.Inspect(req.Netns, req.IfName, net.ParseIP(vif.Gateway))
	if err != nil {
		return types.NewError(api.ErrCheckFailed, "inspecting "+req.IfName, err.Error())
	}
	var problems []string
	if !obs.Exists {
		problems = append(problems, req.IfName+" missing")
	}
	if !strings.EqualFold(obs.MAC, vif.MACAddress) {
		problems = append(problems, fmt.Sprintf("MAC %s, port has %s", obs.MAC, vif.MACAddress))
	}
	for _, ip := range vif.IPs {
		if !slices.Contains(obs.Addrs, ip.Address) {
			problems = append(problems, "address "+ip.Address+" missing")
		}
	}
	if vif.Default && vif.Gateway != "" && !obs.HasGW {
		problems = append(problems, "no route via "+vif.Gateway)
	}
	if obs.Exists {
		problems = append(problems, kindProblems(vif, obs)...)
	}
	if vif.Nested != nil && vif.Nested.Mode == kuryrv1.NestedMacvlan {
		for _, ip := range podIPs(vif) {
			routed, err := d.Kernel.ShimRouted(net.ParseIP(ip))
			if err != nil {
				return tryAgain("%v", err)
			}
			if !routed {
				problems = append(problems, "the node has no route to "+ip+" via "+names.MacvlanShim)
			}
		}
	}
	if len(problems) > 0 {
		return types.NewError(api.ErrCheckFailed, "attachment differs from port "+vif.PortID, strings.Join(problems, "; "))
	}
	return nil
}

// kindProblems: the pod's interface is of the kind its port data asks
// for (a veth on a hypervisor; a VLAN interface with the subport's id or
// a macvlan on a VM node). Pure.
func kindProblems(vif kuryrv1.VIF, obs plug.Observed) []string {
	want, vlan := "veth", 0
	if at := vif.Nested; at != nil {
		want = "macvlan"
		if at.Mode == kuryrv1.NestedVLAN {
			want, vlan = "vlan", at.VLANID
		}
	}
	var out []string
	if obs.Kind != want {
		out = append(out, fmt.Sprintf("a %s interface, the port data asks for a %s", obs.Kind, want))
	} else if vlan > 0 && obs.VLANID != vlan {
		out = append(out, fmt.Sprintf("VLAN %d, the subport has %d", obs.VLANID, vlan))
	}
	return out
}
