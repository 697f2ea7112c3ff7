//go:build e2e && destructive

package uninstall

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// The original (Python) kuryr-kubernetes, as ../shared/reference describes
// what it leaves: its CRDs (testdata/python-crds.yaml) and objects, with
// its finalizers on Pods, Services and NetworkPolicies; Neutron and
// Octavia objects without a tag ([neutron_defaults] resource_tags is empty
// by default), ports named "" (port_debug off); one security group per
// NetworkPolicy ("sg/<ns>-<name>": per-pod /32 rules, the node subnet and
// the namespace's ClusterIPs, all egress), and the allow-all group its
// docs require as pod_security_groups for pods no policy selects.
//
// pythonize turns the cluster kuryr networks into that: kuryr's
// controller stopped, kuryr's objects replaced by the original's (the
// same ports, load balancers and addresses), kuryr's tags taken off, the
// ports given the original's groups. The dataplane stays as kuryr-daemon
// plugged it (the original's daemon would have plugged the same tap
// device into br-int); kuryr-daemon keeps running, as the original's
// would, since running pods need neither.
type pythonized struct {
	ports    map[string]string // pod namespace/name -> its port
	balancer map[string]string // Service namespace/name -> its load balancer
	groups   map[string]string // NetworkPolicy namespace/name -> the original's group
	floating map[string]string // Service namespace/name -> the floating IP the original allocated
	allowAll string            // the original's pod_security_groups
}

func pythonize(t *testing.T, c *framework.Cloud, k *framework.Kuryr) *pythonized {
	t.Helper()
	ctx := context.Background()
	k.Controller(t, "stop")
	p := &pythonized{ports: map[string]string{}, balancer: map[string]string{}, groups: map[string]string{},
		floating: map[string]string{}}
	p.allowAll = createGroup(t, c, "python-kuryr-pods-allow-all", "the original's pod_security_groups: allow all",
		[]rules.CreateOpts{{Direction: rules.DirIngress, EtherType: rules.EtherType4}, {Direction: rules.DirIngress, EtherType: rules.EtherType6},
			{Direction: rules.DirEgress, EtherType: rules.EtherType4}, {Direction: rules.DirEgress, EtherType: rules.EtherType6}})
	t.Cleanup(func() { deleteGroupEventually(t, c, p.allowAll) })

	var kps kuryrv1.KuryrPortList
	var klbs kuryrv1.KuryrLoadBalancerList
	var knps kuryrv1.KuryrNetworkPolicyList
	var kns kuryrv1.KuryrNetworkList
	for _, l := range []client.ObjectList{&kps, &klbs, &knps, &kns} {
		if err := k.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if len(kns.Items) > 0 {
		t.Fatalf("%d KuryrNetworks: this test builds the original's pod_subnets_driver = default", len(kns.Items))
	}
	var originals []*unstructured.Unstructured
	podGroups := p.policyGroups(t, c, knps.Items)
	for i := range knps.Items {
		originals = append(originals, p.originalPolicy(t, c, &knps.Items[i]))
	}
	for i := range kps.Items {
		if u := p.originalPort(t, c, &kps.Items[i], podGroups); u != nil {
			originals = append(originals, u)
		}
	}
	for i := range klbs.Items {
		if u := p.originalBalancer(t, c, &klbs.Items[i]); u != nil {
			originals = append(originals, u)
		}
	}
	// kuryr's own policy groups go (the original has none of them): the
	// policy's, then its peers' (its rules name them).
	for i := range knps.Items {
		knp := &knps.Items[i]
		peers := k.PeerGroups(t, knp.Namespace, knp.Name)
		for _, sg := range c.PolicySecurityGroups(t, ownerUID(knp.OwnerReferences)) {
			deleteGroupEventually(t, c, sg.ID)
		}
		for id := range peers {
			if !strings.HasPrefix(id, framework.AddressGroupMark) {
				deleteGroupEventually(t, c, id)
			}
		}
	}
	// kuryr's objects go (their finalizers first: no controller runs),
	// then its CRDs; the original's come in their place.
	for _, l := range []client.ObjectList{&kps, &klbs, &knps} {
		items, _ := metaItems(l)
		for _, o := range items {
			_ = k.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			_ = client.IgnoreNotFound(k.Delete(ctx, o))
		}
	}
	for _, plural := range []string{"kuryrports", "kuryrnetworks", "kuryrloadbalancers", "kuryrnetworkpolicies"} {
		kubectl(t, "delete", "crd", plural+".openstack.org", "--wait=true", "--timeout=120s")
	}
	here, _ := os.Getwd()
	kubectl(t, "apply", "-f", filepath.Join(here, "testdata", "python-crds.yaml"))
	kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/kuryrports.openstack.org",
		"crd/kuryrnetworks.openstack.org", "crd/kuryrloadbalancers.openstack.org", "crd/kuryrnetworkpolicies.openstack.org")
	framework.Eventually(t, time.Minute, time.Second, "the original's objects created", func() (bool, error) {
		for _, u := range originals {
			if err := k.Create(ctx, u.DeepCopy()); err != nil && !strings.Contains(err.Error(), "already exists") {
				return false, err
			}
		}
		return true, nil
	})
	p.finalizers(t, c)
	installPython(t, c, p.allowAll)
	return p
}

