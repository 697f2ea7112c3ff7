package migrate

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// obj builds an original object: kind, namespace/name, owner (kind, uid),
// spec and status.
func obj(kind, ns, name, ownerKind, ownerUID string, spec, status map[string]any) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"spec": spec, "status": status}}
	u.SetAPIVersion("openstack.org/v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	if ownerKind != "" {
		u.SetOwnerReferences([]metav1.OwnerReference{{Kind: ownerKind, Name: name, UID: types.UID(ownerUID)}})
	}
	return u
}

// vif is an os-vif primitive as the original stores it.
func vif(kind, id string, def bool) map[string]any {
	return map[string]any{"default": def, "vif": map[string]any{
		"versioned_object.name": kind, "versioned_object.namespace": "os_vif", "versioned_object.version": "1.0",
		ovoData: map[string]any{"id": id, "address": "fa:16:3e:00:00:01", "active": true, "plugin": "ovs"},
	}}
}

func TestTranslate(t *testing.T) {
	o := Original{
		Ports: []unstructured.Unstructured{
			obj("KuryrPort", "a", "web", "Pod", "pu1", map[string]any{"podUid": "pu1", "podNodeName": "n1"},
				map[string]any{"vifs": map[string]any{"eth0": vif("VIFOpenVSwitch", "port1", true)}}),
			obj("KuryrPort", "a", "multi", "Pod", "pu2", map[string]any{"podUid": "pu2", "podNodeName": "n2"},
				map[string]any{"vifs": map[string]any{"eth0": vif("VIFVlanNested", "port2", true), "eth1": vif("VIFVlanNested", "port3", false)}}),
			obj("KuryrPort", "a", "pending", "Pod", "pu3", map[string]any{"podUid": "pu3", "podNodeName": "n1"},
				map[string]any{"vifs": map[string]any{}}),
			obj("KuryrPort", "a", "dpdk", "Pod", "pu4", map[string]any{"podUid": "pu4", "podNodeName": "n1"},
				map[string]any{"vifs": map[string]any{"eth0": vif("VIFDPDKNested", "port4", true)}}),
		},
		Networks: []unstructured.Unstructured{
			obj("KuryrNetwork", "a", "a", "", "", map[string]any{"nsName": "a", "projectId": "p"},
				map[string]any{"netId": "net1", "subnetId": "sub1", "routerId": "r", "subnetCIDR": "10.1.0.0/24"}),
			obj("KuryrNetwork", "b", "b", "", "", map[string]any{"nsName": "b", "projectId": "p"}, map[string]any{}),
		},
		LoadBalancers: []unstructured.Unstructured{
			obj("KuryrLoadBalancer", "a", "svc", "Service", "su1", map[string]any{"ip": "10.2.0.10"}, map[string]any{
				"loadbalancer":        map[string]any{"id": "lb1", "ip": "10.2.0.10", "provider": "ovn"},
				"listeners":           []any{map[string]any{"id": "l1"}, map[string]any{"id": "l2"}},
				"pools":               []any{map[string]any{"id": "p1"}},
				"service_pub_ip_info": map[string]any{"ip_id": "fip1", "ip_addr": "172.24.4.5", "alloc_method": "pool"},
			}),
			obj("KuryrLoadBalancer", "a", "orphan", "", "", map[string]any{}, map[string]any{"loadbalancer": map[string]any{"id": "lb2"}}),
		},
		Policies: []unstructured.Unstructured{
			obj("KuryrNetworkPolicy", "a", "deny", "NetworkPolicy", "nu1", map[string]any{}, map[string]any{"securityGroupId": "sg1"}),
		},
	}
	rec, problems := Translate(o)
	wantPorts := []PortRecord{
		{Ref: Ref{"a", "web", "pu1"}, Node: "n1", PortID: "port1"},
		{Ref: Ref{"a", "multi", "pu2"}, Node: "n2", PortID: "port2", Extra: []string{"port3"}},
	}
	if !reflect.DeepEqual(rec.Ports, wantPorts) {
		t.Errorf("ports %+v, want %+v", rec.Ports, wantPorts)
	}
	if want := []NetworkRecord{{"a", "net1", "sub1", "r"}}; !reflect.DeepEqual(rec.Networks, want) {
		t.Errorf("networks %+v, want %+v", rec.Networks, want)
	}
	wantSvc := []ServiceRecord{{Ref: Ref{"a", "svc", "su1"}, LoadBalancerID: "lb1", VIP: "10.2.0.10", Provider: "ovn",
		Listeners: []string{"l1", "l2"}, Pools: []string{"p1"}, FloatingIPID: "fip1", FloatingIP: "172.24.4.5", FloatingIPAllocated: true}}
	if !reflect.DeepEqual(rec.Services, wantSvc) {
		t.Errorf("services %+v, want %+v", rec.Services, wantSvc)
	}
	if want := []PolicyRecord{{Ref{"a", "deny", "nu1"}, "sg1"}}; !reflect.DeepEqual(rec.Policies, want) {
		t.Errorf("policies %+v, want %+v", rec.Policies, want)
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{"a/multi: interfaces other than eth0", "KuryrPort a/dpdk: nested-dpdk", "KuryrLoadBalancer a/orphan: no ownerReference"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems %q lack %q", all, want)
		}
	}
	if want := []string{"port3", "port4"}; !reflect.DeepEqual(rec.Kept, want) {
		t.Errorf("kept %v, want %v (other interfaces, pods not migrated)", rec.Kept, want)
	}
	if len(problems) != 3 {
		t.Errorf("%d problems, want 3: %q", len(problems), problems)
	}
}

