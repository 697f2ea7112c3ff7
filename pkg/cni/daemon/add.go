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
)

// add plugs the pod into its port: wait for the controller's port data,
// plug, wait until the port carries traffic.
func (d *Daemon) add(ctx context.Context, req *api.Request) ([]byte, *types.Error) {
	if req.Netns == "" || req.IfName == "" || req.ContainerID == "" {
		return nil, types.NewError(types.ErrInvalidEnvironmentVariables, "ADD needs CNI_CONTAINERID, CNI_NETNS and CNI_IFNAME", "")
	}
	ver, cerr := cniVersion(req.Config)
	if cerr != nil {
		return nil, cerr
	}
	pa, cerr := parsePodArgs(req, true)
	if cerr != nil {
		return nil, cerr
	}
	ns, name, uid := string(pa.K8S_POD_NAMESPACE), string(pa.K8S_POD_NAME), string(pa.K8S_POD_UID)
	unlock := d.locks.lock(key(ns, name))
	defer unlock()
	logger := log.FromContext(ctx).WithValues("pod", key(ns, name), "container", req.ContainerID)

	start := time.Now()
	vif, kp, cerr := d.waitPortData(ctx, ns, name, uid)
	if cerr != nil {
		return nil, cerr
	}
	gotPort := time.Now()
	res, err := Result(vif, req.IfName, req.Netns)
	if err != nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "unusable port data", err.Error())
	}
	if cerr := d.plug(ctx, req, vif, kp, res); cerr != nil {
		return nil, cerr
	}
	plugged := time.Now()
	if cerr := d.waitUsable(ctx, ns, name, vif); cerr != nil {
		return nil, cerr
	}
	usable := time.Now()
	// With other backends the controller learns ACTIVE from Neutron.
	if d.Usable == UsableOVNInstalled && !vif.Active && d.MarkActive != nil {
		if err := d.MarkActive(ctx, ns, name); err != nil {
			logger.Error(err, "recording the port active on its KuryrPort")
		}
	}
	observeAdd(gotPort.Sub(start), plugged.Sub(gotPort), usable.Sub(plugged))
	logger.Info("pod plugged", "port", vif.PortID, "ip", vif.IPs[0].Address,
		"waitPort", gotPort.Sub(start).String(), "plug", plugged.Sub(gotPort).String(), "waitUsable", usable.Sub(plugged).String())

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

func (d *Daemon) waitPortData(ctx context.Context, ns, name, uid string) (kuryrv1.VIF, *kuryrv1.KuryrPort, *types.Error) {
	wctx, cancel := context.WithTimeout(ctx, d.PortTimeout)
	defer cancel()
	ours := func(kp *kuryrv1.KuryrPort) bool { return uid == "" || kp.Spec.PodUID == uid }
	kp, err := d.Registry.Wait(wctx, ns, name, func(kp *kuryrv1.KuryrPort) bool {
		_, ok := kp.Status.DefaultVIF()
		// Our pod's KuryrPort being deleted means the pod is going: stop
		// waiting. An older pod's (same name, other UID) is not ours.
		return ours(kp) && (ok || !kp.DeletionTimestamp.IsZero())
	})
	if err != nil {
		return kuryrv1.VIF{}, nil, tryAgain("timed out after %s waiting for kuryr-controller's port data (KuryrPort %s/%s)", d.PortTimeout, ns, name)
	}
	if !kp.DeletionTimestamp.IsZero() {
		return kuryrv1.VIF{}, nil, types.NewError(types.ErrUnknownContainer, "the pod is being deleted", ns+"/"+name)
	}
	vif, _ := kp.Status.DefaultVIF()
	return vif, kp, nil
}

func (d *Daemon) plug(ctx context.Context, req *api.Request, vif kuryrv1.VIF, kp *kuryrv1.KuryrPort, res *current.Result) *types.Error {
	bridge := vif.Bridge
	if bridge == "" {
		bridge = d.Bridge
	}
	err := d.Kernel.CreateVeth(plug.Veth{
		Netns: req.Netns, IfName: req.IfName, HostIf: vif.VIFName, MAC: vif.MACAddress, MTU: vif.MTU,
		Result: res, TxChecksumOff: d.TxChecksumOff,
	})
	if err != nil {
		return types.NewError(api.ErrPlug, "plugging the pod's interface failed", err.Error())
	}
	err = d.OVS.AddPort(ctx, plug.Port{
		Bridge: bridge, Name: vif.VIFName, PortID: vif.PortID, MAC: vif.MACAddress, PodUID: kp.Spec.PodUID,
		ContainerID: req.ContainerID, IfName: req.IfName, PodName: key(kp.Namespace, kp.Name),
	})
	if err != nil {
		d.Kernel.DeleteVeth(vif.VIFName)
		return types.NewError(api.ErrPlug, "adding the pod's port to "+bridge+" failed", err.Error())
	}
	return nil
}

func (d *Daemon) waitUsable(ctx context.Context, ns, name string, vif kuryrv1.VIF) *types.Error {
	wctx, cancel := context.WithTimeout(ctx, d.UsableTimeout)
	defer cancel()
	var err error
	switch d.Usable {
	case UsableOVNInstalled:
		err = d.OVS.WaitInstalled(wctx, vif.VIFName, d.UsableTimeout)
	case UsableNeutronActive:
		_, err = d.Registry.Wait(wctx, ns, name, func(kp *kuryrv1.KuryrPort) bool {
			v, ok := kp.Status.DefaultVIF()
			return ok && v.PortID == vif.PortID && v.Active
		})
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || wctx.Err() != nil {
			return tryAgain("port %s plugged but not usable after %s (waiting for %s)", vif.PortID, d.UsableTimeout, d.Usable)
		}
		return tryAgain("port %s plugged but not usable (waiting for %s): %v", vif.PortID, d.Usable, err)
	}
	return nil
}