func ownerUID(refs []metav1.OwnerReference) string {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return string(r.UID)
		}
	}
	if len(refs) > 0 {
		return string(refs[0].UID)
	}
	return ""
}

// metaItems are a list's items as client objects.
func metaItems(l client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := l.(type) {
	case *kuryrv1.KuryrPortList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *kuryrv1.KuryrLoadBalancerList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *kuryrv1.KuryrNetworkPolicyList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("%T", l)
	}
	return out, nil
}

// policyGroups makes the original's group of each NetworkPolicy and says
// which pods each selects (pod namespace/name -> groups).
func (p *pythonized) policyGroups(t *testing.T, c *framework.Cloud, knps []kuryrv1.KuryrNetworkPolicy) map[string][]string {
	t.Helper()
	ctx := context.Background()
	nodeCIDR := nodeSubnetCIDR(t, c)
	out := map[string][]string{}
	for _, knp := range knps {
		np, err := c.Kube.NetworkingV1().NetworkPolicies(knp.Namespace).Get(ctx, knp.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := c.Kube.CoreV1().Pods(np.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svcs, err := c.Kube.CoreV1().Services(np.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		opts := []rules.CreateOpts{{Direction: rules.DirEgress, EtherType: rules.EtherType4},
			{Direction: rules.DirEgress, EtherType: rules.EtherType6},
			{Direction: rules.DirIngress, EtherType: rules.EtherType4, RemoteIPPrefix: nodeCIDR}}
		for _, s := range svcs.Items {
			if s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone {
				opts = append(opts, rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4, RemoteIPPrefix: s.Spec.ClusterIP + "/32"})
			}
		}
		for _, in := range np.Spec.Ingress {
			for _, from := range in.From {
				if from.PodSelector == nil || from.NamespaceSelector != nil || from.IPBlock != nil || len(in.Ports) > 0 {
					t.Fatalf("NetworkPolicy %s/%s: only same-namespace podSelector peers without ports are built here", np.Namespace, np.Name)
				}
				for _, pod := range selected(t, pods.Items, from.PodSelector) {
					if pod.Status.PodIP != "" {
						opts = append(opts, rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4, RemoteIPPrefix: pod.Status.PodIP + "/32"})
					}
				}
			}
		}
		sg := createGroup(t, c, "sg/"+np.Namespace+"-"+np.Name, "Kuryr-Kubernetes Network Policy "+np.Namespace+"/"+np.Name+" SG", opts)
		p.groups[np.Namespace+"/"+np.Name] = sg
		for _, pod := range selected(t, pods.Items, &np.Spec.PodSelector) {
			out[pod.Namespace+"/"+pod.Name] = append(out[pod.Namespace+"/"+pod.Name], sg)
		}
	}
	return out
}

func selected(t *testing.T, pods []corev1.Pod, sel *metav1.LabelSelector) []corev1.Pod {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range pods {
		if s.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// originalPolicy is the original's KuryrNetworkPolicy of knp's policy.
func (p *pythonized) originalPolicy(t *testing.T, c *framework.Cloud, knp *kuryrv1.KuryrNetworkPolicy) *unstructured.Unstructured {
	t.Helper()
	np, err := c.Kube.NetworkingV1().NetworkPolicies(knp.Namespace).Get(context.Background(), knp.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sg := p.groups[np.Namespace+"/"+np.Name]
	var statusRules []any
	for _, r := range c.SecurityGroupRules(t, sg) {
		statusRules = append(statusRules, map[string]any{"id": r.ID, "direction": r.Direction, "ethertype": r.EtherType,
			"remote_ip_prefix": r.RemoteIPPrefix, "security_group_id": sg, "description": "Kuryr-Kubernetes NetPolicy SG rule"})
	}
	u := original("KuryrNetworkPolicy", np.Namespace, np.Name, "NetworkPolicy", "networking.k8s.io/v1", np.UID,
		kuryrv1.KuryrNetworkPolicyFinalizer)
	u.SetAnnotations(map[string]string{"networkPolicyLink": "/apis/networking.k8s.io/v1/namespaces/" + np.Namespace + "/networkpolicies/" + np.Name})
	u.Object["spec"] = map[string]any{"ingressSgRules": []any{}, "egressSgRules": []any{},
		"podSelector": selectorMap(np.Spec.PodSelector), "policyTypes": []any{"Ingress"}}
	u.Object["status"] = map[string]any{"securityGroupId": sg, "securityGroupRules": statusRules,
		"podSelector": selectorMap(np.Spec.PodSelector)}
	return u
}

func selectorMap(s metav1.LabelSelector) map[string]any {
	m := map[string]any{}
	if len(s.MatchLabels) > 0 {
		ml := map[string]any{}
		for k, v := range s.MatchLabels {
			ml[k] = v
		}
		m["matchLabels"] = ml
	}
	return m
}

// original is an original object owned by its Kubernetes object.
func original(kind, ns, name, ownerKind, ownerAPI string, uid types.UID, finalizer string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion("openstack.org/v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetFinalizers([]string{finalizer})
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: ownerAPI, Kind: ownerKind, Name: name, UID: uid}})
	return u
}

// originalPort untags the pod's port, gives it the original's groups and
// returns the original's KuryrPort (nil for a pod being deleted).
func (p *pythonized) originalPort(t *testing.T, c *framework.Cloud, kp *kuryrv1.KuryrPort, podGroups map[string][]string) *unstructured.Unstructured {
	t.Helper()
	vif, ok := kp.Status.VIFs[kuryrv1.DefaultInterface]
	pod, err := c.Kube.CoreV1().Pods(kp.Namespace).Get(context.Background(), kp.Name, metav1.GetOptions{})
	if !ok || err != nil || pod.DeletionTimestamp != nil || string(pod.UID) != kp.Spec.PodUID {
		return nil
	}
	sgs := podGroups[kp.Namespace+"/"+kp.Name]
	if len(sgs) == 0 {
		sgs = []string{c.PodSG, p.allowAll}
	}
	empty := ""
	if _, err := ports.Update(context.Background(), c.OS.Network, vif.PortID, ports.UpdateOpts{Name: &empty, SecurityGroups: &sgs}).Extract(); err != nil {
		t.Fatalf("port %s: %v", vif.PortID, err)
	}
	untag(t, c.OS.Network, "ports", vif.PortID)
	p.ports[kp.Namespace+"/"+kp.Name] = vif.PortID
	var ips []any
	for _, ip := range vif.IPs {
		ips = append(ips, ovo("FixedIP", map[string]any{"address": strings.Split(ip.Address, "/")[0]}))
	}
	cidr := ""
	if len(vif.IPs) > 0 {
		cidr = vif.IPs[0].Address
	}
	subnet := ovo("Subnet", map[string]any{"cidr": cidr, "gateway": vif.Gateway, "dns": []any{},
		"ips": ovo("FixedIPList", map[string]any{"objects": ips}), "routes": ovo("RouteList", map[string]any{"objects": []any{}})})
	network := ovo("Network", map[string]any{"id": vif.NetworkID, "mtu": int64(vif.MTU), "should_provide_bridge": false,
		"should_provide_vlan": false, "bridge": "br-int", "subnets": ovo("SubnetList", map[string]any{"objects": []any{subnet}})})
	u := original("KuryrPort", kp.Namespace, kp.Name, "Pod", "v1", pod.UID, kuryrv1.KuryrPortFinalizer)
	u.SetLabels(map[string]string{kuryrv1.NodeNameLabel: pod.Spec.NodeName})
	u.Object["spec"] = map[string]any{"podUid": string(pod.UID), "podNodeName": pod.Spec.NodeName, "podStatic": false}
	u.Object["status"] = map[string]any{"vifs": map[string]any{"eth0": map[string]any{"default": true,
		"vif": ovo("VIFOpenVSwitch", map[string]any{"id": vif.PortID, "address": vif.MACAddress, "active": true,
			"has_traffic_filtering": true, "preserve_on_delete": false, "plugin": "ovs", "vif_name": kuryrv1.HostIfName(vif.PortID),
			"bridge_name": "br-int", "network": network,
			"port_profile": ovo("VIFPortProfileOpenVSwitch", map[string]any{"interface_id": vif.PortID})})}}}
	return u
}

// ovo is an os-vif object primitive.
func ovo(name string, data map[string]any) map[string]any {
	return map[string]any{"versioned_object.name": name, "versioned_object.namespace": "os_vif",
		"versioned_object.version": "1.0", "versioned_object.data": data}
}

// originalBalancer untags the Service's load balancer, listeners and pools
// and returns the original's KuryrLoadBalancer.
func (p *pythonized) originalBalancer(t *testing.T, c *framework.Cloud, klb *kuryrv1.KuryrLoadBalancer) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	svc, err := c.Kube.CoreV1().Services(klb.Namespace).Get(ctx, klb.Name, metav1.GetOptions{})
	if err != nil || klb.Status.LoadBalancer == nil || svc.DeletionTimestamp != nil {
		return nil
	}
	lbID := klb.Status.LoadBalancer.ID
	lb, err := loadbalancers.Get(ctx, c.OS.LoadBalancer, lbID).Extract()
	if err != nil {
		t.Fatalf("load balancer %s: %v", lbID, err)
	}
	p.balancer[klb.Namespace+"/"+klb.Name] = lbID
	none := []string{}
	waitLB(t, c, lbID)
	if _, err := loadbalancers.Update(ctx, c.OS.LoadBalancer, lbID, loadbalancers.UpdateOpts{Tags: &none}).Extract(); err != nil {
		t.Fatalf("untag load balancer %s: %v", lbID, err)
	}
	// Its listeners and pools keep their tags: ovn-octavia-provider never
	// answers an update of theirs that changes only tags (pkg/octavia).
	var ls, ps []any
	for _, l := range lb.Listeners {
		got, err := listeners.Get(ctx, c.OS.LoadBalancer, l.ID).Extract()
		if err != nil {
			t.Fatalf("listener %s: %v", l.ID, err)
		}
		ls = append(ls, map[string]any{"id": got.ID, "loadbalancer_id": lbID, "name": got.Name, "port": int64(got.ProtocolPort),
			"project_id": got.ProjectID, "protocol": got.Protocol})
	}
	for _, pl := range lb.Pools {
		got, err := pools.Get(ctx, c.OS.LoadBalancer, pl.ID).Extract()
		if err != nil {
			t.Fatalf("pool %s: %v", pl.ID, err)
		}
		listener := ""
		if len(got.Listeners) > 0 {
			listener = got.Listeners[0].ID
		}
		ps = append(ps, map[string]any{"id": got.ID, "listener_id": listener, "loadbalancer_id": lbID, "name": got.Name,
			"project_id": got.ProjectID, "protocol": got.Protocol})
	}
	waitLB(t, c, lbID)
	var pubIP map[string]any
	if f := klb.Status.FloatingIP; f != nil {
		// As the original allocated it: described "kuryr_lb", untagged.
		desc := "kuryr_lb"
		if _, err := floatingips.Update(ctx, c.OS.Network, f.ID, floatingips.UpdateOpts{Description: &desc}).Extract(); err != nil {
			t.Fatalf("floating IP %s: %v", f.ID, err)
		}
		untag(t, c.OS.Network, "floatingips", f.ID)
		p.floating[svc.Namespace+"/"+svc.Name] = f.ID
		pubIP = map[string]any{"ip_id": f.ID, "ip_addr": f.IP, "alloc_method": "pool"}
	}
	var specPorts []any
	for _, sp := range svc.Spec.Ports {
		specPorts = append(specPorts, map[string]any{"name": sp.Name, "port": int64(sp.Port), "protocol": string(sp.Protocol),
			"targetPort": sp.TargetPort.String()})
	}
	u := original("KuryrLoadBalancer", svc.Namespace, svc.Name, "Service", "v1", svc.UID, kuryrv1.KuryrLoadBalancerFinalizer)
	u.Object["spec"] = map[string]any{"ip": svc.Spec.ClusterIP, "ports": specPorts, "project_id": lb.ProjectID, "provider": lb.Provider,
		"subnet_id": lb.VipSubnetID, "type": string(svc.Spec.Type), "security_groups_ids": []any{}}
	u.Object["status"] = map[string]any{"loadbalancer": map[string]any{"id": lbID, "ip": lb.VipAddress, "name": lb.Name,
		"port_id": lb.VipPortID, "project_id": lb.ProjectID, "provider": lb.Provider, "subnet_id": lb.VipSubnetID, "security_groups": []any{}},
		"listeners": ls, "pools": ps, "members": []any{}}
	if pubIP != nil {
		u.Object["status"].(map[string]any)["service_pub_ip_info"] = pubIP
	}
	return u
}

// finalizers puts the original's finalizers on the pods, Services and
// NetworkPolicies it handled.
func (p *pythonized) finalizers(t *testing.T, c *framework.Cloud) {
	t.Helper()
	ctx := context.Background()
	patch := []byte(fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, names.PythonPodFinalizer))
	for key := range p.ports {
		ns, name, _ := strings.Cut(key, "/")
		if _, err := c.Kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("pod %s: %v", key, err)
		}
	}
	patch = []byte(fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, names.PythonServiceFinalizer))
	for key := range p.balancer {
		ns, name, _ := strings.Cut(key, "/")
		if _, err := c.Kube.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("Service %s: %v", key, err)
		}
	}
	patch = []byte(fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, names.PythonPolicyFinalizer))
	for key := range p.groups {
		ns, name, _ := strings.Cut(key, "/")
		if _, err := c.Kube.NetworkingV1().NetworkPolicies(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("NetworkPolicy %s: %v", key, err)
		}
	}
}

