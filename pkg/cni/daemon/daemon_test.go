package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

type fakeOVS struct {
	mu    sync.Mutex
	ports map[string]ovs.Port
	dels  []string
	lists int
	// onList, when set, runs after each Ports call has read, with the
	// call's number (1 for the first).
	onList func(call int)
}

func (f *fakeOVS) AddPort(_ context.Context, p ovs.Port) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ports[p.Name] = p
	return nil
}

func (f *fakeOVS) DelPort(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ports, name)
	f.dels = append(f.dels, name)
	return nil
}

func (f *fakeOVS) Ports(context.Context) ([]ovs.Port, error) {
	f.mu.Lock()
	var out []ovs.Port
	for _, p := range f.ports {
		out = append(out, p)
	}
	f.lists++
	hook, call := f.onList, f.lists
	f.mu.Unlock()
	if hook != nil {
		hook(call)
	}
	return out, nil
}

func (f *fakeOVS) WaitInstalled(context.Context, string, time.Duration) error { return nil }

type fakeKernel struct {
	active, maxActive atomic.Int32
	created           atomic.Int32
	removedPodIfs     []string
	mu                sync.Mutex
	veths             map[string]string // host interface -> netns
	nested            []plug.Nested
	shimRoutes        []string
}

func (k *fakeKernel) CreateVeth(v plug.Veth) error {
	n := k.active.Add(1)
	defer k.active.Add(-1)
	if n > k.maxActive.Load() {
		k.maxActive.Store(n)
	}
	// The pair exists from the start of the plug, as a real one does.
	k.mu.Lock()
	k.veths[v.HostIf] = v.Netns
	k.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	k.created.Add(1)
	return nil
}
func (k *fakeKernel) CreateNested(n plug.Nested) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.veths[n.TempName] = n.Netns
	k.nested = append(k.nested, n)
	return nil
}
func (k *fakeKernel) DefaultRouteLink() (string, error) { return "ens3", nil }
func (k *fakeKernel) RouteViaShim(_ string, ip net.IP) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.shimRoutes = append(k.shimRoutes, ip.String())
	return nil
}
func (k *fakeKernel) ShimRouted(ip net.IP) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Contains(k.shimRoutes, ip.String()), nil
}
func (k *fakeKernel) UnrouteViaShim(ip net.IP) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.shimRoutes = slices.DeleteFunc(k.shimRoutes, func(s string) bool { return s == ip.String() })
	return nil
}
func (k *fakeKernel) DeleteVeth(hostIf string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.veths, hostIf)
}
func (k *fakeKernel) veth(hostIf string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ns, ok := k.veths[hostIf]
	return ns, ok
}
func (k *fakeKernel) CheckNetns(path string) error {
	if strings.HasPrefix(path, "/run/netns/") {
		return nil
	}
	return errors.New("not a network namespace")
}
func (k *fakeKernel) RemovePodIf(netns, _ string) error {
	k.removedPodIfs = append(k.removedPodIfs, netns)
	return nil
}
func (k *fakeKernel) Inspect(string, string, net.IP) (plug.Observed, error) {
	return plug.Observed{}, nil
}

func newDaemon() (*Daemon, *fakeOVS, *fakeKernel) {
	o, k := &fakeOVS{ports: map[string]ovs.Port{}}, &fakeKernel{veths: map[string]string{}}
	return &Daemon{
		Registry: NewRegistry(), OVS: o, Kernel: k, Bridge: "br-int",
		PortTimeout: 2 * time.Second, UsableTimeout: time.Second, Usable: UsableOVNInstalled,
		Ready: func() error { return nil },
	}, o, k
}

// portID is a port id per pod name.
func portID(name string) string { return uuid.NewSHA1(uuid.NameSpaceOID, []byte(name)).String() }

// hostIf is the host interface of a pod's port.
func hostIf(name string) string { return kuryrv1.HostIfName(portID(name)) }

