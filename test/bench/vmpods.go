package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// pythonKuryrNested: the original's published nested figures (2017,
// devstack, one VM, nested-vlan), for scale.
const pythonKuryrNested = "50 pods all Running after ≈ 601 s without pools, ≈ 118 s with them"

// vmRun says which VM node vmpods runs on and how.
type vmRun struct {
	// node is the VM node (empty: the cloud's first VM node).
	node string
	// relabel, when set, is the mode the node is labelled with for the run
	// (its label is put back after): its pods get ports but cannot run
	// when the node's kernel lacks what the mode needs (a network
	// namespace VM node labelled nested-vlan: no 802.1Q here).
	relabel string
	// poolWait, when positive, is how many ports the node's pool must hold
	// before the Deployment is made.
	poolWait int
}

// benchVMPods: Neutron's own calls for n pods of a VM node as the
// yardstick (one bulk create of unbound ports, then one add_subports for
// nested-vlan, or one update of the VM port's pairs for nested-macvlan),
// then a Deployment of n replicas on the VM node, until every KuryrPort
// has its port data and, unless the node was relabelled, every pod runs.
func benchVMPods(ctx context.Context, e *env, n int, vm vmRun) error {
	node, relabel, poolWait := vm.node, vm.relabel, vm.poolWait
	if node == "" && len(e.VMNodes) == 0 {
		return fmt.Errorf("the local cloud has no VM node (KURYR_CLOUD_VM_NODES)")
	}
	if node == "" {
		node = e.VMNodes[0]
	}
	var cur corev1.Node
	if err := e.kuryr.Get(ctx, client.ObjectKey{Name: node}, &cur); err != nil {
		return err
	}
	if cur.Labels[kuryrv1.PodVIFLabel] == relabel {
		relabel = "" // labelled so already: nothing changes
	}
	if relabel != "" {
		restore, err := labelMode(ctx, e, node, relabel)
		if err != nil {
			return err
		}
		defer restore()
		// Interrupted, the node gets its label back all the same.
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(stop)
		go func() {
			if _, ok := <-stop; ok {
				restore()
				os.Exit(130)
			}
		}()
	}
	var kn corev1.Node
	if err := e.kuryr.Get(ctx, client.ObjectKey{Name: node}, &kn); err != nil {
		return err
	}
	mode, err := nested.ModeOf(&kn, nested.ModeNeutron)
	if err != nil || mode == nested.ModeNeutron {
		return fmt.Errorf("node %s is not a VM node (mode %q, %v)", node, mode, err)
	}
	nc := neutron.New(e.OS.Network)
	parents := &nested.Parents{Neutron: nc, Nodes: e.kuryr}
	parent, err := parents.Of(ctx, node, mode == nested.ModeVLAN)
	if err != nil {
		return err
	}
	fmt.Printf("kuryr-bench vmpods: a %d-replica Deployment on VM node %s (%s)\n\n", n, node, mode)
	if poolWait > 0 {
		took, err := waitPool(e, node, poolWait)
		if err != nil {
			return err
		}
		fmt.Printf("the node's pool held %d ports %s after this run started\n", poolWait, secs(took))
	}
	settleNeutron(ctx, e)
	direct, err := directNested(ctx, e, nc, parent, mode, n)
	if err != nil {
		return fmt.Errorf("neutron baseline: %w", err)
	}
	settleNeutron(ctx, e)
	fmt.Printf("Neutron alone: one bulk POST of %d unbound ports + %s   %s\n", n, map[string]string{
		nested.ModeVLAN: "one add_subports", nested.ModeMacvlan: "one update of the VM port's pairs"}[mode], secs(direct))
	ns := fmt.Sprintf("%s-%d", names.Bench, time.Now().Unix())
	if _, err := e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer deleteNamespace(e, ns)
	d := deployment(e, n)
	d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: framework.VMNodeTaint, Operator: corev1.TolerationOpExists}}
	start := time.Now()
	if _, err := e.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	if relabel != "" && mode == nested.ModeVLAN {
		allPorts, err := waitAllPorts(ctx, e, ns, n, start, 5*time.Minute)
		if err != nil {
			return err
		}
		fmt.Printf("kuryr: Deployment created -> all %d KuryrPorts with port data (subports) %s (%.2f x Neutron alone)\n",
			n, secs(allPorts), allPorts.Seconds()/direct.Seconds())
		fmt.Println("(the pods cannot run on a relabelled network-namespace VM node: no 802.1Q here; see the guest node's run)")
	} else {
		allPorts, allRunning, err := waitAllRunning(ctx, e, ns, n, start)
		if err != nil {
			return err
		}
		fmt.Printf("kuryr: Deployment created -> all %d KuryrPorts with port data %s (%.2f x Neutron alone)\n",
			n, secs(allPorts), allPorts.Seconds()/direct.Seconds())
		fmt.Printf("kuryr: Deployment created -> all %d pods Running          %s\n", n, secs(allRunning))
	}
	fmt.Printf("for scale: the original's nested figures: %s\n", pythonKuryrNested)
	return nil
}

