package policy

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPolicyTypes(t *testing.T) {
	egressRule := []networkingv1.NetworkPolicyEgressRule{{}}
	for _, tc := range []struct {
		name            string
		spec            networkingv1.NetworkPolicySpec
		ingress, egress bool
	}{
		{"none listed, no egress rules: ingress only", networkingv1.NetworkPolicySpec{}, true, false},
		{"none listed, egress rules: both", networkingv1.NetworkPolicySpec{Egress: egressRule}, true, true},
		{"egress only", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Egress"}}, false, true},
		{"both listed", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress"}}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, out := policyTypes(&networkingv1.NetworkPolicy{Spec: tc.spec})
			if in != tc.ingress || out != tc.egress {
				t.Fatalf("ingress %v egress %v, want %v %v", in, out, tc.ingress, tc.egress)
			}
		})
	}
}

func TestTranslate(t *testing.T) {
	tcp, udp, sctp := corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP
	port := func(p int) *intstr.IntOrString { v := intstr.FromInt32(int32(p)); return &v }
	name := func(n string) *intstr.IntOrString { v := intstr.FromString(n); return &v }
	end := func(e int32) *int32 { return &e }
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	prod := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	named := func(dir, n string, _ *Peer) []Port {
		if n == "http" {
			return []Port{{tcp, 8080}, {tcp, 8081}, {udp, 8080}}
		}
		return nil
	}
	policy := func(spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "p"}, Spec: spec}
	}
	in := func(proto string, lo, hi int, cidr string, p *Peer) Rule {
		return Rule{Direction: Ingress, Protocol: proto, PortMin: lo, PortMax: hi, CIDR: cidr, Peer: p}
	}
	out := func(proto string, lo, hi int, cidr string, p *Peer) Rule {
		r := in(proto, lo, hi, cidr, p)
		r.Direction = Egress
		return r
	}
	for _, tc := range []struct {
		name     string
		spec     networkingv1.NetworkPolicySpec
		want     []Rule
		warnings int
	}{
		{"deny all ingress", networkingv1.NetworkPolicySpec{}, nil, 0},
		{"allow all ingress", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{}}},
			[]Rule{in("", 0, 0, "0.0.0.0/0", nil), in("", 0, 0, "::/0", nil)}, 0},
		{"pods of the namespace, a port", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: web}}, Ports: []networkingv1.NetworkPolicyPort{{Port: port(80)}}}}},
			[]Rule{in("tcp", 80, 80, "", &Peer{Namespace: "shop", Pods: web})}, 0},
		{"namespace AND pod selector in one peer; OR as two peers", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: prod, PodSelector: web}, {NamespaceSelector: prod}}}}},
			[]Rule{in("", 0, 0, "", &Peer{Namespaces: prod, Pods: web}), in("", 0, 0, "", &Peer{Namespaces: prod})}, 0},
		{"ipBlock with except", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/24", Except: []string{"10.0.0.0/26"}}}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: port(53)}}}}},
			[]Rule{in("udp", 53, 53, "10.0.0.64/26", nil), in("udp", 53, 53, "10.0.0.128/25", nil)}, 0},
		{"port range and SCTP, protocol only", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Port: port(8000), EndPort: end(8099)}, {Protocol: &sctp}}}}},
			[]Rule{in("tcp", 8000, 8099, "0.0.0.0/0", nil), in("tcp", 8000, 8099, "::/0", nil),
				in("sctp", 0, 0, "0.0.0.0/0", nil), in("sctp", 0, 0, "::/0", nil)}, 0},
		{"named port: its numbers for the protocol", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}, Ports: []networkingv1.NetworkPolicyPort{{Port: name("http")}, {Port: name("nope")}}}}},
			[]Rule{in("tcp", 8080, 8080, "", &Peer{Namespace: "shop", Pods: &metav1.LabelSelector{}}),
				in("tcp", 8081, 8081, "", &Peer{Namespace: "shop", Pods: &metav1.LabelSelector{}})}, 0},
		{"egress only, to a namespace", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Egress"},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{}}, // ignored: not a listed type
			Egress:  []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}}}},
			[]Rule{out("", 0, 0, "", &Peer{Namespaces: &metav1.LabelSelector{}})}, 0},
		{"bad ipBlock and backwards range: nothing, with warnings", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "nonsense"}}},
			Ports: []networkingv1.NetworkPolicyPort{{Port: port(90), EndPort: end(80)}}}}}, nil, 2},
		{"duplicate rules once", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{
			{From: []networkingv1.NetworkPolicyPeer{{PodSelector: web}}}, {From: []networkingv1.NetworkPolicyPeer{{PodSelector: web}}}}},
			[]Rule{in("", 0, 0, "", &Peer{Namespace: "shop", Pods: web})}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Translate(policy(tc.spec), named)
			got := map[string]bool{}
			for _, r := range d.Rules {
				got[r.Key()] = true
			}
			want := map[string]bool{}
			for _, r := range tc.want {
				want[r.Key()] = true
			}
			if !reflect.DeepEqual(got, want) || len(d.Rules) != len(tc.want) {
				t.Errorf("rules:\n got %v\nwant %v", got, want)
			}
			if len(d.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", d.Warnings, tc.warnings)
			}
		})
	}
}