func kuryrPort(name, uid string) *kuryrv1.KuryrPort {
	return &kuryrv1.KuryrPort{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       kuryrv1.KuryrPortSpec{PodUID: uid, PodNodeName: "n1"},
		Status: kuryrv1.KuryrPortStatus{VIFs: map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: {
			PortID: portID(name), MACAddress: "fa:16:3e:00:00:01", VIFName: "ignored", Bridge: "br-ex", MTU: 1442, Default: true,
			IPs: []kuryrv1.IPAddress{{Address: "10.10.0.5/24"}}, Gateway: "10.10.0.1",
		}}},
	}
}

func request(cmd, name, uid, container string) *api.Request {
	return &api.Request{Command: cmd, ContainerID: container, Netns: "/run/netns/" + container, IfName: "eth0",
		Args:   "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=" + name + ";K8S_POD_UID=" + uid,
		Config: []byte(`{"cniVersion":"1.0.0","name":"kuryr","type":"kuryr-cni"}`)}
}

func TestAddWaitsForPortData(t *testing.T) {
	d, o, _ := newDaemon()
	go func() { time.Sleep(50 * time.Millisecond); d.Registry.Set(kuryrPort("web", "u1")) }()
	raw, cerr := d.Handle(context.Background(), request("ADD", "web", "u1", "c1"))
	if cerr != nil {
		t.Fatal(cerr)
	}
	var r current.Result
	if err := json.Unmarshal(raw, &r); err != nil || r.CNIVersion != "1.0.0" || r.IPs[0].Address.String() != "10.10.0.5/24" {
		t.Errorf("result %s (%v)", raw, err)
	}
	// The name comes from the port id and the bridge from the daemon's
	// configuration, whatever the KuryrPort says.
	if p := o.ports[hostIf("web")]; p.ContainerID != "c1" || p.PortID != portID("web") || p.Bridge != "br-int" || p.PodName != "ns/web" {
		t.Errorf("OVS port %+v", p)
	}
}

func TestAddErrors(t *testing.T) {
	tests := []struct {
		name string
		kp   *kuryrv1.KuryrPort
		req  *api.Request
		code uint
	}{
		{"no port data in time", nil, request("ADD", "web", "u1", "c1"), types.ErrTryAgainLater},
		{"port data of an older pod", kuryrPort("web", "old"), request("ADD", "web", "u1", "c1"), types.ErrTryAgainLater},
		{"no pod in CNI_ARGS", nil, &api.Request{Command: "ADD", ContainerID: "c", Netns: "/run/netns/x", IfName: "eth0",
			Config: []byte(`{"cniVersion":"1.0.0"}`)}, types.ErrInvalidEnvironmentVariables},
		{"no netns", nil, &api.Request{Command: "ADD", ContainerID: "c", IfName: "eth0"}, types.ErrInvalidEnvironmentVariables},
		{"netns not a namespace", nil, &api.Request{Command: "ADD", ContainerID: "c", Netns: "/etc/passwd", IfName: "eth0",
			Config: []byte(`{"cniVersion":"1.0.0"}`)}, types.ErrInvalidEnvironmentVariables},
		{"relative netns", nil, &api.Request{Command: "ADD", ContainerID: "c", Netns: "run/netns/x", IfName: "eth0",
			Config: []byte(`{"cniVersion":"1.0.0"}`)}, types.ErrInvalidEnvironmentVariables},
		{"interface name not allowed", nil, &api.Request{Command: "ADD", ContainerID: "c", Netns: "/run/netns/x", IfName: "../eth0",
			Config: []byte(`{"cniVersion":"1.0.0"}`)}, types.ErrInvalidEnvironmentVariables},
		{"interface name too long", nil, &api.Request{Command: "ADD", ContainerID: "c", Netns: "/run/netns/x", IfName: "eth0123456789abc",
			Config: []byte(`{"cniVersion":"1.0.0"}`)}, types.ErrInvalidEnvironmentVariables},
		{"container id not allowed", nil, &api.Request{Command: "ADD", ContainerID: "c/../x", Netns: "/run/netns/x", IfName: "eth0",
			Config: []byte(`{"cniVersion":"1.0.0"}`)}, types.ErrInvalidEnvironmentVariables},
		{"config without version", nil, &api.Request{Command: "ADD", ContainerID: "c", Netns: "/run/netns/x", IfName: "eth0",
			Config: []byte(`{}`)}, types.ErrInvalidNetworkConfig},
		{"port id not a UUID", withVIF(kuryrPort("web", "u1"), func(v *kuryrv1.VIF) { v.PortID = "../../x" }),
			request("ADD", "web", "u1", "c1"), types.ErrInvalidNetworkConfig},
		{"multicast MAC", withVIF(kuryrPort("web", "u1"), func(v *kuryrv1.VIF) { v.MACAddress = "01:00:5e:00:00:01" }),
			request("ADD", "web", "u1", "c1"), types.ErrInvalidNetworkConfig},
		{"unknown command", nil, &api.Request{Command: "FROB"}, types.ErrInvalidEnvironmentVariables},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, _ := newDaemon()
			d.PortTimeout = 100 * time.Millisecond
			if tt.kp != nil {
				d.Registry.Set(tt.kp)
			}
			_, cerr := d.Handle(context.Background(), tt.req)
			if cerr == nil || cerr.Code != tt.code || cerr.Msg == "" {
				t.Errorf("got %+v, want code %d", cerr, tt.code)
			}
		})
	}
}

