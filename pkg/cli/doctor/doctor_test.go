package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/clitest"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

func runningPod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func TestHealthyInstallIsAllOK(t *testing.T) {
	f := clitest.New(t)
	pod := runningPod("default", "web", "n1")
	port := f.Neutron.Add("ports", neutrontest.Object{"tags": []string{names.ClusterTag(clitest.Cluster), names.PodTag("uid-web")},
		"created_at": "2020-01-01T00:00:00Z"})
	kp := &kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:   kuryrv1.KuryrPortSpec{PodUID: "uid-web", PodNodeName: "n1"},
		Status: kuryrv1.KuryrPortStatus{VIFs: map[string]kuryrv1.VIF{"eth0": {PortID: port, Default: true}}}}
	f.Objects = append(f.Objects, pod, kp)
	probed(f, kuryrv1.AddressGroupsEnforced)
	var out bytes.Buffer
	failed, err := Run(context.Background(), f.Env(t), output.JSON, &out)
	if err != nil || failed {
		t.Fatalf("failed %v, err %v:\n%s", failed, err, out.String())
	}
	var findings []Finding
	if err := json.Unmarshal(out.Bytes(), &findings); err != nil {
		t.Fatal(err)
	}
	if len(findings) < 10 {
		t.Errorf("only %d findings", len(findings))
	}
	for _, x := range findings {
		if x.Status != OK {
			t.Errorf("%s: %s %s", x.Check, x.Status, x.Message)
		}
	}
}

