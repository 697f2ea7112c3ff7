package migrate

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// originalKinds are the original's kinds, by their CRDs' plural names.
var originalKinds = []struct{ plural, kind string }{
	{"kuryrports", "KuryrPort"}, {"kuryrnetworks", "KuryrNetwork"},
	{"kuryrloadbalancers", "KuryrLoadBalancer"}, {"kuryrnetworkpolicies", "KuryrNetworkPolicy"},
}

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// crdName is the CRD of a plural in kuryr's group.
func crdName(plural string) string { return plural + "." + kuryrv1.GroupVersion.Group }

// crdState says whose kuryr's CRDs are: "original" (no status
// subresource: the Python kuryr's), "kuryr", or "" (none).
func crdState(ctx context.Context, c client.Reader) (string, error) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	err := c.Get(ctx, client.ObjectKey{Name: crdName("kuryrports")}, crd)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read CRD %s: %w", crdName("kuryrports"), err)
	}
	return crdOwner(crd), nil
}

// crdOwner says whose a CRD of kuryr's group is: kuryr's have a status
// subresource, the original's none. Pure.
func crdOwner(crd *unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if m["name"] != kuryrv1.GroupVersion.Version {
			continue
		}
		sub, _ := m["subresources"].(map[string]any)
		if _, ok := sub["status"]; ok {
			return "kuryr"
		}
	}
	return "original"
}

// listOriginal lists the original's objects (read as they are stored:
// kuryr's types would drop their fields).
func listOriginal(ctx context.Context, c client.Reader) (Original, error) {
	var o Original
	into := []*[]unstructured.Unstructured{&o.Ports, &o.Networks, &o.LoadBalancers, &o.Policies}
	for i, k := range originalKinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(kuryrv1.GroupVersion.WithKind(k.kind + "List"))
		if err := c.List(ctx, l); err != nil {
			return o, fmt.Errorf("list the original's %s: %w", k.plural, err)
		}
		*into[i] = l.Items
	}
	return o, nil
}

// stopDeployment scales a Deployment to 0 and waits until its pods are
// gone; a Deployment that does not exist is stopped.
func stopDeployment(ctx context.Context, c client.Client, key client.ObjectKey, timeout time.Duration) (bool, error) {
	var d appsv1.Deployment
	switch err := c.Get(ctx, key, &d); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("the Deployment %s: %w", key, err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
		if err := c.Patch(ctx, &d, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"replicas":0}}`))); err != nil {
			return true, fmt.Errorf("scale Deployment %s to 0: %w", key, err)
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return true, fmt.Errorf("the Deployment %s: its selector: %w", key, err)
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		err := c.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabelsSelector{Selector: sel})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		return true, fmt.Errorf("the pods of Deployment %s still there after %s: %w", key, timeout, err)
	}
	return true, nil
}

// writeBackup writes the original's objects, and its workloads and
// configuration, as one YAML list that kubectl apply takes back.
func writeBackup(path string, o Original, extra []client.Object) error {
	var docs []string
	add := func(obj any) error {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		docs = append(docs, string(b))
		return nil
	}
	for _, obj := range extra {
		if err := add(obj); err != nil {
			return err
		}
	}
	for _, l := range [][]unstructured.Unstructured{o.Networks, o.Ports, o.LoadBalancers, o.Policies} {
		for _, u := range l {
			u := u.DeepCopy()
			for _, f := range []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation"} {
				unstructured.RemoveNestedField(u.Object, "metadata", f)
			}
			if err := add(u.Object); err != nil {
				return err
			}
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		return fmt.Errorf("write the backup %s: %w", path, err)
	}
	return nil
}

// pythonObjects are the original's workloads and configuration, for the
// backup (as a restore applies them), and what could not be read.
func pythonObjects(ctx context.Context, c client.Reader, ns string) ([]client.Object, []string) {
	var out []client.Object
	var missing []string
	for _, o := range []struct {
		obj  client.Object
		name string
		gvk  schema.GroupVersionKind
	}{
		{&appsv1.Deployment{}, names.PythonController, appsv1.SchemeGroupVersion.WithKind("Deployment")},
		{&appsv1.DaemonSet{}, names.PythonDaemonSet, appsv1.SchemeGroupVersion.WithKind("DaemonSet")},
		{&corev1.ConfigMap{}, names.ConfigMap, corev1.SchemeGroupVersion.WithKind("ConfigMap")},
	} {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.name}, o.obj)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				missing = append(missing, fmt.Sprintf("%s %s/%s: %v", o.gvk.Kind, ns, o.name, err))
			}
			continue
		}
		o.obj.GetObjectKind().SetGroupVersionKind(o.gvk)
		o.obj.SetManagedFields(nil)
		o.obj.SetResourceVersion("")
		o.obj.SetUID("")
		o.obj.SetCreationTimestamp(metav1.Time{})
		o.obj.SetGeneration(0)
		out = append(out, o.obj)
	}
	return out, missing
}

// pythonConfig reads the original's kuryr.conf.
func pythonConfig(ctx context.Context, c client.Reader, ns string) (pythonConf, error) {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ConfigMap}, &cm); err != nil {
		return pythonConf{}, fmt.Errorf("the original's ConfigMap %s/%s: %w", ns, names.ConfigMap, err)
	}
	conf, ok := cm.Data[env.ConfigMapKey]
	if !ok {
		return pythonConf{}, fmt.Errorf("the original's ConfigMap %s/%s has no %s", ns, names.ConfigMap, env.ConfigMapKey)
	}
	return parsePythonConf(conf)
}

// deleteOriginal deletes the original's objects, their finalizers removed
// (nothing is left for them to guard: what they named is kuryr's now),
// then its CRDs, so that kuryr's chart installs its own.
func deleteOriginal(ctx context.Context, c client.Client, o Original, timeout time.Duration) (int, error) {
	n := 0
	for _, l := range [][]unstructured.Unstructured{o.Ports, o.LoadBalancers, o.Policies, o.Networks} {
		for i := range l {
			u := &l[i]
			if len(u.GetFinalizers()) > 0 {
				err := c.Patch(ctx, u, client.RawPatch(client.Merge.Type(), []byte(`{"metadata":{"finalizers":null}}`)))
				if err != nil && !apierrors.IsNotFound(err) {
					return n, fmt.Errorf("remove the finalizers of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
				}
			}
			if err := c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
				return n, fmt.Errorf("delete %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
			n++
		}
	}
	for _, k := range originalKinds {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(crdGVK)
		crd.SetName(crdName(k.plural))
		if err := c.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
			return n, fmt.Errorf("delete CRD %s: %w", crd.GetName(), err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		for _, k := range originalKinds {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(crdGVK)
			if err := c.Get(ctx, client.ObjectKey{Name: crdName(k.plural)}, crd); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return n, fmt.Errorf("the original's CRDs still there after %s: %w", timeout, err)
	}
	return n, nil
}