// pythonNamespace is where the test's original "runs".
const pythonNamespace = "kuryr-python"

// installPython makes the original's namespace: its kuryr.conf (agreeing
// with kuryr's), and its controller Deployment and daemon DaemonSet (host
// network, the test image sleeping: what migrate stops and deletes).
func installPython(t *testing.T, c *framework.Cloud, allowAll string) {
	t.Helper()
	conf := fmt.Sprintf(`[kubernetes]
pod_subnets_driver = default
enabled_handlers = vif,endpoints,service,kuryrloadbalancer,kuryrport,policy,pod_label,kuryrnetworkpolicy
endpoints_driver_octavia_provider = ovn
[neutron_defaults]
project = %s
pod_subnet = %s
service_subnet = %s
pod_security_groups = %s
external_svc_net = %s
resource_tags =
[octavia_defaults]
enforce_sg_rules = false
member_mode = L2
`, c.ProjectID, c.PodSubnet, c.ServiceSubnet, allowAll, c.PublicNet)
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kuryr-config, namespace: %[1]s}
data:
  kuryr.conf: |
%[2]s
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: %[3]s, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: python-kuryr-controller}}
  template:
    metadata: {labels: {app: python-kuryr-controller}}
    spec:
      hostNetwork: true
      tolerations: [{operator: Exists}]
      containers: [{name: controller, image: %[4]s, command: [sleep, "86400"]}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: %[5]s, namespace: %[1]s}
