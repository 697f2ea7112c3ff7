package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
)

// DEL needs nothing of CNI_ARGS: garbage, unknown keys or none at all must
// not make a runtime's teardown fail forever.
func TestDelWithoutUsableArgs(t *testing.T) {
	for _, args := range []string{"", "garbage;;==", "IgnoreUnknown=0;FOO=bar", "K8S_POD_NAME"} {
		d, o, _ := newDaemon()
		d.Registry.Set(kuryrPort("web", "u1"))
		if _, cerr := d.Handle(context.Background(), request("ADD", "web", "u1", "c1")); cerr != nil {
			t.Fatal(cerr)
		}
		req := request("DEL", "web", "u1", "c1")
		req.Args = args
		if _, cerr := d.Handle(context.Background(), req); cerr != nil {
			t.Errorf("DEL with CNI_ARGS %q: %v", args, cerr)
		}
		if len(o.ports) != 0 {
			t.Errorf("DEL with CNI_ARGS %q left %v", args, o.ports)
		}
	}
}

// ADD accepts unknown CNI_ARGS keys whatever IgnoreUnknown says.
func TestAddIgnoresUnknownArgs(t *testing.T) {
	d, _, _ := newDaemon()
	d.Registry.Set(kuryrPort("web", "u1"))
	req := request("ADD", "web", "u1", "c1")
	req.Args = "IgnoreUnknown=0;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_UID=u1;SOMETHING_NEW=1"
	if _, cerr := d.Handle(context.Background(), req); cerr != nil {
		t.Error(cerr)
	}
}

// A DEL of an old sandbox is never queued behind an ADD of the pod's new
// sandbox that waits for its port data.
func TestDelNotQueuedBehindPendingAdd(t *testing.T) {
	d, o, _ := newDaemon()
	d.PortTimeout = 30 * time.Second
	d.Registry.Set(kuryrPort("web", "u1"))
	if _, cerr := d.Handle(context.Background(), request("ADD", "web", "u1", "old")); cerr != nil {
		t.Fatal(cerr)
	}
	kp := kuryrPort("web", "u2")
	kp.Status.VIFs = nil // the new pod's port is not there yet
	d.Registry.Set(kp)
	go func() { _, _ = d.Handle(context.Background(), request("ADD", "web", "u2", "new")) }()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if _, cerr := d.Handle(context.Background(), request("DEL", "web", "u1", "old")); cerr != nil {
		t.Fatal(cerr)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("DEL of the old sandbox took %s behind the pending ADD", took)
	}
	if len(o.ports) != 0 {
		t.Errorf("the old sandbox is still plugged: %v", o.ports)
	}
}

// GC decides under the host interface's lock on what OVS says then: a
// sandbox plugged between its decision to remove an older one and the
// removal (valid, on the same host interface) stays.
func TestGCKeepsSandboxPluggedAfterListing(t *testing.T) {
	d, o, _ := newDaemon()
	d.Registry.Set(kuryrPort("web", "u1"))
	if _, cerr := d.Handle(context.Background(), request("ADD", "web", "u1", "old")); cerr != nil {
		t.Fatal(cerr)
	}
	o.onList = func(call int) {
		// Call 1 is GC's listing, 2 the look before taking the lock.
		if call == 2 {
			if _, cerr := d.Handle(context.Background(), request("ADD", "web", "u1", "new")); cerr != nil {
				t.Error(cerr)
			}
		}
	}
	req := request("GC", "", "", "")
	req.Config = []byte(`{"cniVersion":"1.1.0","name":"kuryr","cni.dev/valid-attachments":[{"containerID":"new","ifname":"eth0"}]}`)
	if _, cerr := d.Handle(context.Background(), req); cerr != nil {
		t.Fatal(cerr)
	}
	if p, ok := o.ports[hostIf("web")]; !ok || p.ContainerID != "new" {
		t.Errorf("GC removed the valid sandbox plugged after its listing: %v", o.ports)
	}
}

// A pooled port goes from pod x to pod y on the same node: x's late DEL
// and y's ADD contend for the same host interface, and x's DEL must not
// unplug y.
func TestLateDelOfPreviousHolderKeepsNewPod(t *testing.T) {
	d, o, k := newDaemon()
	x := kuryrPort("x", "ux")
	y := kuryrPort("y", "uy")
	y.Status.VIFs = x.Status.DeepCopy().VIFs // the same port
	d.Registry.Set(x)
	d.Registry.Set(y)
	if _, cerr := d.Handle(context.Background(), request("ADD", "x", "ux", "cx")); cerr != nil {
		t.Fatal(cerr)
	}
	tap := hostIf("x")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, cerr := d.Handle(context.Background(), request("ADD", "y", "uy", "cy")); cerr != nil {
			t.Error(cerr)
		}
	}()
	time.Sleep(5 * time.Millisecond) // y's plug is creating its veth
	if _, cerr := d.Handle(context.Background(), request("DEL", "x", "ux", "cx")); cerr != nil {
		t.Fatal(cerr)
	}
	<-done
	if p, ok := o.ports[tap]; !ok || p.ContainerID != "cy" {
		t.Errorf("OVS port after x's DEL: %+v", o.ports)
	}
	if ns, ok := k.veth(tap); !ok || ns != "/run/netns/cy" {
		t.Errorf("y's veth removed by x's DEL (%q, %v)", ns, ok)
	}
}

// A static pod's CNI requests carry the kubelet's UID (its config hash),
// which the KuryrPort of its mirror pod records.
func TestStaticPodMatchedByKubeletUID(t *testing.T) {
	d, o, _ := newDaemon()
	kp := kuryrPort("etcd-n1", "mirror-uid")
	kp.Spec.PodStatic, kp.Spec.KubeletPodUID = true, "3f2a9c0d5e"
	d.Registry.Set(kp)
	if _, cerr := d.Handle(context.Background(), request("ADD", "etcd-n1", "3f2a9c0d5e", "c1")); cerr != nil {
		t.Fatal(cerr)
	}
	if _, ok := o.ports[hostIf("etcd-n1")]; !ok {
		t.Errorf("static pod not plugged: %v", o.ports)
	}
	d.PortTimeout = 50 * time.Millisecond
	_, cerr := d.Handle(context.Background(), request("ADD", "etcd-n1", "another-uid", "c2"))
	if cerr == nil || cerr.Code != types.ErrTryAgainLater {
		t.Errorf("a request of another pod matched the static pod's KuryrPort: %v", cerr)
	}
}