func TestProblems(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(f *clitest.Fixture)
		check  string
		status string
		want   string
	}{
		{"a node without a daemon", func(f *clitest.Fixture) { f.Objects = append(f.Objects, clitest.Node("n3", true)) },
			"nodes", Fail, "no Ready kuryr-daemon pod on 1 of 3 nodes: n3"},
		{"a NotReady node", func(f *clitest.Fixture) { f.Objects = append(f.Objects, clitest.Node("n3", false)) },
			"nodes", Warn, "nodes NotReady: n3"},
		{"a stale lease", func(f *clitest.Fixture) {
			replace(f, clitest.Lease("kube-system", "kuryr-controller-old", time.Now().Add(-5*time.Minute)))
		}, "leader", Fail, "is stale: kuryr-controller-old last renewed it 5m0s ago"},
		{"an orphan port", func(f *clitest.Fixture) {
			f.Neutron.Add("ports", neutrontest.Object{"id": "orphan-1", "created_at": "2020-01-01T00:00:00Z",
				"tags": []string{names.ClusterTag(clitest.Cluster), names.PodTag("gone")}})
		}, "orphans", Warn, "1 leaked kuryr-tagged objects: 1 ports (orphan-1); the controller's sweep deletes them"},
		{"an orphaned pair on a nested-macvlan VM port", func(f *clitest.Fixture) {
			vm := clitest.Node("vm1", true)
			vm.Labels = map[string]string{kuryrv1.PodVIFLabel: "nested-macvlan"}
			vm.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.20.0.5"}}
			f.Objects = append(f.Objects, vm)
			f.Neutron.Add("ports", neutrontest.Object{"id": "vm1-port", "device_owner": "compute:nova",
				"fixed_ips":             []neutrontest.Object{{"subnet_id": "workers", "ip_address": "10.20.0.5"}},
				"allowed_address_pairs": []neutrontest.Object{{"ip_address": "10.20.0.9", "mac_address": nested.MacvlanMAC("gone")}}})
		}, "orphans", Warn, "1 allowed address pairs of gone nested-macvlan pods on VM ports (vm1-port)"},
		{"a running pod without a KuryrPort", func(f *clitest.Fixture) {
			f.Objects = append(f.Objects, runningPod("default", "lost", "n1"))
		}, "pod ports", Fail, "1 Running pods have no KuryrPort with a VIF: default/lost"},
		{"a KuryrPort not Ready", func(f *clitest.Fixture) {
			f.Objects = append(f.Objects, &kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"},
				Status: kuryrv1.KuryrPortStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse,
					Reason: "SubnetFull", Message: "no more IP addresses"}}}})
		}, "ready KuryrPort", Warn, "KuryrPort default/x is not Ready (SubnetFull): no more IP addresses"},
		{"a missing CRD", func(f *clitest.Fixture) { f.Objects = f.Objects[:len(f.Objects)-1] },
			"crds", Fail, "kuryrnetworkpolicies.openstack.org"},
		{"no daemons ready", func(f *clitest.Fixture) {
			for _, o := range f.Objects {
				if p, ok := o.(*corev1.Pod); ok {
					p.Status.Conditions[0].Status = corev1.ConditionFalse
				}
			}
		}, "nodes", Fail, "no Ready kuryr-daemon pod on 2 of 2 nodes: n1, n2"},
		{"OpenStack unreachable", func(f *clitest.Fixture) { f.ConnectErr = errString("connection refused") },
			"openstack", Fail, "cannot reach OpenStack with the configured credentials: connection refused"},
		{"binding ports refused by policy", func(f *clitest.Fixture) { f.Neutron.Fail = forbidPortCreate },
			"permissions", Fail, "Neutron refuses to bind a port to a node (policy create_port:binding:host_id)"},
		{"a probe port left by an interrupted run", func(f *clitest.Fixture) {
			f.Neutron.Add("ports", neutrontest.Object{"name": names.ProbeTag,
				"tags": []string{names.ClusterTag("kubernetes"), names.ProbeTag}})
		}, "permissions", OK, "the credential may bind ports to nodes and read their binding"},
		{"a missing pod subnet", func(f *clitest.Fixture) { f.Neutron.Fail = failSubnets },
			"neutron objects", Fail, "configured objects missing or unreadable: pod_subnet"},
		{"VMs shut out of unisolated pods", func(f *clitest.Fixture) {
			vms := f.Neutron.Add("subnets", neutrontest.Object{"name": "vms", "cidr": "192.168.7.0/24"})
			f.Neutron.Add("ports", neutrontest.Object{"device_id": "router-1", "device_owner": "network:router_interface",
				"fixed_ips": []neutrontest.Object{{"subnet_id": vms}}})
			f.Overrides = []string{"network_policy.unrestricted_ingress_cidrs=10.10.0.0/16"}
		}, "reachability", Warn, "VMs on 192.168.7.0/24 (on the cluster's router) cannot open connections to pods"},
		{"the external network let in", func(f *clitest.Fixture) {
			ext := f.Neutron.Add("subnets", neutrontest.Object{"name": "public", "cidr": "172.24.4.0/24"})
			net := f.Neutron.Add("networks", neutrontest.Object{"name": "public", "subnets": []string{ext}})
			f.Overrides = []string{"neutron_defaults.external_svc_net=" + net, "network_policy.unrestricted_ingress_cidrs=0.0.0.0/0"}
		}, "reachability", Warn, "loadBalancerSourceRanges restrict nothing: [network_policy] unrestricted_ingress_cidrs 0.0.0.0/0"},
		{"affinity not enforced", func(f *clitest.Fixture) {
			f.Objects = append(f.Objects, &kuryrv1.KuryrLoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sticky"},
				Spec:   kuryrv1.KuryrLoadBalancerSpec{AffinityTimeoutSeconds: 60},
				Status: kuryrv1.KuryrLoadBalancerStatus{SessionAffinity: kuryrv1.AffinityNotEnforced}})
		}, "session affinity", Warn, "of 1 Services with ClientIP affinity, 1 have it NOT enforced"},
		{"a nested-macvlan node", func(f *clitest.Fixture) {
			n := clitest.Node("vm-1", true)
			n.Labels = map[string]string{kuryrv1.PodVIFLabel: "nested-macvlan"}
			f.Objects = append(f.Objects, n)
		}, "node modes", Warn, "NetworkPolicies are NOT enforced for the pods of the nested-macvlan nodes vm-1"},
		{"a node label naming no mode", func(f *clitest.Fixture) {
			n := clitest.Node("vm-1", true)
			n.Labels = map[string]string{kuryrv1.PodVIFLabel: "vlan"}
			f.Objects = append(f.Objects, n)
		}, "node modes", Fail, `label kuryr.openstack.org/pod-vif="vlan" is none of`},
		{"affinity enforced", func(f *clitest.Fixture) {
			f.Objects = append(f.Objects, &kuryrv1.KuryrLoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sticky"},
				Spec:   kuryrv1.KuryrLoadBalancerSpec{AffinityTimeoutSeconds: 60},
				Status: kuryrv1.KuryrLoadBalancerStatus{SessionAffinity: kuryrv1.AffinityEnforced}})
		}, "session affinity", OK, "the 1 Services with ClientIP affinity have it enforced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := clitest.New(t)
			tt.break_(f)
			findings := Checks(context.Background(), f.Env(t))
			for _, x := range findings {
				if x.Check == tt.check && x.Status == tt.status && strings.Contains(x.Message, tt.want) {
					return
				}
			}
			t.Errorf("no %s %s %q in:\n%s", tt.status, tt.check, tt.want, dump(findings))
		})
	}
}

