package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// flipTarget: the p99 of a policy or label change until enforced.
const flipTarget = 2 * time.Second

// sample is one timed flip: its kind, its time, and the controller's
// Neutron writes from the change until the controller was quiet again.
type sample struct {
	kind   string
	took   time.Duration
	writes float64
}

// step is one change of a series: what it is, the state it brings the
// path to, the change itself, and what to check (untimed) before it.
type step struct {
	kind    string
	open    bool
	write   func(ctx context.Context, i int) error
	prepare func(ctx context.Context) error // optional
}

// series runs n samples over the path, cycling through steps; before
// each, the controller has made no Neutron write for a while and Neutron
// is idle, so that no sample pays for the previous one.
func (b *policyBench) series(ctx context.Context, p *path, n int, steps []step) ([]sample, error) {
	w0, err := b.quiet(ctx)
	if err != nil {
		return nil, err
	}
	var out []sample
	for i := 0; i < n; i++ {
		s := steps[i%len(steps)]
		if s.prepare != nil {
			if err := s.prepare(ctx); err != nil {
				return out, err
			}
		}
		took, err := p.flip(s.open, func() error { return s.write(ctx, i) })
		if err != nil {
			return out, fmt.Errorf("%s (sample %d): %w", s.kind, i+1, err)
		}
		w1, err := b.quiet(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, sample{kind: s.kind, took: took, writes: w1 - w0})
		w0 = w1
	}
	return out, nil
}

// policyFlips: (a) srv-a is isolated by srv-a-deny; a flip-N policy
// admitting cli-a is created (open), its port changed to 8081 (closed),
// changed back (open) and deleted (closed). Then the yardstick: a rule
// admitting cli-a's address created and deleted directly in srv-a-deny's
// security group.
func (b *policyBench) policyFlips(ctx context.Context, p *path) error {
	current := map[string]*networkingv1.NetworkPolicy{}
	name := func(i int) string { return fmt.Sprintf("flip-%02d", i/4) }
	update := func(port int32) func(context.Context, int) error {
		return func(ctx context.Context, i int) error {
			np := current[name(i)]
			np.Spec = b.flipPolicy(np.Name, port).Spec
			got, err := b.e.Kube.NetworkingV1().NetworkPolicies(np.Namespace).Update(ctx, np, metav1.UpdateOptions{})
			if err != nil {
				return err
			}
			current[name(i)] = got
			return nil
		}
	}
	steps := []step{
		{kind: "created, admits", open: true, write: func(ctx context.Context, i int) (err error) {
			current[name(i)], err = b.create(ctx, b.flipPolicy(name(i), 8080))
			return err
		}},
		{kind: "port changed, denies", write: update(8081)},
		{kind: "port changed back, admits", open: true, write: update(8080)},
		{kind: "deleted, denies", write: func(ctx context.Context, i int) error {
			return b.e.Kube.NetworkingV1().NetworkPolicies(b.srvA.Namespace).Delete(ctx, name(i), metav1.DeleteOptions{})
		}, prepare: b.notePeerGroups}, // for the clean-up's check
	}
	kuryr, err := b.series(ctx, p, b.sz.samples, steps)
	if err != nil {
		b.report("policy created or changed (interrupted)", "policy change", kuryr, "", nil)
		return err
	}
	// Leave no flip policy behind for the yardstick.
	if len(kuryr)%len(steps) != 0 {
		_ = b.e.Kube.NetworkingV1().NetworkPolicies(b.srvA.Namespace).Delete(ctx, name(len(kuryr)), metav1.DeleteOptions{})
		if err := p.await(false, flipWithin); err != nil {
			return err
		}
	}
	var direct []sample
	if b.sz.direct > 0 {
		direct, err = b.directRule(ctx, p)
	}
	b.report("policy created or changed", "policy change", kuryr, "rule created or deleted in srv-a-deny's group", direct)
	return err
}

