//go:build e2e

package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WaitRunning waits until every pod runs and returns them as they are then.
func (c *Cloud) WaitRunning(t testing.TB, pods []*corev1.Pod, timeout time.Duration) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, len(pods))
	Eventually(t, timeout, 250*time.Millisecond, fmt.Sprintf("%d pods Running", len(pods)), func() (bool, error) {
		running := 0
		for i, p := range pods {
			if out[i] != nil {
				running++
				continue
			}
			got, err := c.Kube.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got.Status.Phase == corev1.PodRunning && got.Status.PodIP != "" {
				out[i] = got
				running++
			}
		}
		return running == len(pods), fmt.Errorf("%d of %d running", running, len(pods))
	})
	return out
}

// WaitReady waits until every pod is Ready (its readiness probe passes)
// and returns them as they are then.
func (c *Cloud) WaitReady(t testing.TB, pods []*corev1.Pod, timeout time.Duration) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, len(pods))
	Eventually(t, timeout, 250*time.Millisecond, fmt.Sprintf("%d pods Ready", len(pods)), func() (bool, error) {
		ready := 0
		var waiting []string
		for i, p := range pods {
			got, err := c.Kube.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if IsReady(got) {
				out[i] = got
				ready++
			} else if len(waiting) < 5 {
				waiting = append(waiting, whyNotReady(got))
			}
		}
		return ready == len(pods), fmt.Errorf("%d of %d ready; not: %s", ready, len(pods), strings.Join(waiting, "; "))
	})
	return out
}

// whyNotReady says where a pod is stuck: its node, phase, and the reason
// its containers or its Ready condition give, so that a timed-out wait
// names the pods and what they wait for.
func whyNotReady(p *corev1.Pod) string {
	node := p.Spec.NodeName
	if node == "" {
		node = "no node"
	}
	why := fmt.Sprintf("%s on %s %s", p.Name, node, p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			why += fmt.Sprintf(" (%s: %s)", w.Reason, w.Message)
		}
		if cs.RestartCount > 0 {
			why += fmt.Sprintf(" (%d restarts)", cs.RestartCount)
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Status != corev1.ConditionTrue && (cond.Reason != "" || cond.Message != "") {
			why += fmt.Sprintf(" [%s %s: %s]", cond.Type, cond.Reason, cond.Message)
		}
	}
	return why
}

// Exec runs a command in a pod's container through the API server and the
// kubelet (kubectl exec), and returns its output.
func Exec(t testing.TB, p *corev1.Pod, cmd ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"exec", "-n", p.Namespace, p.Name, "--"}, cmd...)
	out, err := exec.CommandContext(ctx, "kubectl", args...).CombinedOutput()
	return string(out), err
}

// Logs returns a pod's container log.
func (c *Cloud) Logs(t testing.TB, p *corev1.Pod) string {
	t.Helper()
	raw, err := c.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("logs of %s: %v", p.Name, err)
	}
	return string(raw)
}

// Attachment is a pod interface kuryr plugged on a node, as OVS records it.
type Attachment struct {
	Name, ContainerID, IfName, Pod string
}

// NodeAttachments lists the interfaces of br-int carrying a kuryr
// container id.
func (c *Cloud) NodeAttachments(t testing.TB, node string) []Attachment {
	t.Helper()
	var list []Attachment
	for _, i := range c.findInterfaces(t, node, names.ExtContainerID) {
		list = append(list, Attachment{Name: i.name, ContainerID: i.ids[names.ExtContainerID], IfName: i.ids[names.ExtIfName], Pod: i.ids[names.ExtPod]})
	}
	return list
}

type ovsInterface struct {
	name string
	ids  map[string]string
}

// findInterfaces lists the node's OVS interfaces whose external_ids have
// key, with their external_ids.
func (c *Cloud) findInterfaces(t testing.TB, node, key string) []ovsInterface {
	t.Helper()
	out, err := exec.Command("ovs-vsctl", "--db="+c.NodeOVSDB[node], "--format=json", "--columns=name,external_ids",
		"find", "Interface", "external_ids:"+key+`!=""`).Output()
	if err != nil {
		t.Fatalf("ovs-vsctl on %s: %v: %s", node, err, out)
	}
	// {"data": [[name, ["map", [[key, value], ...]]], ...]}
	var table struct{ Data [][]json.RawMessage }
	if err := json.Unmarshal(out, &table); err != nil {
		t.Fatalf("ovs-vsctl on %s: %v: %s", node, err, out)
	}
	var list []ovsInterface
	for _, row := range table.Data {
		var name string
		var ids []json.RawMessage // "map", [[key, value]...]
		if len(row) != 2 || json.Unmarshal(row[0], &name) != nil || json.Unmarshal(row[1], &ids) != nil || len(ids) != 2 {
			t.Fatalf("ovs-vsctl on %s: unexpected row %s", node, row)
		}
		var pairs [][2]string
		if err := json.Unmarshal(ids[1], &pairs); err != nil {
			t.Fatalf("ovs-vsctl on %s: external_ids %s: %v", node, ids[1], err)
		}
		m := map[string]string{}
		for _, kv := range pairs {
			m[kv[0]] = kv[1]
		}
		list = append(list, ovsInterface{name: name, ids: m})
	}
	return list
}

// NodeLeftovers lists what kuryr plugged on a node and is still there: OVS
// ports of br-int carrying a kuryr container id, and tap interfaces; not
// those of the cloud's own pods in kube-system (cluster DNS), nor the VMs'
// the node hosts as Nova plugs them (a vm-uuid and no kuryr container id:
// the VM nodes).
func (c *Cloud) NodeLeftovers(t testing.TB, node string) []string {
	t.Helper()
	var left []string
	system := map[string]bool{}
	for _, i := range c.findInterfaces(t, node, "vm-uuid") {
		if i.ids[names.ExtContainerID] == "" {
			system[i.name] = true
		}
	}
	for _, a := range c.NodeAttachments(t, node) {
		if strings.HasPrefix(a.Pod, metav1.NamespaceSystem+"/") {
			system[a.Name] = true
			continue
		}
		left = append(left, "ovs:"+a.Name)
	}
	links, err := InNetns(context.Background(), "/run/netns/"+c.NodeNetns(node), "ip", "-o", "link", "show")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(links, "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], "tap") {
			if name := strings.TrimSuffix(strings.SplitN(f[1], "@", 2)[0], ":"); !system[name] {
				left = append(left, "link:"+name)
			}
		}
	}
	return left
}
