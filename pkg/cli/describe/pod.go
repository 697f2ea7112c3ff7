package describe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// PodReport is a pod, its KuryrPort, its Neutron ports and the node's view.
type PodReport struct {
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Node        string `json:"node,omitempty"`
	IP          string `json:"ip,omitempty"`
	Phase       string `json:"phase"`
	HostNetwork bool   `json:"hostNetwork,omitempty"`
	// KuryrPort is the status of the pod's KuryrPort, nil if it has none.
	KuryrPort      *KuryrPortView `json:"kuryrPort,omitempty"`
	KuryrPortError string         `json:"kuryrPortError,omitempty"`
	Ports          []PortView     `json:"ports,omitempty"`
	OpenStackError string         `json:"openStackError,omitempty"`
	NodeView       NodeView       `json:"nodeView"`
}

// KuryrPortView is what a KuryrPort says.
type KuryrPortView struct {
	VIFs           map[string]kuryrv1.VIF `json:"vifs,omitempty"`
	SecurityGroups []string               `json:"securityGroups,omitempty"`
	Conditions     []Condition            `json:"conditions,omitempty"`
}

// PortView is a Neutron port as Neutron has it.
type PortView struct {
	Interface      string     `json:"interface"`
	ID             string     `json:"id"`
	Name           string     `json:"name,omitempty"`
	Status         string     `json:"status,omitempty"`
	BindingHost    string     `json:"bindingHost,omitempty"`
	VIFType        string     `json:"vifType,omitempty"`
	MAC            string     `json:"mac,omitempty"`
	FixedIPs       []string   `json:"fixedIPs,omitempty"`
	SecurityGroups []GroupRef `json:"securityGroups,omitempty"`
	Tags           []string   `json:"tags,omitempty"`
	DeviceOwner    string     `json:"deviceOwner,omitempty"`
	Error          string     `json:"error,omitempty"`
}

// NodeView is what the node's kuryr-daemon sees of the pod's ports.
type NodeView struct {
	DaemonPod   string           `json:"daemonPod,omitempty"`
	Attachments []api.Attachment `json:"attachments,omitempty"`
	Error       string           `json:"error,omitempty"`
}

// Pod collects a pod's report; only a missing pod is an error.
func Pod(ctx context.Context, e *env.Env, name string) (*PodReport, error) {
	var pod corev1.Pod
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: name}, &pod); err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", e.Namespace, name, err)
	}
	r := &PodReport{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName, IP: pod.Status.PodIP,
		Phase: string(pod.Status.Phase), HostNetwork: pod.Spec.HostNetwork}
	var kp kuryrv1.KuryrPort
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: pod.Name}, &kp); err != nil {
		r.KuryrPortError = err.Error()
	} else {
		r.KuryrPort = &KuryrPortView{VIFs: kp.Status.VIFs, SecurityGroups: kp.Status.SecurityGroups,
			Conditions: conditions(kp.Status.Conditions)}
		r.Ports = r.neutronPorts(ctx, e, kp.Status.VIFs)
	}
	r.NodeView = nodeView(ctx, e, pod.Spec.NodeName, kp.Status.VIFs)
	return r, nil
}