// labelFlips: (b) srv-b-clients admits role=client pods; cli-b's label
// is set (open) and removed (closed), which kuryr turns into the peer's
// group added to or removed from cli-b's port. Then the yardstick: that
// port change made directly in Neutron.
func (b *policyBench) labelFlips(ctx context.Context, p *path) error {
	label := func(value string) func(context.Context, int) error {
		patch := []byte(`{"metadata":{"labels":{"role":` + value + `}}}`)
		return func(ctx context.Context, _ int) error {
			_, err := b.e.Kube.CoreV1().Pods(b.cliB.Namespace).Patch(ctx, b.cliB.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}
	}
	kuryr, err := b.series(ctx, p, b.sz.samples, []step{
		{kind: "role=client set, admits", open: true, write: label(`"client"`)},
		{kind: "role=client removed, denies", write: label("null")},
	})
	if err != nil {
		b.report("pod label changed (interrupted)", "label change", kuryr, "", nil)
		return err
	}
	if len(kuryr)%2 == 1 {
		if err := label("null")(ctx, 0); err != nil {
			return err
		}
		if err := p.await(false, flipWithin); err != nil {
			return err
		}
	}
	var direct []sample
	if b.sz.direct > 0 {
		direct, err = b.directMembership(ctx, p)
	}
	b.report("pod label changed", "label change", kuryr, "peer group added to or removed from cli-b's port", direct)
	return err
}

// report prints a series (what happened; per change: its unit) and its
// yardstick (how), by kind, and adds them to the table.
func (b *policyBench) report(what, unit string, kuryr []sample, how string, direct []sample) {
	all, writes := durations(kuryr, "")
	if len(all) == 0 {
		return
	}
	fmt.Printf("kuryr: %s -> probe flips   p50 %s  p99 %s  max %s   (%d samples; Neutron writes per change %.1f)\n",
		what, secs(percentile(all, 50)), secs(percentile(all, 99)), secs(percentile(all, 100)), len(all), writes)
	var kinds []string
	for _, s := range kuryr {
		if !slices.Contains(kinds, s.kind) {
			kinds = append(kinds, s.kind)
		}
	}
	for _, k := range kinds {
		d, w := durations(kuryr, k)
		fmt.Printf("         %-30s p50 %s  max %s   (%d; writes %.1f)\n", k, secs(percentile(d, 50)), secs(percentile(d, 100)), len(d), w)
	}
	p99 := percentile(all, 99)
	directCell := ""
	if len(direct) > 0 {
		// kuryr should not react to them: its writes meanwhile say it did.
		d, w := durations(direct, "")
		fmt.Printf("Neutron alone: %s -> probe flips   p50 %s  p99 %s  max %s   (%d samples; controller writes meanwhile %.1f)\n",
			how, secs(percentile(d, 50)), secs(percentile(d, 99)), secs(percentile(d, 100)), len(d), w)
		fmt.Printf("kuryr / Neutron alone: p50 %.2f x, p99 %.2f x\n", ratio(percentile(all, 50), percentile(d, 50)), ratio(p99, percentile(d, 99)))
		directCell = pair(d)
		if b.undone > 0 {
			fmt.Printf("Neutron alone: kuryr took back %d of the direct changes (a resync?); each was made again, untimed, before the next sample\n", b.undone)
			b.undone = 0
		}
	}
	fmt.Printf("target: %s enforced p99 <= %s: %s (%s)\n\n", what, flipTarget, verdict(p99 <= flipTarget), secs(p99))
	b.row(what+" → probe flips, p50 / p99", pair(all), directCell, fmt.Sprintf("p99 ≤ %s: %s", flipTarget, verdict(p99 <= flipTarget)))
	b.row("Neutron writes per "+unit+" (whole controller, until quiet)", fmt.Sprintf("%.1f", writes), "1", "")
}

// durations: the times of the samples of one kind ("": all) and their
// mean Neutron writes.
func durations(ss []sample, kind string) ([]time.Duration, float64) {
	var d []time.Duration
	var w float64
	for _, s := range ss {
		if kind == "" || s.kind == kind {
			d, w = append(d, s.took), w+s.writes
		}
	}
	return d, w / float64(max(len(d), 1))
}

func pair(d []time.Duration) string {
	return fmt.Sprintf("%.2f s / %.2f s", percentile(d, 50).Seconds(), percentile(d, 99).Seconds())
}

func ratio(a, b time.Duration) float64 { return a.Seconds() / max(b.Seconds(), 1e-3) }

// writes reads the controller's count of Neutron writes.
func (b *policyBench) writes() (float64, error) {
	mf, err := scrape(b.e)
	if err != nil {
		return 0, fmt.Errorf("controller metrics: %w", err)
	}
	_, w := requestCounts(mf, "network")
	return w, nil
}

// quiet waits until the controller has made no Neutron write for a second
// (at most 20 s), then until Neutron is idle, and returns the count.
func (b *policyBench) quiet(ctx context.Context) (float64, error) {
	start := time.Now()
	last, err := b.writes()
	if err != nil {
		return 0, err
	}
	since := time.Now()
	for deadline := since.Add(20 * time.Second); time.Since(since) < time.Second && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		w, err := b.writes()
		if err != nil {
			return 0, err
		}
		if w != last {
			last, since = w, time.Now()
		}
	}
	if time.Since(since) < time.Second && !b.noisy {
		b.noisy = true
		fmt.Printf("(the controller wrote to Neutron for %s without a pause: writes per change include unrelated ones)\n", time.Since(start).Round(time.Second))
	}
	settleNeutron(ctx, b.e)
	return last, nil
}