func TestPythonConf(t *testing.T) {
	p, err := parsePythonConf(`[DEFAULT]
debug = True
[kubernetes]
pod_subnets_driver = namespace
enabled_handlers = vif,endpoints,service,kuryrloadbalancer,kuryrport
[neutron_defaults]
resource_tags = k8s, cluster-a
project = p1
service_subnet = svc
[namespace_subnet]
pod_router = r1
pod_subnet_pool = pool1
`)
	if err != nil {
		t.Fatal(err)
	}
	want := pythonConf{Tags: []string{"k8s", "cluster-a"}, Project: "p1", ServiceSubnet: "svc", SubnetsDriver: "namespace",
		VIFDriver: "neutron-vif", Router: "r1", SubnetPool: "pool1", Provider: "default", Algorithm: "ROUND_ROBIN"}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("parsed %+v, want %+v", p, want)
	}
	ours := func(mut func(c *config.Config)) *config.Config {
		c := &config.Config{}
		c.Kubernetes.PodSubnetsDriver = "namespace"
		c.NeutronDefaults.Project, c.NeutronDefaults.ServiceSubnet = "p1", "svc"
		c.NamespaceSubnet.PodRouter, c.NamespaceSubnet.PodSubnetPool = "r1", "pool1"
		mut(c)
		return c
	}
	for _, tc := range []struct {
		name        string
		mut         func(c *config.Config)
		fail, warns int
	}{
		{"agree", func(*config.Config) {}, 0, 0},
		{"other driver", func(c *config.Config) { c.Kubernetes.PodSubnetsDriver = "default" }, 1, 0},
		{"other router", func(c *config.Config) { c.NamespaceSubnet.PodRouter = "r2" }, 1, 0},
		{"other pool", func(c *config.Config) { c.NamespaceSubnet.PodSubnetPool = "pool2" }, 0, 1},
		{"other service subnet", func(c *config.Config) { c.NeutronDefaults.ServiceSubnet = "" }, 1, 0},
		{"other provider", func(c *config.Config) { c.OctaviaDefaults.Provider = "ovn" }, 0, 1},
		{"other algorithm", func(c *config.Config) { c.OctaviaDefaults.Algorithm = "SOURCE_IP_PORT" }, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fails, warns := compare(p, ours(tc.mut))
			if len(fails) != tc.fail || len(warns) != tc.warns {
				t.Errorf("fails %q, warnings %q; want %d and %d", fails, warns, tc.fail, tc.warns)
			}
		})
	}
}

