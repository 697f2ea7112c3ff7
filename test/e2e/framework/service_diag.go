//go:build e2e

package framework

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"

	"github.com/kuryr-k8s/kuryr/pkg/cli/describe"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
)

// LogServiceState logs, for a failed test, both sides of a Service: what
// `kubectl kuryr describe service` shows (its KuryrLoadBalancer, and
// Octavia's load balancer, listeners, pools and members), its
// EndpointSlices, and the pods its selector picks (IP, node, readiness,
// restarts). It reports, never fails.
func (c *Cloud) LogServiceState(t testing.TB, k *Kuryr, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	e := &env.Env{Client: k.Client, Namespace: ns, KuryrNamespace: KuryrNamespace}
	if err := describe.Run(ctx, e, []string{"service", name}, output.Table, &b); err != nil {
		fmt.Fprintf(&b, "describe: %v\n", err)
	}
	slices, err := c.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		fmt.Fprintf(&b, "endpointslices: %v\n", err)
	} else {
		for _, s := range slices.Items {
			for _, ep := range s.Endpoints {
				fmt.Fprintf(&b, "endpoint %v ready=%v serving=%v terminating=%v node=%v\n", ep.Addresses,
					deref(ep.Conditions.Ready), deref(ep.Conditions.Serving), deref(ep.Conditions.Terminating), deref(ep.NodeName))
			}
		}
	}
	c.logSelectedPods(ctx, &b, ns, name)
	k.logOVNLoadBalancer(ctx, &b, ns, name)
	t.Logf("state of Service %s/%s:\n%s", ns, name, b.String())
}

func (c *Cloud) logSelectedPods(ctx context.Context, b *strings.Builder, ns, name string) {
	svc, err := c.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || len(svc.Spec.Selector) == 0 {
		return
	}
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx,
		metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		fmt.Fprintf(b, "pods: %v\n", err)
		return
	}
	for _, p := range pods.Items {
		ready, restarts := "", int32(0)
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady {
				ready = fmt.Sprintf("%s since %s", cond.Status, cond.LastTransitionTime.Format(time.TimeOnly))
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		fmt.Fprintf(b, "pod %s %s on %s Ready=%s restarts %d\n", p.Name, p.Status.PodIP, p.Spec.NodeName, ready, restarts)
	}
}

// logOVNLoadBalancer: the OVN Load_Balancer rows the provider wrote for
// the Service's load balancer (named after it): VIPs, backends, options.
func (k *Kuryr) logOVNLoadBalancer(ctx context.Context, b *strings.Builder, ns, name string) {
	var klb kuryrv1.KuryrLoadBalancer
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &klb); err != nil || klb.Status.LoadBalancer == nil {
		return
	}
	out, err := exec.CommandContext(ctx, "bash", k.ctl, "nbctl", "--columns=name,protocol,vips,options,external_ids",
		"find", "Load_Balancer", "name="+klb.Status.LoadBalancer.ID).CombinedOutput()
	if err != nil {
		fmt.Fprintf(b, "ovn load balancer: %v: %s\n", err, out)
		return
	}
	fmt.Fprintf(b, "ovn Load_Balancer rows of %s:\n%s", klb.Status.LoadBalancer.ID, out)
}

func deref[T any](p *T) any {
	if p == nil {
		return "unset"
	}
	return *p
}