// neutronPorts reads the port of each VIF, by interface name.
func (r *PodReport) neutronPorts(ctx context.Context, e *env.Env, vifs map[string]kuryrv1.VIF) []PortView {
	if len(vifs) == 0 {
		return nil
	}
	cloud, err := e.Cloud(ctx)
	if err != nil {
		r.OpenStackError = err.Error()
		return nil
	}
	names := &groupNames{nc: cloud.Neutron}
	var out []PortView
	for _, ifname := range sortedKeys(vifs) {
		v := PortView{Interface: ifname, ID: vifs[ifname].PortID}
		p, err := cloud.Neutron.GetPort(ctx, v.ID)
		if err != nil {
			v.Error = err.Error()
			out = append(out, v)
			continue
		}
		v.Name, v.Status, v.BindingHost, v.VIFType = p.Name, p.Status, p.HostID, p.VIFType
		v.MAC, v.Tags, v.DeviceOwner = p.MACAddress, p.Tags, p.DeviceOwner
		for _, ip := range p.FixedIPs {
			v.FixedIPs = append(v.FixedIPs, ip.IPAddress+" ("+ip.SubnetID+")")
		}
		for _, sg := range p.SecurityGroups {
			v.SecurityGroups = append(v.SecurityGroups, names.ref(ctx, sg))
		}
		out = append(out, v)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// nodeView execs `kuryr-daemon attachments` in the node's daemon pod and
// keeps the pod's ports' attachments. Failures are reported, not returned.
func nodeView(ctx context.Context, e *env.Env, node string, vifs map[string]kuryrv1.VIF) NodeView {
	var v NodeView
	if node == "" {
		v.Error = "the pod is not scheduled"
		return v
	}
	dp, err := env.DaemonPod(ctx, e.Client, e.KuryrNamespace, node)
	if err != nil || dp == nil {
		v.Error = fmt.Sprintf("no kuryr-daemon pod on node %s in %s", node, e.KuryrNamespace)
		if err != nil {
			v.Error = err.Error()
		}
		return v
	}
	v.DaemonPod = dp.Name
	out, err := e.Exec.Exec(ctx, dp.Namespace, dp.Name, names.Daemon, env.AttachmentsCommand(dp))
	if err != nil {
		v.Error = err.Error()
		return v
	}
	var all api.Attachments
	if err := json.Unmarshal(out, &all); err != nil {
		v.Error = fmt.Sprintf("decode the attachments of %s: %v", dp.Name, err)
		return v
	}
	ports := map[string]bool{}
	for _, vif := range vifs {
		ports[vif.PortID] = true
	}
	for _, a := range all.Interfaces {
		if ports[a.PortID] {
			v.Attachments = append(v.Attachments, a)
		}
	}
	if len(v.Attachments) == 0 && len(ports) > 0 {
		v.Error = "no OVS interface on the node carries the pod's port (not plugged)"
	}
	return v
}

func (r *PodReport) table(w io.Writer) error {
	_ = output.Section(w, "Pod", "Name", r.Namespace+"/"+r.Name, "Node", r.Node, "IP", r.IP, "Phase", r.Phase,
		"Host network", strconv.FormatBool(r.HostNetwork))
	problem(w, "KuryrPort", r.KuryrPortError)
	if r.KuryrPort != nil {
		vifs := output.NewRows("interface", "port", "mac", "ips", "vif type", "active", "host interface")
		for _, name := range sortedKeys(r.KuryrPort.VIFs) {
			v := r.KuryrPort.VIFs[name]
			var ips []string
			for _, ip := range v.IPs {
				ips = append(ips, ip.Address)
			}
			vifs.Add(name, v.PortID, v.MACAddress, join(ips), v.VIFType, strconv.FormatBool(v.Active), v.VIFName)
		}
		_ = output.Indented(w, "KuryrPort VIFs", vifs)
		_ = output.Indented(w, "KuryrPort conditions", conditionRows(r.KuryrPort.Conditions))
	}
	problem(w, "OpenStack", r.OpenStackError)
	for _, p := range r.Ports {
		if p.Error != "" {
			problem(w, "Neutron port "+p.ID, p.Error)
			continue
		}
		var sgs []string
		for _, g := range p.SecurityGroups {
			sgs = append(sgs, g.String())
		}
		_ = output.Section(w, "Neutron port ("+p.Interface+")", "ID", p.ID, "Name", p.Name, "Status", p.Status,
			"Binding host", p.BindingHost, "VIF type", p.VIFType, "MAC", p.MAC, "Fixed IPs", join(p.FixedIPs),
			"Security groups", join(sgs), "Tags", join(p.Tags), "Device owner", p.DeviceOwner)
	}
	return r.NodeView.table(w, r.Node)
}

func (v NodeView) table(w io.Writer, node string) error {
	fmt.Fprintf(w, "Node view (%s, through %s):\n", node, v.DaemonPod)
	if v.Error != "" {
		fmt.Fprintf(w, "  %s\n", v.Error)
	}
	if len(v.Attachments) == 0 {
		return nil
	}
	r := output.NewRows("interface", "iface-id", "mac", "ofport", "link", "admin", "ovn-installed")
	for _, a := range v.Attachments {
		r.Add(a.Interface, a.PortID, a.MAC, strconv.Itoa(a.OFPort), a.LinkState, a.AdminState, strconv.FormatBool(a.OVNInstalled))
	}
	return output.Indented(w, "OVS interfaces", r)
}