// directNested times Neutron's own calls for n nested pods and undoes them.
func directNested(ctx context.Context, e *env, nc *neutron.Client, parent nested.Parent, mode string, n int) (time.Duration, error) {
	net, sub := e.PodNet, e.PodSubnet
	if mode == nested.ModeMacvlan {
		net, sub = parent.NetworkID, parent.SubnetID
	}
	specs := make([]neutron.PortSpec, n)
	for i := range specs {
		specs[i] = neutron.PortSpec{NetworkID: net, SubnetID: sub, ProjectID: e.ProjectID,
			DeviceOwner: "compute:kuryr-bench", Tags: []string{names.Bench}}
	}
	start := time.Now()
	created, err := nc.CreatePorts(ctx, specs)
	defer deletePorts(ctx, nc, created)
	if err != nil {
		return 0, err
	}
	switch mode {
	case nested.ModeVLAN:
		subs := make([]neutron.Subport, len(created))
		ids := make([]string, len(created))
		for i, p := range created {
			// From the top of the range: kuryr's ids grow from the bottom.
			subs[i], ids[i] = neutron.Subport{PortID: p.ID, SegmentationType: "vlan", SegmentationID: 4094 - i}, p.ID
		}
		if err := nc.AddSubports(ctx, parent.TrunkID, subs); err != nil {
			return 0, err
		}
		took := time.Since(start)
		return took, nc.RemoveSubports(ctx, parent.TrunkID, ids)
	default:
		vm, err := nc.GetParentPort(ctx, parent.PortID)
		if err != nil {
			return 0, err
		}
		pairs := slices.Clone(vm.AllowedAddressPairs)
		for _, p := range created {
			pairs = append(pairs, ports.AddressPair{IPAddress: p.FixedIPs[0].IPAddress, MACAddress: nested.MacvlanMAC(p.ID)})
		}
		if err := nc.SetAddressPairs(ctx, parent.PortID, pairs, vm.RevisionNumber); err != nil {
			return 0, err
		}
		return time.Since(start), removePairs(ctx, nc, parent.PortID, created)
	}
}

// removePairs takes the yardstick's pairs off the VM port, reading it again
// when the controller changed it meanwhile (412: its sweep, or a pod).
func removePairs(ctx context.Context, nc *neutron.Client, portID string, created []neutron.Port) error {
	for attempt := 1; ; attempt++ {
		vm, err := nc.GetParentPort(ctx, portID)
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(vm.AllowedAddressPairs), func(a ports.AddressPair) bool {
			return slices.ContainsFunc(created, func(p neutron.Port) bool { return a.MACAddress == nested.MacvlanMAC(p.ID) })
		})
		err = nc.SetAddressPairs(ctx, portID, kept, vm.RevisionNumber)
		if !neutron.PreconditionFailed(err) || attempt == 5 {
			return err
		}
	}
}

func deletePorts(ctx context.Context, nc *neutron.Client, created []neutron.Port) {
	for _, p := range created {
		if err := nc.DeletePort(ctx, p.ID); err != nil {
			fmt.Println("cleanup:", err)
		}
	}
}

// waitAllPorts polls until every KuryrPort of ns has its port data, for
// up to timeout.
func waitAllPorts(ctx context.Context, e *env, ns string, n int, start time.Time, timeout time.Duration) (time.Duration, error) {
	var took time.Duration
	// Every 100 ms, and 1 ms a pod past 100: listing a thousand KuryrPorts
	// ten times a second took a third of a core from the API server and
	// Neutron on this machine, for a resolution nobody reads.
	every := max(100*time.Millisecond, time.Duration(n)*time.Millisecond)
	err := poll(timeout, every, func() (bool, error) {
		var kps kuryrv1.KuryrPortList
		if err := e.kuryr.List(ctx, &kps, client.InNamespace(ns)); err != nil {
			return false, framework.Stop(err)
		}
		took = time.Since(start)
		return withData(kps.Items) == n, nil
	}, func() error { return fmt.Errorf("not all %d KuryrPorts with port data after %s", n, timeout) })
	return took, err
}

// labelMode labels node with mode and returns what puts its label back.
func labelMode(ctx context.Context, e *env, node, mode string) (func(), error) {
	n, err := e.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	old, had := n.Labels[kuryrv1.PodVIFLabel]
	set := func(v *string) error {
		val := "null"
		if v != nil {
			val = fmt.Sprintf("%q", *v)
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, kuryrv1.PodVIFLabel, val)
		_, err := e.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	if err := set(&mode); err != nil {
		return nil, err
	}
	return func() {
		back := &old
		if !had {
			back = nil
		}
		if err := set(back); err != nil {
			fmt.Printf("putting node %s's label back: %v\n", node, err)
		}
	}, nil
}

// waitPool waits until the controller's pool holds at least want ports of
// node (kuryr_port_pool_free_ports).
func waitPool(e *env, node string, want int) (time.Duration, error) {
	start := time.Now()
	have := 0.0
	err := poll(5*time.Minute, time.Second, func() (bool, error) {
		mf, err := scrape(e)
		if err != nil {
			return false, nil // the controller restarting
		}
		for _, m := range mf["kuryr_port_pool_free_ports"].GetMetric() {
			if label(m, "node") == node {
				have = m.GetGauge().GetValue()
			}
		}
		return have >= float64(want), nil
	}, func() error {
		return fmt.Errorf("node %s's pool held %.0f ports, not %d, after 5 minutes", node, have, want)
	})
	return time.Since(start), err
}
