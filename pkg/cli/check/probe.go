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

// refused waits until ip's server no longer answers from (a policy in
// force drops the connection).
func refused(ctx context.Context, r *run, from *corev1.Pod, ip string) error {
	var last string
	err := poll(ctx, r.o.Timeout, time.Second, func() (bool, error) {
		out, err := get(ctx, r, from, ip, port)
		last = out
		return err == nil && out == "", nil
	})
	if err != nil {
		return fmt.Errorf("still answered %q", last)
	}
	return nil
}
