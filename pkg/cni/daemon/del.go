package daemon

import (
	"context"

	"github.com/containernetworking/cni/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

// attachment finds the OVS port plugged for one sandbox and interface.
func (d *Daemon) attachment(ctx context.Context, containerID, ifName string) (*ovs.Port, error) {
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

// del unplugs what ADD plugged for this sandbox. It needs nothing of
// CNI_ARGS (a runtime's teardown must never fail on them), succeeds for
// anything unknown or already removed, and only ever touches the
// attachment of this container id: a late DEL for an older sandbox of the
// same pod must not unplug the new one (the host interface is named after
// the port, which both sandboxes share).
func (d *Daemon) del(ctx context.Context, req *api.Request) *types.Error {
	if cerr := validateSandbox(req); cerr != nil {
		return cerr
	}
	removed, cerr := d.removeAttachment(ctx, req.ContainerID, req.IfName)
	if cerr != nil || removed {
		return cerr
	}
	// Nothing of ours for this sandbox (never plugged, or plugged by a newer
	// sandbox): only this sandbox's own pod end may remain.
	if err := d.Kernel.RemovePodIf(req.Netns, req.IfName); err != nil {
		log.FromContext(ctx).Info("could not remove the pod end of an unknown attachment", "netns", req.Netns, "error", err.Error())
	}
	return nil
}

// removeAttachment unplugs the attachment of a sandbox's interface if it
// exists, deciding under its host interface's lock on what OVS says then: a
// plug of another sandbox of the same pod, or of another pod given the same
// pooled port, may have replaced it meanwhile.
func (d *Daemon) removeAttachment(ctx context.Context, containerID, ifName string) (bool, *types.Error) {
	att, err := d.attachment(ctx, containerID, ifName)
	if err != nil {
		return false, tryAgain("reading OVS: %v", err)
	}
	if att == nil {
		return false, nil
	}
	unlock := d.locks.Lock(att.Name)
	defer unlock()
	if att, err = d.attachment(ctx, containerID, ifName); err != nil {
		return false, tryAgain("reading OVS: %v", err)
	}
	if att == nil {
		return false, nil
	}
	return true, d.unplug(ctx, att)
}

func (d *Daemon) unplug(ctx context.Context, att *ovs.Port) *types.Error {
	if att.Netns != "" {
		return d.unplugNested(ctx, att)
	}
	if err := d.OVS.DelPort(ctx, att.Name); err != nil {
		return tryAgain("removing OVS port %s: %v", att.Name, err)
	}
	d.Kernel.DeleteVeth(att.Name)
	log.FromContext(ctx).Info("pod unplugged", "pod", att.PodName, "container", att.ContainerID, "port", att.PortID)
	return nil
}
