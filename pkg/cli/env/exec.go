package env

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Execer runs a command in a container and returns its stdout
// (`kubectl exec`).
type Execer interface {
	Exec(ctx context.Context, ns, pod, container string, cmd []string) ([]byte, error)
}

// SPDYExec execs over the API server's pods/exec (SPDY), as kubectl does.
type SPDYExec struct{ Config *rest.Config }

// execTimeout bounds an exec: a node or kubelet that does not answer
// must not hang the command.
const execTimeout = 20 * time.Second

// Exec implements Execer; stderr goes into the error.
func (s *SPDYExec) Exec(ctx context.Context, ns, pod, container string, cmd []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	cs, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(s.Config, "POST", req.URL())
	if err != nil {
		return nil, fmt.Errorf("exec in %s/%s: %w", ns, pod, err)
	}
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return nil, fmt.Errorf("exec %s in %s/%s: %w: %s", strings.Join(cmd, " "), ns, pod, err,
			strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// DaemonPod is the kuryr-daemon pod on node, or nil: a running one not
// being deleted if there is one (during a rollout there may be two).
func DaemonPod(ctx context.Context, c client.Reader, ns, node string) (*corev1.Pod, error) {
	pods, err := DaemonPods(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	var found *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != node {
			continue
		}
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return p, nil
		}
		if found == nil {
			found = p
		}
	}
	return found, nil
}

// DaemonPods are the kuryr-daemon pods.
func DaemonPods(ctx context.Context, c client.Reader, ns string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{LabelName: "kuryr", LabelComponent: "daemon"})
	if err != nil {
		return nil, fmt.Errorf("list kuryr-daemon pods in %s: %w", ns, err)
	}
	return pods.Items, nil
}

// AttachmentsCommand is the command that prints a daemon's attachments,
// with the configuration flags its container runs with (--config-file,
// --set), so that it reads the same health port.
func AttachmentsCommand(pod *corev1.Pod) []string {
	cmd := []string{DaemonBinary, "attachments"}
	for _, c := range pod.Spec.Containers {
		if c.Name == names.Daemon {
			cmd = append(cmd, configFlags(append(append([]string{}, c.Command...), c.Args...))...)
		}
	}
	return cmd
}

// configFlags are the --config-file and --set flags among a container's
// arguments, as written (one or two words each).
func configFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		switch {
		case strings.HasPrefix(a, "config-file=") || strings.HasPrefix(a, "set="):
			out = append(out, args[i])
		case (a == "config-file" || a == "set") && i+1 < len(args):
			out = append(out, args[i], args[i+1])
			i++
		}
	}
	return out
}

// setValues are the section.option=value of the --set flags among args.
func setValues(args []string) []string {
	var out []string
	flags := configFlags(args)
	for i := 0; i < len(flags); i++ {
		a := strings.TrimLeft(flags[i], "-")
		switch {
		case strings.HasPrefix(a, "set="):
			out = append(out, strings.TrimPrefix(a, "set="))
		case a == "set":
			out = append(out, flags[i+1])
			i++
		case a == "config-file":
			i++
		}
	}
	return out
}
