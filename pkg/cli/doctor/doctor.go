// Package doctor is `kubectl kuryr doctor`: checks of a kuryr installation
// (controller and its leader, daemons on every node, CRDs, configuration,
// OpenStack reachability, the credential's permissions and quota headroom,
// the configured objects, what pods admit from
// the cloud's networks and the external one, leaked objects, pods without
// a port, resources not Ready), each a finding in words.
package doctor

import (
	"context"
	"fmt"
	"io"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
)

// Statuses of findings.
const (
	OK   = "OK"
	Warn = "WARN"
	Fail = "FAIL"
)

// Finding is one check's result.
type Finding struct {
	Check   string `json:"check"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Findingf is a finding whose message is formatted (for doctor and
// check).
func Findingf(check, status, format string, a ...any) Finding {
	return Finding{check, status, fmt.Sprintf(format, a...)}
}

func ok(check, format string, a ...any) Finding   { return Findingf(check, OK, format, a...) }
func warn(check, format string, a ...any) Finding { return Findingf(check, Warn, format, a...) }
func fail(check, format string, a ...any) Finding { return Findingf(check, Fail, format, a...) }

// check is one group of checks.
type check func(ctx context.Context, e *env.Env) []Finding

// Checks runs every check, in order, until ctx ends (Ctrl-C).
func Checks(ctx context.Context, e *env.Env) []Finding {
	var out []Finding
	for _, c := range []check{controller, leader, daemons, nodes, crds, configuration, openStack, permissions, quota, neutronObjects,
		reach, orphans, podsWithoutPorts, notReady, features} {
		if ctx.Err() != nil {
			break
		}
		out = append(out, c(ctx, e)...)
	}
	return out
}

// Run runs the checks and prints them; it reports whether any failed. An
// interrupted run prints nothing and returns why it stopped.
func Run(ctx context.Context, e *env.Env, f output.Format, w io.Writer) (failed bool, err error) {
	findings := Checks(ctx, e)
	if err := context.Cause(ctx); err != nil {
		return true, fmt.Errorf("doctor interrupted: %w", err)
	}
	return Print(w, f, findings)
}

// Print prints findings; it reports whether any failed.
func Print(w io.Writer, f output.Format, findings []Finding) (failed bool, err error) {
	for _, x := range findings {
		failed = failed || x.Status == Fail
	}
	return failed, output.Print(w, f, findings, func(w io.Writer) error {
		r := output.NewRows("status", "check", "message")
		for _, x := range findings {
			r.Add(x.Status, x.Check, x.Message)
		}
		return r.Write(w)
	})
}
