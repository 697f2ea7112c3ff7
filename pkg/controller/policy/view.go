package policy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readView reads the cluster as the translation sees it: every pod, and
// the labels of every namespace. It reads
// the cache's own objects (no copies): the view is read, never written.
func readView(ctx context.Context, c client.Reader) (PodsView, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return PodsView{}, fmt.Errorf("list pods: %w", err)
	}
	var nss corev1.NamespaceList
	if err := c.List(ctx, &nss, client.UnsafeDisableDeepCopy); err != nil {
		return PodsView{}, fmt.Errorf("list namespaces: %w", err)
	}
	v := PodsView{Pods: pods.Items, NamespaceLabels: map[string]map[string]string{}}
	for _, ns := range nss.Items {
		v.NamespaceLabels[ns.Name] = ns.Labels
	}
	return v, nil
}
