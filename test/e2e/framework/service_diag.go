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
	// Whatever is failing may be what answers: each part bounded on its
	// own, Kubernetes first (describe goes to Keystone and Octavia).
	var b strings.Builder
	c.logEndpoints(&b, ns, name)
	c.logSelectedPods(&b, ns, name)
	k.logOVNLoadBalancer(&b, ns, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := &env.Env{Client: k.Client, Namespace: ns, KuryrNamespace: KuryrNamespace}
	if err := describe.Run(ctx, e, []string{"service", name}, output.Table, &b); err != nil {
		fmt.Fprintf(&b, "describe: %v\n", err)
	}
	t.Logf("state of Service %s/%s:\n%s", ns, name, b.String())
}

func (c *Cloud) logEndpoints(b *strings.Builder, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	slices, err := c.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		fmt.Fprintf(b, "endpointslices: %v\n", err)
		return
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			fmt.Fprintf(b, "endpoint %v ready=%v serving=%v terminating=%v node=%v\n", ep.Addresses,
				deref(ep.Conditions.Ready), deref(ep.Conditions.Serving), deref(ep.Conditions.Terminating), deref(ep.NodeName))
		}
	}
}

func (c *Cloud) logSelectedPods(b *strings.Builder, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc, err := c.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(b, "service: %v\n", err)
		return
	}
	if len(svc.Spec.Selector) == 0 {
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
func (k *Kuryr) logOVNLoadBalancer(b *strings.Builder, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var klb kuryrv1.KuryrLoadBalancer
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &klb); err != nil {
		fmt.Fprintf(b, "kuryrloadbalancer: %v\n", err)
		return
	}
	if klb.Status.LoadBalancer == nil {
		fmt.Fprintf(b, "kuryrloadbalancer: no load balancer in its status\n")
		return
	}
	cmd := exec.CommandContext(ctx, "bash", k.ctl, "nbctl", "--timeout=10", "--columns=name,protocol,vips,options,external_ids",
		"find", "Load_Balancer", "name="+klb.Status.LoadBalancer.ID)
	cmd.WaitDelay = 2 * time.Second // ovn-nbctl, bash's child, may hold the output open
	out, err := cmd.CombinedOutput()
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
