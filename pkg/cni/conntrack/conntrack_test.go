package conntrack

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// A dump of the local cloud's client node: a SYN sent before the load
// balancer (no NAT), a connection to the current member, one to a member
// that is gone, a UDP flow without NAT, the node's own zone 0, and ICMP.
const dump = `tcp,orig=(src=10.10.0.152,dst=10.96.0.78,sport=54774,dport=80),reply=(src=10.96.0.78,dst=10.10.0.152,sport=80,dport=54774),zone=12,mark=2,protoinfo=(state=SYN_SENT)
tcp,orig=(src=10.10.0.152,dst=10.96.0.78,sport=54776,dport=80),reply=(src=10.10.0.243,dst=10.10.0.152,sport=8080,dport=54776),zone=12,mark=2,protoinfo=(state=ESTABLISHED)
tcp,orig=(src=10.10.0.152,dst=10.96.0.78,sport=54778,dport=80),reply=(src=10.10.0.9,dst=10.10.0.152,sport=8080,dport=54778),zone=12,mark=2,protoinfo=(state=ESTABLISHED)
udp,orig=(src=10.10.0.152,dst=10.96.0.78,sport=5353,dport=53),reply=(src=10.96.0.78,dst=10.10.0.152,sport=53,dport=5353),zone=12
tcp,orig=(src=10.11.0.138,dst=10.96.0.78,sport=41000,dport=80),reply=(src=10.96.0.78,dst=10.11.0.138,sport=80,dport=41000),protoinfo=(state=SYN_SENT)
tcp,orig=(src=10.10.0.152,dst=10.96.0.99,sport=54780,dport=80),reply=(src=10.96.0.99,dst=10.10.0.152,sport=80,dport=54780),zone=12,protoinfo=(state=SYN_SENT)
icmp,orig=(src=10.10.0.152,dst=10.96.0.81,id=7,type=8,code=0),reply=(src=10.96.0.81,dst=10.10.0.152,id=7,type=0,code=0),zone=12
`

// svc is the Service of readyKLB's load balancer.
var svc = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "svc-uid"},
	Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.78", ClusterIPs: []string{"10.96.0.78"}}}

func readyKLB(gen int64, members ...string) *kuryrv1.KuryrLoadBalancer {
	klb := &kuryrv1.KuryrLoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: gen,
		OwnerReferences: []metav1.OwnerReference{{Kind: "Service", Name: "web", UID: "svc-uid"}}},
		Spec: kuryrv1.KuryrLoadBalancerSpec{IP: "10.96.0.78", Provider: "ovn", Ports: []kuryrv1.LoadBalancerPort{
			{Protocol: "TCP", Port: 80}, {Protocol: "UDP", Port: 53}}}}
	for _, m := range members {
		klb.Spec.Ports[0].Members = append(klb.Spec.Ports[0].Members, kuryrv1.LoadBalancerMember{IP: m, Port: 8080})
		klb.Spec.Ports[1].Members = append(klb.Spec.Ports[1].Members, kuryrv1.LoadBalancerMember{IP: m, Port: 53})
	}
	klb.Status.Conditions = []metav1.Condition{{Type: kuryrv1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2}}
	return klb
}

func TestParse(t *testing.T) {
	es := Parse(dump)
	if len(es) != 6 {
		t.Fatalf("%d entries, want 6 (no ICMP): %+v", len(es), es)
	}
	want := Entry{Proto: "udp", Zone: 12, Orig: Tuple{Src: netip.MustParseAddr("10.10.0.152"), Dst: netip.MustParseAddr("10.96.0.78"),
		Sport: 5353, Dport: 53}, Reply: Tuple{Src: netip.MustParseAddr("10.96.0.78"), Dst: netip.MustParseAddr("10.10.0.152"), Sport: 53, Dport: 5353}}
	if es[3] != want {
		t.Fatalf("entry %+v\nwant  %+v", es[3], want)
	}
	if got := strings.Join(es[0].FlushArgs(), " "); got != "zone=12 ct_nw_src=10.10.0.152,ct_nw_dst=10.96.0.78,ct_nw_proto=6,ct_tp_src=54774,ct_tp_dst=80" {
		t.Fatalf("flush args %q", got)
	}
}

