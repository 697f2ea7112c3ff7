package daemon

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
)

// check verifies the attachment against the pod's port: OVS port, MAC,
// addresses and default route.
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
	if len(problems) > 0 {
		return types.NewError(api.ErrCheckFailed, "attachment differs from port "+vif.PortID, strings.Join(problems, "; "))
	}
	return nil
}
