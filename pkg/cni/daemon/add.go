package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

// add plugs the pod into its port: wait for the controller's port data,
// plug, wait until the port carries traffic. Only the plug holds the
// port's lock: a DEL of an older sandbox never waits behind this ADD's waits.
func (d *Daemon) add(ctx context.Context, req *api.Request) ([]byte, *types.Error) {
	if cerr := validateSandbox(req); cerr != nil {
		return nil, cerr
	}
	if cerr := d.validateNetns(req.Netns); cerr != nil {
		return nil, cerr
	}
	ver, cerr := cniVersion(req.Config)
	if cerr != nil {
		return nil, cerr
	}
	pa, cerr := parsePodArgs(req)
	if cerr != nil {
		return nil, cerr
	}
	logger := log.FromContext(ctx).WithValues("pod", key(pa.Namespace, pa.Name), "container", req.ContainerID)

	start := time.Now()
	vif, kp, cerr := d.waitPortData(ctx, pa)
	if cerr != nil {
		return nil, cerr
	}
	gotPort := time.Now()
	hostIf, err := checkVIF(vif)
	if err != nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "unusable port data on KuryrPort "+key(kp.Namespace, kp.Name), err.Error())
	}
	res, err := Result(vif, hostIf, req.IfName, req.Netns)
	if err != nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "unusable port data", err.Error())
	}
	// What plugging changes is the host interface, named after the port:
	// two sandboxes of a pod, or two pods one after the other with a pooled
	// port, contend for it.
	unlock := d.locks.Lock(hostIf)
	cerr = d.plug(ctx, req, vif, hostIf, kp, res)
	unlock()
	if cerr != nil {
		return nil, cerr
	}
	plugged := time.Now()
	if cerr := d.waitUsable(ctx, pa, vif, hostIf); cerr != nil {
		return nil, cerr
	}
	usable := time.Now()
	if vif.Nested != nil {
		res = podEndOnly(res)
	}
	observeAdd(gotPort.Sub(start), plugged.Sub(gotPort), usable.Sub(plugged))
	logger.Info("pod plugged", "port", vif.PortID, "ip", vif.IPs[0].Address,
		"waitPort", gotPort.Sub(start).String(), "plug", plugged.Sub(gotPort).String(), "waitUsable", usable.Sub(plugged).String())
	return encodeResult(res, ver)
}

func encodeResult(res *current.Result, ver string) ([]byte, *types.Error) {
	out, err := res.GetAsVersion(ver)
	if err != nil {
		return nil, types.NewError(types.ErrIncompatibleCNIVersion, "cannot express the result in CNI "+ver, err.Error())
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, internal("encode result", err)
	}
	return raw, nil
}

// waitPortData waits for the pod's KuryrPort to carry port data. The
// runtime's pod UID is the pod's, or for a static pod the kubelet's (its
// mirror pod in the API has another).
func (d *Daemon) waitPortData(ctx context.Context, pa podArgs) (kuryrv1.VIF, *kuryrv1.KuryrPort, *types.Error) {
	wctx, cancel := context.WithTimeout(ctx, d.PortTimeout)
	defer cancel()
	ours := func(kp *kuryrv1.KuryrPort) bool {
		return pa.UID == "" || kp.Spec.PodUID == pa.UID || (kp.Spec.KubeletPodUID != "" && kp.Spec.KubeletPodUID == pa.UID)
	}
	kp, err := d.Registry.Wait(wctx, pa.Namespace, pa.Name, func(kp *kuryrv1.KuryrPort) bool {
		_, ok := kp.Status.DefaultVIF()
		// Our pod's KuryrPort being deleted means the pod is going: stop
		// waiting. An older pod's (same name, other UID) is not ours.
		return ours(kp) && (ok || !kp.DeletionTimestamp.IsZero())
	})
	switch {
	case err != nil && errors.Is(context.Cause(ctx), ErrStopping):
		return kuryrv1.VIF{}, nil, tryAgain("kuryr-daemon stopped before kuryr-controller's port data came (KuryrPort %s/%s)", pa.Namespace, pa.Name)
	case err != nil:
		return kuryrv1.VIF{}, nil, tryAgain("timed out after %s waiting for kuryr-controller's port data (KuryrPort %s/%s)", d.PortTimeout, pa.Namespace, pa.Name)
	}
	if !kp.DeletionTimestamp.IsZero() {
		return kuryrv1.VIF{}, nil, types.NewError(types.ErrUnknownContainer, "the pod is being deleted", key(pa.Namespace, pa.Name))
	}
	vif, _ := kp.Status.DefaultVIF()
	return vif, kp, nil
}

func (d *Daemon) plug(ctx context.Context, req *api.Request, vif kuryrv1.VIF, hostIf string, kp *kuryrv1.KuryrPort, res *current.Result) *types.Error {
	if vif.Nested != nil || d.Link != "" {
		return d.plugNested(ctx, req, vif, hostIf, kp, res)
	}
	err := d.Kernel.CreateVeth(plug.Veth{
		Netns: req.Netns, IfName: req.IfName, HostIf: hostIf, MAC: vif.MACAddress, MTU: vif.MTU,
		Result: res, TxChecksumOff: d.TxChecksumOff,
	})
	if err != nil {
		return types.NewError(api.ErrPlug, "plugging the pod's interface failed", err.Error())
	}
	err = d.OVS.AddPort(ctx, ovs.Port{
		Bridge: d.Bridge, Name: hostIf, PortID: vif.PortID, MAC: vif.MACAddress, PodUID: kp.Spec.PodUID,
		ContainerID: req.ContainerID, IfName: req.IfName, PodName: key(kp.Namespace, kp.Name),
	})
	if err != nil {
		d.Kernel.DeleteVeth(hostIf)
		return types.NewError(api.ErrPlug, "adding the pod's port to "+d.Bridge+" failed", err.Error())
	}
	return nil
}

func (d *Daemon) waitUsable(ctx context.Context, pa podArgs, vif kuryrv1.VIF, hostIf string) *types.Error {
	wctx, cancel := context.WithTimeout(ctx, d.UsableTimeout)
	defer cancel()
	var err error
	switch d.Usable {
	case UsableOVNInstalled:
		err = d.OVS.WaitInstalled(wctx, hostIf, d.UsableTimeout)
	case UsableNeutronActive:
		_, err = d.Registry.Wait(wctx, pa.Namespace, pa.Name, func(kp *kuryrv1.KuryrPort) bool {
			v, ok := kp.Status.DefaultVIF()
			return ok && v.PortID == vif.PortID && v.Active
		})
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrStopping) {
			return tryAgain("kuryr-daemon stopped before port %s was usable (waiting for %s)", vif.PortID, d.Usable)
		}
		if errors.Is(err, context.DeadlineExceeded) || wctx.Err() != nil {
			return tryAgain("port %s plugged but not usable after %s (waiting for %s)", vif.PortID, d.UsableTimeout, d.Usable)
		}
		return tryAgain("port %s plugged but not usable (waiting for %s): %v", vif.PortID, d.Usable, err)
	}
	return nil
}
