package check

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// poll calls cond every interval until it is true, it fails, timeout
// passes or ctx ends.
func poll(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) { return cond() })
}

// get fetches ip:port's page from inside pod from, returning the last
// line (the answering pod's name), empty when nothing answered.
func get(ctx context.Context, r *run, from *corev1.Pod, ip string, port int) (string, error) {
	out, err := r.e.Exec.Exec(ctx, r.ns, from.Name, "", getCommand(ip, port))
	return strings.TrimSpace(string(out)), err
}

// answers waits until ip:port answers from with one of the names.
func answers(ctx context.Context, r *run, from *corev1.Pod, ip string, port int, names []string, timeout time.Duration) error {
	var last string
	var lastErr error
	err := poll(ctx, timeout, time.Second, func() (bool, error) {
		last, lastErr = get(ctx, r, from, ip, port)
		return lastErr == nil && slices.Contains(names, last), nil
	})
	switch {
	case err == nil:
		return nil
	case lastErr != nil:
		return fmt.Errorf("no answer in %s: %w", timeout, lastErr)
	case last == "":
		return fmt.Errorf("no answer in %s", timeout)
	}
	return fmt.Errorf("answered %q, not %s", last, strings.Join(names, " or "))
}

// dropped waits until from's requests to ip go unanswered three times in a
// row: a security group drops packets, it never refuses a connection, so
// a refusal or an answer is not a policy in force.
func dropped(ctx context.Context, r *run, from *corev1.Pod, ip string) error {
	var last string
	silent := 0
	err := poll(ctx, r.o.Timeout, time.Second, func() (bool, error) {
		out, err := get(ctx, r, from, ip, port)
		if err != nil {
			return false, err // exec failed: proves nothing either way
		}
		last = out
		if out == "" || strings.Contains(out, "timed out") {
			silent++
		} else {
			silent = 0
		}
		return silent == 3, nil
	})
	if err != nil {
		return fmt.Errorf("last answer %q (%v)", last, err)
	}
	return nil
}

// serving checks that pod's own server still answers on its loopback (a
// dropped request is then the network's doing).
func serving(ctx context.Context, r *run, pod *corev1.Pod) error {
	out, err := get(ctx, r, pod, "127.0.0.1", port)
	if err != nil {
		return err
	}
	if out != pod.Name {
		return fmt.Errorf("its own server answered %q on 127.0.0.1:%d", out, port)
	}
	return nil
}
