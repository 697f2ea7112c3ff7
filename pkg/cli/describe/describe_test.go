package describe

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/clitest"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
	"github.com/kuryr-k8s/kuryr/pkg/octavia/octaviatest"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		args    []string
		want    Target
		wantErr bool
	}{
		{[]string{"pod/web"}, Target{KindPod, "web"}, false},
		{[]string{"po/web"}, Target{KindPod, "web"}, false},
		{[]string{"pod", "web"}, Target{KindPod, "web"}, false},
		{[]string{"svc/db"}, Target{KindService, "db"}, false},
		{[]string{"service", "db"}, Target{KindService, "db"}, false},
		{[]string{"Services/db"}, Target{KindService, "db"}, false},
		{[]string{"netpol/deny"}, Target{KindNetworkPolicy, "deny"}, false},
		{[]string{"networkpolicy", "deny"}, Target{KindNetworkPolicy, "deny"}, false},
		{[]string{"deployment/x"}, Target{}, true},
		{[]string{"pod/"}, Target{}, true},
		{[]string{"pod/a/b"}, Target{}, true},
		{[]string{"web"}, Target{}, true},
		{[]string{"pod/web", "extra"}, Target{}, true},
		{nil, Target{}, true},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.args)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseTarget(%q) = %+v, %v", tt.args, got, err)
		}
	}
}

const attachments = `{"node":"n1","interfaces":[
 {"interface":"tapport-1","ifaceId":"PORT","attachedMac":"fa:16:3e:00:00:01","ofport":4,"linkState":"up","ovnInstalled":true},
 {"interface":"tapother","ifaceId":"other","ofport":5}]}`

