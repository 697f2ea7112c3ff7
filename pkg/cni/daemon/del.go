package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
)

// attachment finds the OVS port plugged for one sandbox and interface.
func (d *Daemon) attachment(ctx context.Context, containerID, ifName string) (*plug.Port, error) {
	ports, err := d.OVS.Ports(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ports {
		if p.ContainerID == containerID && p.IfName == ifName {
			return &p, nil
		}
	}
	return nil, nil
}

// del unplugs what ADD plugged for this sandbox. It succeeds for anything
// unknown or already removed, and only ever touches the attachment of this
// container id: a late DEL for an older sandbox of the same pod must not
// unplug the new one (the host interface is named after the port, which
// both sandboxes share).
func (d *Daemon) del(ctx context.Context, req *api.Request) *types.Error {
	pa, cerr := parsePodArgs(req, false)
	if cerr != nil {
		return cerr
	}
	unlock := d.locks.lock(key(string(pa.K8S_POD_NAMESPACE), string(pa.K8S_POD_NAME)))
	defer unlock()
	att, err := d.attachment(ctx, req.ContainerID, req.IfName)
	if err != nil {
		return tryAgain("reading OVS: %v", err)
	}
	if att == nil {
		// Nothing of ours for this sandbox (never plugged, or plugged by a
		// newer sandbox): only this sandbox's own pod end may remain.
		if err := d.Kernel.RemovePodIf(req.Netns, req.IfName); err != nil {
			log.FromContext(ctx).Info("could not remove the pod end of an unknown attachment", "error", err.Error())
		}
		return nil
	}
	return d.unplug(ctx, att)
}

func (d *Daemon) unplug(ctx context.Context, att *plug.Port) *types.Error {
	if err := d.OVS.DelPort(ctx, att.Name); err != nil {
		return tryAgain("removing OVS port %s: %v", att.Name, err)
	}
	d.Kernel.DeleteVeth(att.Name)
	log.FromContext(ctx).Info("pod unplugged", "pod", att.PodName, "container", att.ContainerID, "port", att.PortID)
	return nil
}

// check verifies the attachment against the pod's port: OVS port, MAC,
// addresses and default route.
func (d *Daemon) check(ctx context.Context, req *api.Request) *types.Error {
	pa, cerr := parsePodArgs(req, true)
	if cerr != nil {
		return cerr
	}
	kp, ok := d.Registry.Get(string(pa.K8S_POD_NAMESPACE), string(pa.K8S_POD_NAME))
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
		if !contains(obs.Addrs, ip.Address) {
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

// gc removes every attachment the runtime no longer lists as valid.
func (d *Daemon) gc(ctx context.Context, req *api.Request) *types.Error {
	var conf types.PluginConf
	if err := json.Unmarshal(req.Config, &conf); err != nil {
		return types.NewError(types.ErrDecodingFailure, "invalid network configuration", err.Error())
	}
	valid := map[string]bool{}
	for _, a := range conf.ValidAttachments {
		valid[a.ContainerID+"/"+a.IfName] = true
	}
	ports, err := d.OVS.Ports(ctx)
	if err != nil {
		return tryAgain("reading OVS: %v", err)
	}
	for _, p := range ports {
		if valid[p.ContainerID+"/"+p.IfName] {
			continue
		}
		unlock := d.locks.lock(p.PodName)
		cerr := d.unplug(ctx, &p)
		unlock()
		if cerr != nil {
			return cerr
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}
