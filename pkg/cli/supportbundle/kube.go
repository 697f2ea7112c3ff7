package supportbundle

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// kubeLists are the kinds collected cluster-wide, by file name. Secrets
// are not among them.
func kubeLists() map[string]client.ObjectList {
	return map[string]client.ObjectList{
		"kuryrports": &kuryrv1.KuryrPortList{}, "kuryrnetworks": &kuryrv1.KuryrNetworkList{},
		"kuryrloadbalancers": &kuryrv1.KuryrLoadBalancerList{}, "kuryrnetworkpolicies": &kuryrv1.KuryrNetworkPolicyList{},
		"nodes": &corev1.NodeList{}, "pods": &corev1.PodList{}, "services": &corev1.ServiceList{},
		"endpointslices": &discoveryv1.EndpointSliceList{}, "networkpolicies": &networkingv1.NetworkPolicyList{},
		"events": &corev1.EventList{}, "namespaces": &corev1.NamespaceList{},
	}
}

// collectKube: the cluster's objects kuryr deals with, kuryr's workloads
// in its namespace, and kuryr.conf.
func collectKube(ctx context.Context, e *env.Env, b *bundle) {
	for name, l := range kubeLists() {
		if err := e.Client.List(ctx, l); err != nil {
			b.fail("kubernetes/"+name, err)
			continue
		}
		addYAML(b, "kubernetes/"+name+".yaml", l)
	}
	ns := client.InNamespace(e.KuryrNamespace)
	for name, l := range map[string]client.ObjectList{"deployments": &appsv1.DeploymentList{}, "daemonsets": &appsv1.DaemonSetList{}} {
		if err := e.Client.List(ctx, l, ns, client.MatchingLabels{env.LabelName: "kuryr"}); err != nil {
			b.fail("kubernetes/kuryr-"+name, err)
			continue
		}
		addYAML(b, "kubernetes/kuryr-"+name+".yaml", l)
	}
	var cm corev1.ConfigMap
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.KuryrNamespace, Name: names.ConfigMap}, &cm); err != nil {
		b.fail("kubernetes/kuryr.conf", err)
	} else {
		b.add("kubernetes/kuryr.conf", []byte(cm.Data[env.ConfigMapKey]))
	}
	var secret corev1.Secret
	name := env.SecretName(ctx, e.Client, e.KuryrNamespace)
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.KuryrNamespace, Name: name}, &secret); err == nil {
		keys := make([]string, 0, len(secret.Data))
		for k := range secret.Data {
			keys = append(keys, k)
		}
		b.add("kubernetes/kuryr-openstack-secret.txt", []byte(fmt.Sprintf(
			"Secret %s/%s holds the keys %s (their content is not collected)\n", e.KuryrNamespace, name, strings.Join(keys, ", "))))
	}
}

func addYAML(b *bundle, path string, obj client.ObjectList) {
	scrub(obj)
	out, err := yaml.Marshal(obj)
	if err != nil {
		b.fail(path, err)
		return
	}
	b.add(path, out)
}