func TestDescribePod(t *testing.T) {
	f := clitest.New(t)
	port := f.Neutron.Add("ports", neutrontest.Object{"name": "default/web", "status": "ACTIVE",
		"binding:host_id": "n1", "binding:vif_type": "ovs", "mac_address": "fa:16:3e:00:00:01",
		"fixed_ips":       []any{map[string]any{"ip_address": "10.10.0.5", "subnet_id": f.PodSubnet}},
		"security_groups": []string{f.PodGroup}, "device_owner": "compute:kuryr",
		"tags": []string{names.ClusterTag(clitest.Cluster)}})
	f.Exec.Out = []byte(strings.ReplaceAll(attachments, "PORT", port))
	f.Objects = append(f.Objects,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.10.0.5"}},
		&kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Status: kuryrv1.KuryrPortStatus{VIFs: map[string]kuryrv1.VIF{"eth0": {PortID: port, Default: true}},
				Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Created"}}}})
	r, err := Pod(context.Background(), f.Env(t), "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ports) != 1 {
		t.Fatalf("ports: %+v", r.Ports)
	}
	p := r.Ports[0]
	if p.Error != "" || p.Status != "ACTIVE" || p.BindingHost != "n1" || p.VIFType != "ovs" || p.DeviceOwner != "compute:kuryr" ||
		len(p.SecurityGroups) != 1 || p.SecurityGroups[0].Name != "pods" || p.FixedIPs[0] != "10.10.0.5 ("+f.PodSubnet+")" {
		t.Errorf("port: %+v", p)
	}
	v := r.NodeView
	if v.Error != "" || v.DaemonPod != "kuryr-daemon-1" || len(v.Attachments) != 1 || !v.Attachments[0].OVNInstalled {
		t.Errorf("node view: %+v", v)
	}
	wantCmd := "kube-system/kuryr-daemon-1:kuryr-daemon /kuryr-daemon attachments --config-file=/etc/kuryr/kuryr.conf --set cni_daemon.node_name=$(KUBERNETES_NODE_NAME)"
	if got := strings.Join(f.Exec.Last, " "); got != wantCmd {
		t.Errorf("exec %q, want %q", got, wantCmd)
	}
	var b bytes.Buffer
	if err := output.Print(&b, output.Table, r, r.table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Node view (n1, through kuryr-daemon-1)", "pods (" + f.PodGroup + ")", "OVN-INSTALLED"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestDescribePodExecFails(t *testing.T) {
	f := clitest.New(t)
	f.Exec.Err = errString("exec: container not found")
	f.Objects = append(f.Objects, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.PodSpec{NodeName: "n2"}})
	r, err := Pod(context.Background(), f.Env(t), "web")
	if err != nil {
		t.Fatal(err)
	}
	if r.KuryrPortError == "" || r.NodeView.Error != "exec: container not found" {
		t.Errorf("report: %+v", r)
	}
	if _, err := Pod(context.Background(), f.Env(t), "absent"); err == nil {
		t.Error("describe of a missing pod succeeded")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestDescribeService(t *testing.T) {
	f := clitest.New(t)
	lb := f.Octavia.Add(octaviatest.LoadBalancers, octaviatest.Object{"name": "default/db", "vip_address": "10.20.0.9",
		"vip_port_id": "vip-port"})
	l := f.Octavia.Add(octaviatest.Listeners, octaviatest.Object{"loadbalancer_id": lb, "protocol": "TCP", "protocol_port": 5432})
	pool := f.Octavia.Add(octaviatest.Pools, octaviatest.Object{"loadbalancer_id": lb, "listener_id": l, "protocol": "TCP",
		"lb_algorithm": "SOURCE_IP_PORT"})
	f.Octavia.Add(octaviatest.Members, octaviatest.Object{"pool_id": pool, "address": "10.10.0.5", "protocol_port": 5432})
	f.Neutron.Add("floatingips", neutrontest.Object{"floating_ip_address": "172.24.4.10", "port_id": "vip-port"})
	f.Objects = append(f.Objects,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.20.0.9",
			Ports: []corev1.ServicePort{{Port: 5432, Protocol: "TCP", TargetPort: intstr.FromInt32(5432)}}}},
		&kuryrv1.KuryrLoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
			Status: kuryrv1.KuryrLoadBalancerStatus{LoadBalancer: &kuryrv1.LoadBalancerState{ID: lb}}})
	r, err := Service(context.Background(), f.Env(t), "db")
	if err != nil {
		t.Fatal(err)
	}
	if r.OpenStackError != "" || r.LoadBalancer == nil || r.LoadBalancer.VIPAddress != "10.20.0.9" {
		t.Fatalf("report: %+v", r)
	}
	if len(r.Listeners) != 1 || r.Listeners[0].Port != 5432 || len(r.Pools) != 1 || len(r.Pools[0].Members) != 1 ||
		r.Pools[0].Algorithm != "SOURCE_IP_PORT" || r.FloatingIP == nil || r.FloatingIP.Address != "172.24.4.10" {
		t.Errorf("report: %+v", r)
	}
	var b bytes.Buffer
	if err := r.table(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TCP/5432", "10.10.0.5:5432", "172.24.4.10", "5432/TCP -> 5432"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestDescribeNetworkPolicy(t *testing.T) {
	f := clitest.New(t)
	peer := f.Neutron.Add("security-groups", neutrontest.Object{"name": "kuryr-peer-abc", "security_group_rules": []any{}})
	group := f.Neutron.Add("security-groups", neutrontest.Object{"name": "default/allow-web", "security_group_rules": []any{
		map[string]any{"id": "r1", "direction": "ingress", "ethertype": "IPv4", "protocol": "tcp",
			"port_range_min": 80, "port_range_max": 80, "remote_group_id": peer},
		map[string]any{"id": "r2", "direction": "ingress", "ethertype": "IPv4", "remote_ip_prefix": "10.0.0.0/8"},
	}})
	member := f.Neutron.Add("ports", neutrontest.Object{"name": "default/client", "security_groups": []string{peer},
		"fixed_ips": []any{map[string]any{"ip_address": "10.10.0.7"}}, "tags": []string{names.ClusterTag(clitest.Cluster)}})
	f.Neutron.Add("ports", neutrontest.Object{"name": "default/other", "security_groups": []string{f.PodGroup},
		"tags": []string{names.ClusterTag(clitest.Cluster)}})
	f.Objects = append(f.Objects, &kuryrv1.KuryrNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "allow-web"},
		Spec: kuryrv1.KuryrNetworkPolicySpec{Ingress: true, Rules: []kuryrv1.PolicyRule{{Direction: "ingress", Protocol: "tcp",
			PortMin: 80, PortMax: 80, Peer: "abc"}}},
		Status: kuryrv1.KuryrNetworkPolicyStatus{SecurityGroupID: group, PeerGroups: map[string]string{"abc": peer},
			Conditions: []metav1.Condition{{Type: "Ready", Status: "True"}}}})
	r, err := NetworkPolicy(context.Background(), f.Env(t), "allow-web")
	if err != nil {
		t.Fatal(err)
	}
	if r.OpenStackError != "" || r.Group == nil || len(r.Group.Rules) != 2 {
		t.Fatalf("report: %+v", r)
	}
	got := map[string]RuleView{}
	for _, x := range r.Group.Rules {
		got[x.Remote] = x
	}
	if x, ok := got["peer abc"]; !ok || x.Ports != "80" {
		t.Errorf("rules: %+v", r.Group.Rules)
	}
	if x, ok := got["10.0.0.0/8"]; !ok || x.Ports != "any" {
		t.Errorf("rules: %+v", r.Group.Rules)
	}
	if len(r.Peers) != 1 || len(r.Peers[0].Ports) != 1 || r.Peers[0].Ports[0].ID != member || r.Peers[0].Group.Name != "kuryr-peer-abc" {
		t.Errorf("peers: %+v", r.Peers)
	}
}

