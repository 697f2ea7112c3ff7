//go:build e2e

package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/google/uuid"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// cniHarness drives a node's installed kuryr-cni with libcni, as a
// container runtime would, for a KuryrPort that no kubelet plugs.
type cniHarness struct {
	t      *testing.T
	cni    *libcni.CNIConfig
	list   *libcni.NetworkConfigList
	binDir string
	kp     *kuryrv1.KuryrPort
	vif    kuryrv1.VIF
}

func newHarness(t *testing.T, version string) *cniHarness {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	node := c.Nodes[0]
	dir := filepath.Join(os.Getenv("KURYR_CLOUD_NODES_DIR"), node, "cni")
	raw, err := os.ReadFile(filepath.Join(dir, "net.d", "10-kuryr.conflist"))
	if err != nil {
		t.Fatalf("the daemon's installed configuration: %v", err)
	}
	var conf map[string]any
	_ = json.Unmarshal(raw, &conf)
	conf["cniVersion"] = version
	raw, _ = json.Marshal(conf)
	list, err := libcni.ConfListFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	// No pod owns this KuryrPort, so no kubelet plugs its port: the test is
	// the runtime. The controller still creates and deletes the port.
	kp := &kuryrv1.KuryrPort{
		ObjectMeta: metav1.ObjectMeta{Name: framework.Name("libcni"), Namespace: "default",
			Labels: map[string]string{kuryrv1.NodeNameLabel: node}, Finalizers: []string{kuryrv1.KuryrPortFinalizer}},
		Spec: kuryrv1.KuryrPortSpec{PodUID: uuid.NewString(), PodNodeName: node},
	}
	if err := k.Create(context.Background(), kp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), kp) })
	h := &cniHarness{t: t, cni: libcni.NewCNIConfig([]string{filepath.Join(dir, "bin")}, nil), list: list,
		binDir: filepath.Join(dir, "bin")}
	h.kp = k.WaitKuryrPortsByName(t, kp, time.Minute)
	h.vif, _ = h.kp.Status.DefaultVIF()
	return h
}

func (h *cniHarness) rt(containerID string, n ns.NetNS) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: containerID, NetNS: n.Path(), IfName: "eth0", Args: [][2]string{
		{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", h.kp.Namespace}, {"K8S_POD_NAME", h.kp.Name},
		{"K8S_POD_UID", h.kp.Spec.PodUID}, {"K8S_POD_INFRA_CONTAINER_ID", containerID},
	}}
}

func TestLibCNIProtocol(t *testing.T) {
	h := newHarness(t, "1.1.0")
	ctx := context.Background()
	if err := h.cni.GetStatusNetworkList(ctx, h.list); err != nil {
		t.Fatalf("STATUS: %v", err)
	}
	n := framework.NewNetns(t, "libcni")
	rt := h.rt("sandbox-1", n)
	res, err := h.cni.AddNetworkList(ctx, h.list, rt)
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	r, err := current.NewResultFromResult(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.IPs) != 1 || r.IPs[0].Address.String() != h.vif.IPs[0].Address || r.Interfaces[1].Mac != h.vif.MACAddress {
		t.Errorf("ADD result %s, port %+v", r, h.vif)
	}
	if err := h.cni.CheckNetworkList(ctx, h.list, rt); err != nil {
		t.Errorf("CHECK of a good attachment: %v", err)
	}
	// Break the attachment: CHECK must notice.
	_ = n.Do(func(ns.NetNS) error {
		l, _ := netlink.LinkByName("eth0")
		addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
		for _, a := range addrs {
			_ = netlink.AddrDel(l, &a)
		}
		return nil
	})
	if err := h.cni.CheckNetworkList(ctx, h.list, rt); err == nil || !strings.Contains(err.Error(), "address") {
		t.Errorf("CHECK of a broken attachment: %v", err)
	}
	// A stale DEL for an older sandbox leaves the current one alone.
	if err := h.cni.DelNetworkList(ctx, h.list, h.rt("sandbox-0", framework.NewNetns(t, "libcni-old"))); err != nil {
		t.Errorf("stale DEL: %v", err)
	}
	if left := framework.Connect(t).NodeLeftovers(t, h.kp.Spec.PodNodeName); !containsPrefix(left, "ovs:"+h.vif.VIFName) {
		t.Errorf("a stale DEL unplugged the current sandbox: %v", left)
	}
	for i := 0; i < 2; i++ { // DEL is idempotent
		if err := h.cni.DelNetworkList(ctx, h.list, rt); err != nil {
			t.Errorf("DEL %d: %v", i, err)
		}
	}
	if left := framework.Connect(t).NodeLeftovers(t, h.kp.Spec.PodNodeName); containsPrefix(left, "ovs:"+h.vif.VIFName) {
		t.Errorf("DEL left %v", left)
	}
}

