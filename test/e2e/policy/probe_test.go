//go:build e2e

package policy

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

const (
	// flipTimeout bounds how long a change may take to show in traffic.
	flipTimeout = 20 * time.Second
	// stableRounds: once every check holds, it must hold this many rounds
	// more in a row.
	stableRounds = 1
)

// probeFn is the shell function a client runs per destination:
// p PROTO HOST PORT HOST:PORT INDEX prints "@INDEX ANSWER", ANSWER being
// the answering pod's name or "-". TCP: an HTTP GET with a 1 s connect
// timeout (busybox nc); UDP: one datagram and 1 s for the answer (testapp
// udp-ask, cut short by timeout). Stderr is dropped: the shell reports
// what timeout killed there.
const probeFn = `exec 2>/dev/null; p() { case $1 in ` +
	`tcp) r=$(printf 'GET / HTTP/1.0\r\n\r\n' | timeout 3 nc -w 1 $2 $3 | tail -n 1);; ` +
	`udp) r=$(timeout 1 testapp udp-ask $4 1 | tail -n 1);; ` +
	`esac; echo "@$5 ${r:--}"; }; `

// dest is something to probe: an address and port over TCP or UDP, and the
// pod expected to answer ("" for any).
type dest struct {
	proto, ip string
	port      int
	who       string
}

func (d dest) String() string {
	name := d.who
	if name == "" {
		name = d.ip
	}
	return fmt.Sprintf("%s %s/%d", name, d.proto, d.port)
}

// tcp and udp are a fixture pod's port.
func (f *fixture) tcp(t testing.TB, pod string, port int) dest {
	t.Helper()
	p := f.pod(t, pod)
	return dest{proto: "tcp", ip: p.Status.PodIP, port: port, who: p.Name}
}

func (f *fixture) udp(t testing.TB, pod string, port int) dest {
	t.Helper()
	p := f.pod(t, pod)
	return dest{proto: "udp", ip: p.Status.PodIP, port: port, who: p.Name}
}

// check is one probe and whether it must be answered.
type check struct {
	from    *corev1.Pod
	to      dest
	allowed bool
}

func (c check) String() string {
	want := "answered"
	if !c.allowed {
		want = "not answered"
	}
	return fmt.Sprintf("%s -> %s %s", c.from.Name, c.to, want)
}

// allow and deny are checks from a fixture pod to each destination.
func (f *fixture) allow(t testing.TB, from string, to ...dest) []check {
	t.Helper()
	return f.checks(t, true, from, to)
}

func (f *fixture) deny(t testing.TB, from string, to ...dest) []check {
	t.Helper()
	return f.checks(t, false, from, to)
}

func (f *fixture) checks(t testing.TB, allowed bool, from string, to []dest) []check {
	t.Helper()
	p := f.pod(t, from)
	out := make([]check, 0, len(to))
	for _, d := range to {
		out = append(out, check{from: p, to: d, allowed: allowed})
	}
	return out
}

// round runs every check once (one exec per client pod, all at once, each
// probing its destinations in parallel) and describes those that did not
// hold, and the execs that failed (their checks are not judged).
func round(t testing.TB, cs []check) (bad, errs []string) {
	t.Helper()
	byPod := map[*corev1.Pod][]int{}
	for i, c := range cs {
		byPod[c.from] = append(byPod[c.from], i)
	}
	answers := make([]string, len(cs))
	probed := make([]bool, len(cs))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for from, idx := range byPod {
		wg.Go(func() {
			var script strings.Builder
			script.WriteString(probeFn)
			for _, i := range idx {
				d := cs[i].to
				fmt.Fprintf(&script, "p %s %s %d %s %d & ", d.proto, d.ip, d.port, net.JoinHostPort(d.ip, strconv.Itoa(d.port)), i)
			}
			script.WriteString("wait")
			out, err := framework.Exec(t, from, "sh", "-c", script.String())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Sprintf("exec in %s: %v: %s", from.Name, err, out))
				return
			}
			for _, line := range strings.Split(out, "\n") {
				idx, answer, ok := strings.Cut(strings.TrimSpace(line), " ")
				if !ok || !strings.HasPrefix(idx, "@") {
					continue
				}
				if i, err := strconv.Atoi(idx[1:]); err == nil && i >= 0 && i < len(cs) {
					answers[i], probed[i] = answer, true
				}
			}
		})
	}
	wg.Wait()
	for i, c := range cs {
		switch {
		case !probed[i]:
			if len(errs) == 0 {
				errs = append(errs, fmt.Sprintf("%s: no result", c))
			}
		case c.allowed && answers[i] == "-":
			bad = append(bad, fmt.Sprintf("%s: not answered", c))
		case c.allowed && c.to.who != "" && answers[i] != c.to.who:
			bad = append(bad, fmt.Sprintf("%s: %s answered", c, answers[i]))
		case !c.allowed && answers[i] != "-":
			bad = append(bad, fmt.Sprintf("%s: %s answered", c, answers[i]))
		}
	}
	return bad, errs
}

// await waits until every check holds, then checks that they hold
// stableRounds more times in a row, and logs how long after since (the
// change under test) they first held. It returns that time.
func await(t testing.TB, since time.Time, what string, cs ...check) time.Duration {
	t.Helper()
	return awaitRounds(t, since, what, stableRounds, cs)
}

func awaitRounds(t testing.TB, since time.Time, what string, stable int, cs []check) time.Duration {
	t.Helper()
	var flipped time.Duration
	framework.Eventually(t, flipTimeout, 200*time.Millisecond, what, func() (bool, error) {
		start := time.Now()
		if bad, errs := round(t, cs); len(bad)+len(errs) > 0 {
			return false, errors.New(strings.Join(append(bad, errs...), "; "))
		}
		flipped = start.Sub(since)
		return true, nil
	})
	// A failed exec judges nothing: run that round again, a few times.
	for done, tries := 0, 0; done < stable; tries++ {
		bad, errs := round(t, cs)
		switch {
		case len(bad) > 0:
			t.Fatalf("%s: held %s after the change, then no longer: %s", what, fmtDur(flipped), strings.Join(bad, "; "))
		case len(errs) == 0:
			done++
		case tries >= 2*stable+2:
			t.Fatalf("%s: probes fail to run: %s", what, strings.Join(errs, "; "))
		}
	}
	t.Logf("%s: %d probes as expected within %s of the change", what, len(cs), fmtDur(flipped))
	return flipped
}

// join concatenates groups of checks.
func join(groups ...[]check) []check {
	var out []check
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}