func withVIF(kp *kuryrv1.KuryrPort, f func(*kuryrv1.VIF)) *kuryrv1.KuryrPort {
	v := kp.Status.VIFs[kuryrv1.DefaultInterface]
	f(&v)
	kp.Status.VIFs[kuryrv1.DefaultInterface] = v
	return kp
}

func TestAddStopsWaitingWhenThePodGoes(t *testing.T) {
	d, _, _ := newDaemon()
	d.PortTimeout = time.Minute
	kp := kuryrPort("web", "u1")
	kp.Status.VIFs = nil
	d.Registry.Set(kp)
	old := kuryrPort("web", "older-pod") // same name, being deleted: not ours
	go func() {
		time.Sleep(30 * time.Millisecond)
		gone := kp.DeepCopy()
		now := metav1.Now()
		gone.DeletionTimestamp = &now
		old.DeletionTimestamp = &now
		d.Registry.Set(old)
		time.Sleep(30 * time.Millisecond)
		d.Registry.Set(gone)
	}()
	start := time.Now()
	_, cerr := d.Handle(context.Background(), request("ADD", "web", "u1", "c1"))
	if cerr == nil || cerr.Code != types.ErrUnknownContainer || time.Since(start) > 5*time.Second {
		t.Errorf("got %+v after %s", cerr, time.Since(start))
	}
}

func TestStaleDelKeepsNewSandbox(t *testing.T) {
	d, o, k := newDaemon()
	d.Registry.Set(kuryrPort("web", "u1"))
	if _, cerr := d.Handle(context.Background(), request("ADD", "web", "u1", "new")); cerr != nil {
		t.Fatal(cerr)
	}
	if _, cerr := d.Handle(context.Background(), request("DEL", "web", "u1", "old")); cerr != nil {
		t.Fatal(cerr)
	}
	if _, ok := o.ports[hostIf("web")]; !ok || len(o.dels) != 0 {
		t.Errorf("a stale DEL unplugged the new sandbox: ports %v dels %v", o.ports, o.dels)
	}
	if len(k.removedPodIfs) != 1 || k.removedPodIfs[0] != "/run/netns/old" {
		t.Errorf("stale DEL should clean only its own netns, removed %v", k.removedPodIfs)
	}
	for i := 0; i < 2; i++ {
		if _, cerr := d.Handle(context.Background(), request("DEL", "web", "u1", "new")); cerr != nil {
			t.Fatalf("DEL %d: %v", i, cerr)
		}
	}
	if len(o.ports) != 0 {
		t.Errorf("DEL left %v", o.ports)
	}
}