spec:
  selector: {matchLabels: {app: python-kuryr-cni}}
  template:
    metadata: {labels: {app: python-kuryr-cni}}
    spec:
      hostNetwork: true
      containers: [{name: kuryr-cni, image: %[4]s, command: [sleep, "86400"]}]
`, pythonNamespace, indent(conf, "    "), names.PythonController, c.TestImage, names.PythonDaemonSet)
	f := filepath.Join(t.TempDir(), "python.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", f)
	t.Cleanup(func() { kubectlQuiet("delete", "namespace", pythonNamespace, "--wait=false") })
	kubectl(t, "-n", pythonNamespace, "rollout", "status", "deployment/"+names.PythonController, "--timeout=120s")
}

func indent(s, by string) string {
	return by + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+by)
}

func createGroup(t *testing.T, c *framework.Cloud, name, description string, opts []rules.CreateOpts) string {
	t.Helper()
	ctx := context.Background()
	// In kuryr's project, as the original made them (with kuryr's credential).
	sg, err := groups.Create(ctx, c.OS.Network, groups.CreateOpts{Name: name, Description: description, ProjectID: c.ProjectID}).Extract()
	if err != nil {
		t.Fatalf("create group %s: %v", name, err)
	}
	for _, r := range sg.Rules { // Neutron's default egress rules: the original deletes them
		if err := rules.Delete(ctx, c.OS.Network, r.ID).ExtractErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range opts {
		o.SecGroupID, o.ProjectID = sg.ID, c.ProjectID
		o.Description = "Kuryr-Kubernetes NetPolicy SG rule"
		if _, err := rules.Create(ctx, c.OS.Network, o).Extract(); err != nil {
			t.Fatalf("group %s: rule %+v: %v", name, o, err)
		}
	}
	return sg.ID
}

// deleteGroupEventually deletes a group once no port carries it.
func deleteGroupEventually(t *testing.T, c *framework.Cloud, id string) {
	err := framework.Poll(2*time.Minute, 2*time.Second, "group "+id+" deleted", func() (bool, error) {
		err := groups.Delete(context.Background(), c.OS.Network, id).ExtractErr()
		return err == nil || gophercloud.ResponseCodeIs(err, 404), err
	})
	if err != nil {
		t.Logf("%v", err)
	}
}

func untag(t *testing.T, sc *gophercloud.ServiceClient, kind, id string) {
	t.Helper()
	if _, err := attributestags.ReplaceAll(context.Background(), sc, kind, id, attributestags.ReplaceAllOpts{Tags: []string{}}).Extract(); err != nil {
		t.Fatalf("untag %s %s: %v", kind, id, err)
	}
}

func waitLB(t *testing.T, c *framework.Cloud, id string) {
	t.Helper()
	framework.Eventually(t, 2*time.Minute, time.Second, "load balancer "+id+" ACTIVE", func() (bool, error) {
		lb, err := loadbalancers.Get(context.Background(), c.OS.LoadBalancer, id).Extract()
		if err != nil {
			return false, err
		}
		return lb.ProvisioningStatus == "ACTIVE", fmt.Errorf("%s", lb.ProvisioningStatus)
	})
}

// nodeSubnetCIDR is the nodes' management subnet (the original always
// admits the worker nodes' subnets).
func nodeSubnetCIDR(t *testing.T, c *framework.Cloud) string {
	t.Helper()
	nodes, err := c.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v", err)
	}
	var np kuryrv1.NodePort
	if err := json.Unmarshal([]byte(nodes.Items[0].Annotations[kuryrv1.NodePortAnnotation]), &np); err != nil || len(np.IPs) == 0 {
		t.Fatalf("node %s's management port: %v", nodes.Items[0].Name, err)
	}
	pfx, err := netip.ParsePrefix(np.IPs[0])
	if err != nil {
		t.Fatal(err)
	}
	return pfx.Masked().String()
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return run(t, "", "kubectl", args...)
}

func kubectlQuiet(args ...string) { _ = exec.Command("kubectl", args...).Run() }