func TestStale(t *testing.T) {
	amphora := readyKLB(2, "10.10.0.243")
	amphora.Spec.Provider = "amphora"
	hostile := readyKLB(2, "10.10.0.243")
	hostile.Spec.IP = "10.10.0.152" // a pod's address, not the Service's ClusterIP
	other := readyKLB(2, "10.10.0.243")
	other.OwnerReferences[0].UID = "someone-else"
	for _, tc := range []struct {
		name string
		klbs []*kuryrv1.KuryrLoadBalancer
		want []int // source ports of the stale entries
	}{
		{"ready with one member: the untranslated SYN and datagram, and the gone member's",
			[]*kuryrv1.KuryrLoadBalancer{readyKLB(2, "10.10.0.243")}, []int{54774, 54778, 5353}},
		{"not ready for its current spec: nothing", []*kuryrv1.KuryrLoadBalancer{readyKLB(3, "10.10.0.243")}, nil},
		{"no member: nothing (the refuse port answers)", []*kuryrv1.KuryrLoadBalancer{readyKLB(2)}, nil},
		{"an amphora: nothing (OVN translates nothing)", []*kuryrv1.KuryrLoadBalancer{amphora}, nil},
		{"a VIP that is not the Service's ClusterIP: nothing", []*kuryrv1.KuryrLoadBalancer{hostile}, nil},
		{"not the Service's own: nothing", []*kuryrv1.KuryrLoadBalancer{other}, nil},
		{"two on one address: stale only for both", []*kuryrv1.KuryrLoadBalancer{readyKLB(2, "10.10.0.243"), readyKLB(2, "10.10.0.9")},
			[]int{54774, 5353}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var services []*Service
			for _, k := range tc.klbs {
				if s := Served(k, svc); s != nil {
					services = append(services, s)
				}
			}
			var got []int
			for _, e := range Stale(Parse(dump), services) {
				got = append(got, e.Orig.Sport)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("stale %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeCtl answers dumps with dump and records flushes.
type fakeCtl struct {
	mu      sync.Mutex
	flushed []string
	dumps   int
}

func (c *fakeCtl) Call(_ context.Context, method string, params ...string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if method == "dpctl/dump-conntrack" {
		c.dumps++
		return dump, nil
	}
	c.flushed = append(c.flushed, strings.Join(params, " "))
	return "", nil
}

// A change is reviewed at once and at each recheck; an unchanged Service
// is not reviewed again before the sweep.
func TestFlusherSchedule(t *testing.T) {
	now := time.Unix(1000, 0)
	c := &fakeCtl{}
	f := NewFlusher(c)
	f.Now = func() time.Time { return now }
	f.Set("shop/web", Served(readyKLB(2, "10.10.0.243"), svc))
	if got := len(f.take(false)); got != 1 {
		t.Fatalf("%d due at once, want 1", got)
	}
	if got := len(f.take(false)); got != 0 {
		t.Fatalf("%d due again at once, want 0", got)
	}
	if d := f.next(); d != Rechecks[0] {
		t.Fatalf("next look in %s, want %s", d, Rechecks[0])
	}
	now = now.Add(Rechecks[len(Rechecks)-1])
	if got := len(f.take(false)); got != 1 {
		t.Fatalf("%d due at the rechecks, want 1", got)
	}
	f.Set("shop/web", Served(readyKLB(2, "10.10.0.243"), svc)) // no change
	if got := len(f.take(false)); got != 1 {                   // the last recheck is still due
		t.Fatalf("%d due, want the last recheck", got)
	}
	if got := len(f.take(false)); got != 0 {
		t.Fatalf("%d due after the rechecks, want 0", got)
	}
	if err := f.review(context.Background(), f.take(true)); err != nil {
		t.Fatal(err)
	}
	if len(c.flushed) != 3 || c.dumps != 1 {
		t.Fatalf("%d dumps, flushed %q", c.dumps, c.flushed)
	}
	f.Set("shop/web", nil)
	if got := len(f.take(true)); got != 0 {
		t.Fatalf("%d Services after removal", got)
	}
}

// Unixctl speaks JSON-RPC to a socket that answers as ovs-vswitchd does.
func TestUnixctl(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "ovs-vswitchd.ctl"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var req request
			_ = json.NewDecoder(c).Decode(&req)
			var resp map[string]any
			if req.Method == "dpctl/dump-conntrack" {
				resp = map[string]any{"result": "tcp,orig=()\n", "error": nil, "id": req.ID}
			} else {
				resp = map[string]any{"result": nil, "error": "\"" + req.Method + "\" is not a valid command", "id": req.ID}
			}
			_ = json.NewEncoder(c).Encode(resp)
			c.Close()
		}
	}()
	u := &Unixctl{Dir: dir}
	out, err := u.Call(context.Background(), "dpctl/dump-conntrack")
	if err != nil || out != "tcp,orig=()\n" {
		t.Fatalf("dump: %q, %v", out, err)
	}
	if _, err := u.Call(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), "not a valid command") {
		t.Fatalf("unknown command: %v", err)
	}
}
