// Package check is `kubectl kuryr check`: a connectivity check of a real
// cluster. It makes a namespace of its own with a server pod on each of
// two nodes (busybox's httpd), and checks, as a user's workload would
// meet them: node → pod (the kubelets' readiness probes), pod ↔ pod across
// the nodes, pod → ClusterIP Service, the cluster DNS, and a
// NetworkPolicy denying, then allowing, a pod's ingress. The namespace is
// deleted at the end, also when interrupted.
package check

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// Options are check's flags.
type Options struct {
	Image   string        // runs busybox's sh, httpd, nc and nslookup
	Timeout time.Duration // for each step (pods Ready, a Service answering, a policy in force)
	Keep    bool          // leave the namespace for inspection
}

// DefaultImage is the image of the probe pods.
const DefaultImage = "busybox:1.37"

// step is one part of the check: a finding, and whether the next steps
// can still run.
type step func(ctx context.Context, r *run) (doctor.Finding, bool)

// run is one check's state.
type run struct {
	e       *env.Env
	o       Options
	ns      string
	nodes   []string
	pods    []*corev1.Pod // Ready, one per node (the same node twice if only one)
	service *corev1.Service
}

// Run checks the cluster and returns the findings, the namespace's
// deletion (unless o.Keep) last. Interrupted, it returns what it found so
// far with the error, the step under way marked interrupted.
func Run(ctx context.Context, e *env.Env, o Options) (out []doctor.Finding, err error) {
	r := &run{e: e, o: o, ns: names.Check + "-" + rand.String(5)}
	var nodeFinding doctor.Finding
	var usable []string
	r.nodes, usable, nodeFinding, err = pickNodes(ctx, e)
	if err != nil {
		return nil, err
	}
	// A node without a Ready kuryr-daemon gives its pods no network, be it
	// one of the probe pods' or another: said at once, rather than after a
	// probe pod there waits out the timeout, or not at all.
	if why := unservedNodes(ctx, e, usable); len(why) > 0 {
		return []doctor.Finding{doctor.Findingf(nodeFinding.Check, doctor.Fail, "%s: pods there get no network (kubectl kuryr doctor)",
			strings.Join(why, "; "))}, nil
	}
	// Before the create: a create whose answer an interrupt cut off may
	// still have made the namespace.
	defer func() { out = append(out, r.cleanup(ctx)) }()
	if err := r.createNamespace(ctx); err != nil {
		return nil, err
	}
	out = []doctor.Finding{nodeFinding}
	for _, s := range []step{startPods, podToPod, podToService, dns, policy} {
		f, goOn := s(ctx, r)
		if ctx.Err() != nil {
			f.Status, f.Message = doctor.Warn, "interrupted"
		}
		out = append(out, f)
		if !goOn || ctx.Err() != nil {
			break
		}
	}
	if err := context.Cause(ctx); err != nil {
		return out, fmt.Errorf("check interrupted: %w", err)
	}
	return out, nil
}

func (r *run) createNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns, Labels: map[string]string{
		managedBy: managerName,
		// The probe pods run as nobody, without privileges: "restricted".
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if err := r.e.Client.Create(ctx, ns); err != nil {
		return fmt.Errorf("create namespace %s: %w", r.ns, err)
	}
	return nil
}

// cleanup deletes the namespace (kuryr then deletes the pods' ports, the
// Service's load balancer and the policy's groups), even when ctx has
// ended, and says so.
func (r *run) cleanup(ctx context.Context) doctor.Finding {
	const c = "cleanup"
	if r.o.Keep {
		return doctor.Finding{Check: c, Status: doctor.OK, Message: "namespace " + r.ns + " kept (--keep): kubectl delete namespace " + r.ns}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := r.e.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}})
	if err := client.IgnoreNotFound(err); err != nil {
		return doctor.Finding{Check: c, Status: doctor.Warn, Message: fmt.Sprintf("deleting namespace %s: %v", r.ns, err)}
	}
	return doctor.Finding{Check: c, Status: doctor.OK, Message: "namespace " + r.ns + " being deleted (kuryr deletes what it made for it)"}
}