// The openstack check says what is wrong with the connection in operator
// words (openstack.Explain), against a fake Keystone.
func TestOpenStackExplained(t *testing.T) {
	k := openstacktest.NewKeystone(t)
	k.AddApplicationCredential("ac1", "s")
	tests := []struct {
		name      string
		overrides []string
		want      string
	}{
		{"deleted application credential", []string{"neutron.application_credential_id=gone", "neutron.cafile=" + k.CAFile},
			"cannot reach OpenStack with the configured credentials: keystone " + k.URL +
				" does not know the application credential gone (404): it was deleted, or the ID is wrong"},
		{"missing CA file", []string{"neutron.application_credential_id=ac1", "neutron.cafile=/nonexistent.pem"},
			"CA file /nonexistent.pem (from [neutron] cafile)"},
		{"wrong region", []string{"neutron.application_credential_id=ac1", "neutron.cafile=" + k.CAFile, "neutron.region_name=RegionTwo"},
			"no network endpoint for region RegionTwo, interface public in the catalog (it has no network service at all)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := clitest.New(t).Env(t)
			e.Connect = nil // the real one
			e.Overrides = append([]string{"neutron.auth_type=v3applicationcredential", "neutron.auth_url=" + k.URL,
				"neutron.application_credential_secret=s"}, tt.overrides...)
			for _, x := range Checks(context.Background(), e) {
				if x.Check == "openstack" {
					if x.Status != Fail || !strings.Contains(x.Message, tt.want) {
						t.Errorf("%s %q\nwant FAIL saying %q", x.Status, x.Message, tt.want)
					}
					return
				}
			}
			t.Error("no openstack finding")
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func failSubnets(method, collection string) (int, string) {
	if method == "GET" && collection == "subnets" {
		return 404, `{"NeutronError": {"type": "SubnetNotFound", "message": "Subnet could not be found."}}`
	}
	return 0, ""
}

// forbidPortCreate answers port creations as Neutron's default policy does
// a credential without the rule for binding:host_id.
func forbidPortCreate(method, collection string) (int, string) {
	if method == "POST" && collection == "ports" {
		return 403, `{"NeutronError": {"type": "PolicyNotAuthorized", "message": "(rule:create_port and (rule:create_port:binding:host_id)) is disallowed by policy"}}`
	}
	return 0, ""
}

// replace puts o in place of the fixture's object of the same type and
// name.
func replace(f *clitest.Fixture, o client.Object) {
	for i, x := range f.Objects {
		if fmt.Sprintf("%T", x) == fmt.Sprintf("%T", o) && x.GetName() == o.GetName() && x.GetNamespace() == o.GetNamespace() {
			f.Objects[i] = o
			return
		}
	}
	f.Objects = append(f.Objects, o)
}

func dump(fs []Finding) string {
	var b strings.Builder
	for _, x := range fs {
		b.WriteString(x.Status + "  " + x.Check + "  " + x.Message + "\n")
	}
	return b.String()
}

// Namespace and node modes check the subnet pool and the router their
// subnets come from and are attached to; default mode the pod subnet.
func TestNeutronObjectsPerMode(t *testing.T) {
	tests := []struct {
		driver   string
		noRouter bool
		status   string
		want     string
	}{
		{"default", false, OK, "configured objects exist: pod_subnet,"},
		{"namespace", false, OK, "configured objects exist: pod_subnet_pool, pod_router,"},
		{"node", false, OK, "configured objects exist: pod_subnet_pool, pod_router,"},
		{"node", true, Fail, "pod_router missing-router"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s, router missing %v", tt.driver, tt.noRouter), func(t *testing.T) {
			f := clitest.New(t)
			pool := f.Neutron.Add("subnetpools", neutrontest.Object{"name": "pods", "prefixes": []string{"10.11.0.0/16"},
				"default_prefixlen": 24, "min_prefixlen": 16, "max_prefixlen": 28})
			router := "missing-router"
			if !tt.noRouter {
				router = f.Neutron.Add("routers", neutrontest.Object{"name": "pods"})
			}
			e := f.Env(t)
			e.Overrides = []string{"kubernetes.pod_subnets_driver=" + tt.driver,
				"namespace_subnet.pod_subnet_pool=" + pool, "namespace_subnet.pod_router=" + router}
			for _, x := range Checks(context.Background(), e) {
				if x.Check == "neutron objects" {
					if x.Status != tt.status || !strings.Contains(x.Message, tt.want) {
						t.Errorf("%s %q, want %s mentioning %q", x.Status, x.Message, tt.status, tt.want)
					}
					return
				}
			}
			t.Error("no neutron objects finding")
		})
	}
}

func TestStuckDeleting(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	lbs := []octavia.LoadBalancer{
		{ID: "deleting", ProvisioningStatus: "PENDING_DELETE", UpdatedAt: now.Add(-time.Minute)},
		{ID: "stuck", ProvisioningStatus: "PENDING_DELETE", UpdatedAt: now.Add(-6 * time.Minute)},
		{ID: "error", ProvisioningStatus: "ERROR", UpdatedAt: now.Add(-time.Hour)},
		{ID: "never-updated", ProvisioningStatus: "PENDING_DELETE"},
	}
	if got := stuckDeleting(lbs, now); !slices.Equal(got, []string{"stuck"}) {
		t.Fatalf("stuck %v, want [stuck]", got)
	}
}

// probed records an address-group probe's answer on the first node.
func probed(f *clitest.Fixture, v kuryrv1.AddressGroupVerdict) {
	for _, o := range f.Objects {
		if n, ok := o.(*corev1.Node); ok {
			r := kuryrv1.AddressGroupProbe{Verdict: v, Detail: "probed", Time: time.Now(), AddressGroups: v == kuryrv1.AddressGroupsEnforced}
			if v == "off" {
				r = kuryrv1.AddressGroupProbe{Verdict: kuryrv1.AddressGroupsUnknown, Off: true, Time: time.Now()}
			}
			raw, _ := json.Marshal(r)
			n.Annotations = map[string]string{kuryrv1.AddressGroupProbeAnnotation: string(raw)}
			return
		}
	}
}

func TestPolicyPeersSayWhatIsInForce(t *testing.T) {
	for _, tc := range []struct {
		verdict kuryrv1.AddressGroupVerdict
		status  string
		says    string
	}{
		{kuryrv1.AddressGroupsEnforced, OK, "peers are address groups"},
		{kuryrv1.AddressGroupsNotEnforced, OK, "does NOT enforce"},
		{kuryrv1.AddressGroupsUnknown, Warn, "had no answer"},
		{"", Warn, "no address-group probe answer"},
		{"off", OK, "turned off"},
	} {
		f := clitest.New(t)
		if tc.verdict != "" {
			probed(f, tc.verdict)
		}
		got := peers(context.Background(), f.Env(t))
		if got.Status != tc.status || !strings.Contains(got.Message, tc.says) {
			t.Errorf("%q: %s %s, want %s and %q", tc.verdict, got.Status, got.Message, tc.status, tc.says)
		}
	}
}

// TestInterruptedStopsAtOnce: Ctrl-C (the context ending) stops the checks
// and prints nothing half-done.
func TestInterruptedStopsAtOnce(t *testing.T) {
	f := clitest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	failed, err := Run(ctx, f.Env(t), output.Table, &out)
	if err == nil || !failed || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("failed %v, err %v", failed, err)
	}
	if out.Len() != 0 {
		t.Errorf("printed:\n%s", out.String())
	}
}