// TestDescribeAddressGroupPeer: a peer that is an address group shows its
// addresses and the ports that have them; the rule naming it shows the
// peer.
func TestDescribeAddressGroupPeer(t *testing.T) {
	f := clitest.New(t)
	ag := f.Neutron.Add("address-groups", neutrontest.Object{"name": "kuryr-peer-abc", "addresses": []string{"10.10.0.7/32"}})
	group := f.Neutron.Add("security-groups", neutrontest.Object{"name": "default/allow-web", "security_group_rules": []any{
		map[string]any{"id": "r1", "direction": "ingress", "ethertype": "IPv4", "protocol": "tcp",
			"port_range_min": 80, "port_range_max": 80, "remote_address_group_id": ag},
	}})
	member := f.Neutron.Add("ports", neutrontest.Object{"name": "default/client",
		"fixed_ips": []any{map[string]any{"ip_address": "10.10.0.7"}}, "tags": []string{names.ClusterTag(clitest.Cluster)}})
	f.Neutron.Add("ports", neutrontest.Object{"name": "default/other",
		"fixed_ips": []any{map[string]any{"ip_address": "10.10.0.8"}}, "tags": []string{names.ClusterTag(clitest.Cluster)}})
	f.Objects = append(f.Objects, &kuryrv1.KuryrNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "allow-web"},
		Spec: kuryrv1.KuryrNetworkPolicySpec{Ingress: true, Rules: []kuryrv1.PolicyRule{{Direction: "ingress", Protocol: "tcp",
			PortMin: 80, PortMax: 80, Peer: "abc"}}},
		Status: kuryrv1.KuryrNetworkPolicyStatus{SecurityGroupID: group, PeerAddressGroups: map[string]string{"abc": ag},
			PeerKind: kuryrv1.PeerKindAddressGroups}})
	r, err := NetworkPolicy(context.Background(), f.Env(t), "allow-web")
	if err != nil {
		t.Fatal(err)
	}
	if r.OpenStackError != "" || r.Group == nil || len(r.Group.Rules) != 1 || r.Group.Rules[0].Remote != "peer abc (address group)" {
		t.Fatalf("report: %+v", r)
	}
	p := r.Peers
	if len(p) != 1 || !p[0].AddressGroup || len(p[0].Ports) != 1 || p[0].Ports[0].ID != member || p[0].Group.Name != "kuryr-peer-abc" {
		t.Errorf("peers: %+v", p)
	}
}

func TestRunJSON(t *testing.T) {
	f := clitest.New(t)
	f.Exec.Out = []byte(`{"node":"n1","interfaces":[]}`)
	f.Objects = append(f.Objects, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.PodSpec{NodeName: "n1"}})
	var b bytes.Buffer
	if err := Run(context.Background(), f.Env(t), []string{"pod", "web"}, output.YAML, &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "name: web") || !strings.Contains(b.String(), "daemonPod: kuryr-daemon-1") {
		t.Errorf("yaml:\n%s", b.String())
	}
}