func TestGCKeepsOnlyValidAttachments(t *testing.T) {
	d, o, _ := newDaemon()
	for _, n := range []string{"a", "b"} {
		d.Registry.Set(kuryrPort(n, "u-"+n))
		if _, cerr := d.Handle(context.Background(), request("ADD", n, "u-"+n, "c-"+n)); cerr != nil {
			t.Fatal(cerr)
		}
	}
	req := request("GC", "", "", "")
	req.Config = []byte(`{"cniVersion":"1.1.0","name":"kuryr","cni.dev/valid-attachments":[{"containerID":"c-a","ifname":"eth0"}]}`)
	if _, cerr := d.Handle(context.Background(), req); cerr != nil {
		t.Fatal(cerr)
	}
	if _, ok := o.ports[hostIf("a")]; !ok || len(o.ports) != 1 {
		t.Errorf("after GC: %v", o.ports)
	}
}

func TestStatus(t *testing.T) {
	d, _, _ := newDaemon()
	if _, cerr := d.Handle(context.Background(), &api.Request{Command: "STATUS"}); cerr != nil {
		t.Errorf("ready daemon: %v", cerr)
	}
	d.Ready = func() error { return errors.New("watch not synced") }
	if _, cerr := d.Handle(context.Background(), &api.Request{Command: "STATUS"}); cerr == nil || cerr.Code != api.ErrNotReady {
		t.Errorf("not ready: %+v", cerr)
	}
}

func TestSamePodSerializedOthersConcurrent(t *testing.T) {
	d, _, k := newDaemon()
	for _, n := range []string{"a", "b", "c", "d"} {
		d.Registry.Set(kuryrPort(n, "u-"+n))
	}
	run := func(names ...string) int32 {
		k.maxActive.Store(0)
		var wg sync.WaitGroup
		for i, n := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = d.Handle(context.Background(), request("ADD", n, "u-"+n, "c"+string(rune('0'+i))))
			}()
		}
		wg.Wait()
		return k.maxActive.Load()
	}
	if got := run("a", "a", "a"); got != 1 {
		t.Errorf("same pod: %d plugs at once", got)
	}
	if got := run("a", "b", "c", "d"); got < 2 {
		t.Errorf("different pods: at most %d plug at once", got)
	}
}

func TestResult(t *testing.T) {
	vif := kuryrv1.VIF{PortID: "p", VIFName: "tapp", MACAddress: "fa:16:3e:00:00:01", MTU: 1442, Default: true,
		Gateway: "10.0.0.1", DNS: []string{"10.0.0.53"},
		IPs:    []kuryrv1.IPAddress{{Address: "10.0.0.5/24"}, {Address: "fd00::5/64"}},
		Routes: []kuryrv1.Route{{Destination: "192.168.0.0/16", Gateway: "10.0.0.254"}}}
	r, err := Result(vif, "tapp", "eth0", "/run/netns/x")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Interfaces) != 2 || r.Interfaces[1].Sandbox != "/run/netns/x" || r.Interfaces[1].Mac != vif.MACAddress {
		t.Errorf("interfaces %+v", r.Interfaces)
	}
	if r.IPs[0].Gateway.String() != "10.0.0.1" || r.IPs[1].Gateway != nil {
		t.Errorf("gateways %v %v (an IPv4 gateway must not be given to an IPv6 address)", r.IPs[0].Gateway, r.IPs[1].Gateway)
	}
	if len(r.Routes) != 2 || r.Routes[0].Dst.String() != "0.0.0.0/0" || r.Routes[1].GW.String() != "10.0.0.254" {
		t.Errorf("routes %v", r.Routes)
	}
	if r.DNS.Nameservers[0] != "10.0.0.53" {
		t.Errorf("dns %+v", r.DNS)
	}
	if _, err := Result(kuryrv1.VIF{PortID: "p"}, "tapp", "eth0", "x"); err == nil {
		t.Error("a port without addresses must be an error")
	}
}