// TestLibCNIGarbageCollection: GC removes the attachments the runtime does
// not list and leaves the listed ones. libcni sends a DEL for every
// attachment in its cache that is not listed, and the local cloud's nodes
// share one host, so one cache (/var/lib/cni): this GC, which lists only
// the harness node's attachments, also sends DELs for the other node's
// pods through the harness node's plugin. Those pods must stay on the
// network: a node takes out only what it plugged.
func TestLibCNIGarbageCollection(t *testing.T) {
	h := newHarness(t, "1.1.0")
	c, _, podNS := framework.Setup(t, "e2e-gc")
	var bystanders []*corev1.Pod
	for _, node := range c.Nodes {
		if node != h.kp.Spec.PodNodeName {
			p, err := c.Kube.CoreV1().Pods(podNS).Create(context.Background(), c.TestPod(podNS, "on-"+node, node), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			bystanders = append(bystanders, p)
		}
	}
	bystanders = c.WaitReady(t, bystanders, 2*time.Minute)
	if len(bystanders) == 0 {
		t.Fatal("a cloud of one node: no other node's pod to keep")
	}
	// The GC is only a test of that if libcni's cache holds them (their
	// runtime's ADD, in the host's /var/lib/cni): libcni sends them a DEL.
	for _, p := range bystanders {
		if !cached(t, h.cni, p.Name) {
			t.Fatalf("libcni's cache has no attachment of %s: the GC would not send it a DEL", p.Name)
		}
	}
	ctx := context.Background()
	rt := h.rt("sandbox-gc", framework.NewNetns(t, "libcni-gc"))
	if _, err := h.cni.AddNetworkList(ctx, h.list, rt); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	// The runtime lists every attachment of the node but ours: GC removes
	// ours and leaves the others (the cloud's own pods) alone.
	valid := []types.GCAttachment{}
	var others []string
	for _, a := range c.NodeAttachments(t, h.kp.Spec.PodNodeName) {
		if a.Name != h.vif.VIFName {
			valid = append(valid, types.GCAttachment{ContainerID: a.ContainerID, IfName: a.IfName})
			others = append(others, a.Name)
		}
	}
	if err := h.cni.GCNetworkList(ctx, h.list, &libcni.GCArgs{ValidAttachments: valid}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if left := c.NodeLeftovers(t, h.kp.Spec.PodNodeName); containsPrefix(left, "ovs:"+h.vif.VIFName) {
		t.Errorf("GC left %v", left)
	}
	after := map[string]bool{}
	for _, a := range c.NodeAttachments(t, h.kp.Spec.PodNodeName) {
		after[a.Name] = true
	}
	for _, o := range others {
		if !after[o] {
			t.Errorf("GC removed %s, a valid attachment", o)
		}
	}
	for _, p := range bystanders {
		if out, err := framework.Exec(t, p, "cat", "/sys/class/net/eth0/address"); err != nil {
			t.Errorf("pod %s on %s lost its interface to the GC of %s: %v %s", p.Name, p.Spec.NodeName, h.kp.Spec.PodNodeName, err, out)
		}
	}
}

// An old runtime asking for CNI 0.3.1 gets a 0.3.1 result.
func TestLibCNIOldVersion(t *testing.T) {
	h := newHarness(t, "0.3.1")
	ctx := context.Background()
	rt := h.rt("sandbox-old", framework.NewNetns(t, "libcni-031"))
	res, err := h.cni.AddNetworkList(ctx, h.list, rt)
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	if res.Version() != "0.3.1" {
		t.Errorf("result version %s", res.Version())
	}
	if err := h.cni.DelNetworkList(ctx, h.list, rt); err != nil {
		t.Errorf("DEL: %v", err)
	}
}

// TestCNIErrors runs kuryr-cni by hand with bad input: every failure is a
// CNI error object with a spec code.
func TestCNIErrors(t *testing.T) {
	h := newHarness(t, "1.0.0")
	plugin := filepath.Join(h.binDir, "kuryr-cni")
	conf := `{"cniVersion":"1.0.0","name":"kuryr","type":"kuryr-cni","daemon_socket":"%s"}`
	// What a runtime sends: the plugin's entry with the list's name and version.
	var entry map[string]any
	_ = json.Unmarshal(h.list.Plugins[0].Bytes, &entry)
	entry["name"], entry["cniVersion"] = "kuryr", "1.0.0"
	good, _ := json.Marshal(entry)
	tests := []struct {
		name     string
		env      []string
		stdin    string
		wantCode uint
	}{
		{"no pod in CNI_ARGS", []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=x", "CNI_NETNS=/run/netns/none", "CNI_IFNAME=eth0", "CNI_PATH=/x", "CNI_ARGS=IgnoreUnknown=1"},
			string(good), types.ErrInvalidEnvironmentVariables},
		{"daemon unreachable", []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=x", "CNI_NETNS=/run/netns/none", "CNI_IFNAME=eth0", "CNI_PATH=/x",
			"CNI_ARGS=K8S_POD_NAMESPACE=a;K8S_POD_NAME=b"}, strings.Replace(conf, "%s", "/nonexistent/kuryr.sock", 1), types.ErrTryAgainLater},
		{"malformed configuration", []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=x", "CNI_NETNS=/run/netns/none", "CNI_IFNAME=eth0", "CNI_PATH=/x"},
			`{"cniVersion":`, types.ErrDecodingFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(plugin)
			cmd.Env, cmd.Stdin = tt.env, strings.NewReader(tt.stdin)
			var out bytes.Buffer
			cmd.Stdout = &out
			if err := cmd.Run(); err == nil {
				t.Fatalf("succeeded: %s", out.String())
			}
			var e types.Error
			if err := json.Unmarshal(out.Bytes(), &e); err != nil || e.Code != tt.wantCode || e.Msg == "" {
				t.Errorf("got %q (%v), want a CNI error with code %d", out.String(), err, tt.wantCode)
			}
		})
	}
}

// cached: libcni's cache holds an attachment of the pod.
func cached(t *testing.T, c *libcni.CNIConfig, pod string) bool {
	t.Helper()
	list, err := c.GetCachedAttachments("")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		for _, kv := range a.CniArgs {
			if kv[0] == "K8S_POD_NAME" && kv[1] == pod {
				return true
			}
		}
	}
	return false
}

func containsPrefix(list []string, s string) bool {
	for _, l := range list {
		if strings.HasPrefix(l, s) {
			return true
		}
	}
	return false
}
