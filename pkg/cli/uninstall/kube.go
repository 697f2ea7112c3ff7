package uninstall

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// nodeAnnotations are what kuryr writes on Nodes.
var nodeAnnotations = []string{kuryrv1.NodePortAnnotation, kuryrv1.RefusePortAnnotation,
	kuryrv1.ProbePortAnnotation, kuryrv1.AddressGroupProbeAnnotation}

// kinds are kuryr's objects, each list empty.
func kinds() []client.ObjectList {
	return []client.ObjectList{&kuryrv1.KuryrLoadBalancerList{}, &kuryrv1.KuryrNetworkPolicyList{},
		&kuryrv1.KuryrPortList{}, &kuryrv1.KuryrNetworkList{}}
}

// stopController scales kuryr-controller to 0 and waits until none of
// its pods is left: from then on nothing makes or repairs kuryr's objects.
func (r *run) stopController(ctx context.Context) (doctor.Finding, bool) {
	const c = "controller"
	var d appsv1.Deployment
	key := client.ObjectKey{Namespace: r.e.KuryrNamespace, Name: names.Controller}
	switch err := r.e.Client.Get(ctx, key, &d); {
	case apierrors.IsNotFound(err):
		// Removed already, its pods perhaps still terminating.
	case err != nil:
		return doctor.Findingf(c, doctor.Fail, "Deployment %s: %v", key, err), false
	case d.Spec.Replicas == nil || *d.Spec.Replicas != 0:
		if err := r.e.Client.Patch(ctx, &d, mergePatch(map[string]any{"spec": map[string]any{"replicas": 0}})); err != nil {
			return doctor.Findingf(c, doctor.Fail, "scale Deployment %s to 0: %v", key, err), false
		}
	}
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, r.o.Timeout, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		err := r.e.Client.List(ctx, &pods, client.InNamespace(r.e.KuryrNamespace),
			client.MatchingLabels{env.LabelName: "kuryr", env.LabelComponent: "controller"})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		return doctor.Findingf(c, doctor.Fail, "kuryr-controller's pods still there after %s: %v", r.o.Timeout, err), false
	}
	return doctor.Findingf(c, doctor.OK, "kuryr-controller scaled to 0, its pods gone in %s", time.Since(start).Round(time.Second)), true
}

// record reads the OpenStack objects kuryr's objects name (their only
// record if their tags could not be written).
func (r *run) record(ctx context.Context) error {
	var kps kuryrv1.KuryrPortList
	if err := r.e.Client.List(ctx, &kps); err != nil {
		return fmt.Errorf("list KuryrPorts: %w", err)
	}
	for _, kp := range kps.Items {
		for _, v := range kp.Status.VIFs {
			if v.PortID != "" {
				r.recordedPorts = append(r.recordedPorts, v.PortID)
			}
		}
	}
	var klbs kuryrv1.KuryrLoadBalancerList
	if err := r.e.Client.List(ctx, &klbs); err != nil {
		return fmt.Errorf("list KuryrLoadBalancers: %w", err)
	}
	for _, klb := range klbs.Items {
		if lb := klb.Status.LoadBalancer; lb != nil && lb.ID != "" {
			r.recordedLBs = append(r.recordedLBs, lb.ID)
		}
	}
	return nil
}

// recordStep is record as a step: nothing is deleted before it succeeds.
func (r *run) recordStep(ctx context.Context) (doctor.Finding, bool) {
	if err := r.record(ctx); err != nil {
		return doctor.Findingf("kuryr objects", doctor.Fail, "%v", err), false
	}
	return doctor.Findingf("records", doctor.OK, "%d ports and %d load balancers recorded in kuryr's objects",
		len(r.recordedPorts), len(r.recordedLBs)), true
}

// deleteObjects deletes every object of kuryr's kinds, its finalizer
// removed first (the controller that would honour it is stopped; the
// sweep deletes what it held).
func (r *run) deleteObjects(ctx context.Context) (doctor.Finding, bool) {
	const c = "kuryr objects"
	var counts []string
	for _, l := range kinds() {
		if err := r.e.Client.List(ctx, l); err != nil {
			return doctor.Findingf(c, doctor.Fail, "list %T: %v", l, err), false
		}
		objs, err := items(l)
		if err != nil {
			return doctor.Findingf(c, doctor.Fail, "%v", err), false
		}
		for _, o := range objs {
			if len(o.GetFinalizers()) > 0 {
				if err := r.e.Client.Patch(ctx, o, mergePatch(map[string]any{"metadata": map[string]any{"finalizers": nil}})); client.IgnoreNotFound(err) != nil {
					return doctor.Findingf(c, doctor.Fail, "remove the finalizers of %s %s/%s: %v", kindOf(l), o.GetNamespace(), o.GetName(), err), false
				}
			}
			if err := r.e.Client.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				return doctor.Findingf(c, doctor.Fail, "delete %s %s/%s: %v", kindOf(l), o.GetNamespace(), o.GetName(), err), false
			}
		}
		counts = append(counts, fmt.Sprintf("%d %ss", len(objs), kindOf(l)))
	}
	return doctor.Findingf(c, doctor.OK, "deleted %s (finalizers removed)", strings.Join(counts, ", ")), true
}

// clearNodes takes kuryr's annotations off every Node.
func (r *run) clearNodes(ctx context.Context) (doctor.Finding, bool) {
	const c = "nodes"
	var nodes corev1.NodeList
	if err := r.e.Client.List(ctx, &nodes); err != nil {
		return doctor.Findingf(c, doctor.Fail, "list nodes: %v", err), false
	}
	n := 0
	for i := range nodes.Items {
		node := &nodes.Items[i]
		patch := map[string]any{}
		for _, a := range nodeAnnotations {
			if _, ok := node.Annotations[a]; ok {
				patch[a] = nil
			}
		}
		if len(patch) == 0 {
			continue
		}
		if err := r.e.Client.Patch(ctx, node, mergePatch(map[string]any{"metadata": map[string]any{"annotations": patch}})); err != nil {
			return doctor.Findingf(c, doctor.Fail, "remove kuryr's annotations from node %s: %v", node.Name, err), false
		}
		n++
	}
	return doctor.Findingf(c, doctor.OK, "kuryr's annotations removed from %d of %d nodes", n, len(nodes.Items)), true
}

// countObjects: how many objects of each of kuryr's kinds exist.
func (r *run) countObjects(ctx context.Context) (string, error) {
	var counts []string
	for _, l := range kinds() {
		if err := r.e.Client.List(ctx, l); err != nil {
			return "", fmt.Errorf("list %s: %w", kindOf(l), err)
		}
		objs, err := items(l)
		if err != nil {
			return "", err
		}
		counts = append(counts, fmt.Sprintf("%d %ss", len(objs), kindOf(l)))
	}
	return strings.Join(counts, ", "), nil
}

func kindOf(l client.ObjectList) string {
	return strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", l), "*v1."), "List")
}

// items are a list's objects.
func items(l client.ObjectList) ([]client.Object, error) {
	objs, err := meta.ExtractList(l)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kindOf(l), err)
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		co, ok := o.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%s: %T is not an object", kindOf(l), o)
		}
		out = append(out, co)
	}
	return out, nil
}

func mergePatch(v any) client.Patch {
	b, _ := json.Marshal(v) // maps of strings and nil: cannot fail
	return client.RawPatch("application/merge-patch+json", b)
}