// TestCompareTheirs: what the original had that kuryr must have too.
func TestCompareTheirs(t *testing.T) {
	ours := &config.Config{}
	ours.Kubernetes.PodSubnetsDriver = "default"
	ours.NeutronDefaults.PodSubnet = "pods"
	for _, tc := range []struct {
		name        string
		p           pythonConf
		fail, warns int
	}{
		{"floating IPs without kuryr's external network", pythonConf{SubnetsDriver: "default", VIFDriver: "neutron-vif",
			Provider: "default", ExternalNet: "public"}, 1, 0},
		{"nested-macvlan", pythonConf{SubnetsDriver: "default", VIFDriver: "nested-macvlan", Provider: "default"}, 1, 0},
		{"nested-vlan", pythonConf{SubnetsDriver: "default", VIFDriver: "nested-vlan", Provider: "default"}, 0, 0},
		{"another pod subnet", pythonConf{SubnetsDriver: "default", VIFDriver: "neutron-vif", Provider: "default", PodSubnet: "x"}, 1, 0},
	} {
		fails, warns := compare(tc.p, ours)
		if len(fails) != tc.fail || len(warns) != tc.warns {
			t.Errorf("%s: fails %q, warnings %q; want %d and %d", tc.name, fails, warns, tc.fail, tc.warns)
		}
	}
}

// TestCRDOwner: kuryr's CRDs have a status subresource, the original's
// none (a CRD without subresources at all must not panic).
func TestCRDOwner(t *testing.T) {
	crd := func(version map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"versions": []any{version}}}}
	}
	for _, tc := range []struct {
		version map[string]any
		want    string
	}{
		{map[string]any{"name": "v1"}, "original"},
		{map[string]any{"name": "v1", "subresources": map[string]any{}}, "original"},
		{map[string]any{"name": "v1", "subresources": map[string]any{"status": map[string]any{}}}, "kuryr"},
	} {
		if got := crdOwner(crd(tc.version)); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.version, got, tc.want)
		}
	}
}

func TestPortVerdict(t *testing.T) {
	ready := []metav1.Condition{{Type: kuryrv1.ConditionReady, Status: metav1.ConditionTrue}}
	kp := func(uid, port string, conds []metav1.Condition) *kuryrv1.KuryrPort {
		return &kuryrv1.KuryrPort{Spec: kuryrv1.KuryrPortSpec{PodUID: uid}, Status: kuryrv1.KuryrPortStatus{
			VIFs: map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: {PortID: port}}, Conditions: conds}}
	}
	rec := map[string]string{"u1": "p1"}
	for _, tc := range []struct {
		name   string
		exists bool
		kp     *kuryrv1.KuryrPort
		want   verdict
	}{
		{"none yet", false, &kuryrv1.KuryrPort{}, waiting},
		{"not ready", true, kp("u1", "p1", nil), waiting},
		{"another pod's", true, kp("u9", "p1", ready), waiting},
		{"adopted", true, kp("u1", "p1", ready), owned},
		{"replaced", true, kp("u1", "p2", ready), replaced},
	} {
		if got := portVerdict(tc.exists, tc.kp, "u1", rec); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func port(owner string, tags ...string) neutron.Port {
	var p neutron.Port
	p.DeviceOwner, p.Tags = owner, tags
	return p
}

func TestPooled(t *testing.T) {
	for _, tc := range []struct {
		p    neutron.Port
		want bool
	}{
		{port("compute:kuryr"), true},
		{port("trunk:subport"), true},
		{port("compute:kuryr", names.ClusterTag("c")), false},
		{port("compute:nova"), false},
	} {
		if got := pooled(tc.p, "c"); got != tc.want {
			t.Errorf("pooled(%+v) = %v", tc.p, got)
		}
	}
}
