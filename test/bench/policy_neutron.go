package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// paths finds the probe clients' network namespaces.
func (b *policyBench) paths() (pa, pb *path, err error) {
	if pa, err = newPath(b.cliA, b.srvA); err != nil {
		return nil, nil, err
	}
	if pb, err = newPath(b.cliB, b.srvB); err != nil {
		pa.close()
		return nil, nil, err
	}
	return pa, pb, nil
}

// createPolicies checks both probe paths are open, creates every policy
// at once (10 requests in flight), times until all their
// KuryrNetworkPolicies are Ready, and checks both paths closed.
func (b *policyBench) createPolicies(ctx context.Context, pa, pb *path) error {
	for _, p := range []*path{pa, pb} {
		if err := p.await(true, time.Minute); err != nil {
			return fmt.Errorf("before any policy: %w (pods no policy selects must admit the pod subnet)", err)
		}
	}
	w0, err := b.quiet(ctx)
	if err != nil {
		return err
	}
	nps := b.policies()
	start := time.Now()
	if err := inParallel(len(nps), 10, func(i int) error { _, err := b.create(ctx, nps[i]); return err }); err != nil {
		return err
	}
	if err := b.waitKNPs(ctx, len(nps), 6*time.Minute); err != nil {
		return err
	}
	took := time.Since(start)
	w1, err := b.quiet(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("kuryr: %d policies created at once -> all KuryrNetworkPolicies Ready   %s   (Neutron writes per policy %.1f, until quiet)\n",
		len(nps), secs(took), (w1-w0)/float64(len(nps)))
	b.row(fmt.Sprintf("%d policies created at once → all KuryrNetworkPolicies Ready", len(nps)), strings.TrimSpace(secs(took)), "", "")
	for _, p := range []*path{pa, pb} {
		if err := p.await(false, flipWithin); err != nil {
			return fmt.Errorf("policies not enforced: %w (the pods' base groups, pod_security_groups, must not admit the pod subnet)", err)
		}
	}
	return nil
}

// inParallel runs f(0..n-1) with at most width at once.
func inParallel(n, width int, f func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitKNPs waits until the run's namespaces hold n KuryrNetworkPolicies,
// all Ready with a security group, and records their peer groups.
func (b *policyBench) waitKNPs(ctx context.Context, n int, timeout time.Duration) error {
	ready := 0
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		var list kuryrv1.KuryrNetworkPolicyList
		if err := b.e.kuryr.List(ctx, &list); err != nil {
			return err
		}
		ready = 0
		for _, k := range list.Items {
			if b.teams[k.Namespace] != "" && k.Status.SecurityGroupID != "" && meta.IsStatusConditionTrue(k.Status.Conditions, kuryrv1.ConditionReady) {
				ready++
			}
		}
		if ready == n {
			return b.notePeerGroups(ctx)
		}
	}
	return fmt.Errorf("%d of %d KuryrNetworkPolicies Ready after %s", ready, n, timeout)
}

// neutronCounts: what Neutron holds for the run's policies (groups named
// kuryr-np-<policy UID>) and the cluster's peer groups (kuryr-peer-<key>,
// rules-free: their member ports are a peer's pods).
type neutronCounts struct {
	groups, rules, hostRules int // hostRules: rules whose remote is one pod's address
	peerGroups, members      int // members: (port, peer group) pairs of the cluster's ports
	addressGroups, addresses int // peers' address groups (where Neutron enforces them), their addresses
	peerIDs                  map[string]bool
	openRules                int // in kuryr-open-ingress and kuryr-open-egress
}

func (b *policyBench) count(ctx context.Context) (neutronCounts, error) {
	c := neutronCounts{peerIDs: map[string]bool{}}
	type group struct{ ID, Name string }
	var sgs, tagged struct {
		Groups []group `json:"security_groups"`
	}
	var rs struct {
		Rules []struct {
			Group  string `json:"security_group_id"`
			Prefix string `json:"remote_ip_prefix"`
		} `json:"security_group_rules"`
	}
	var ps struct {
		Ports []struct {
			Groups []string `json:"security_groups"`
		} `json:"ports"`
	}
	var ags struct {
		Groups []struct {
			ID, Name, Description string
			Addresses             []string
		} `json:"address_groups"`
	}
	cluster := names.ClusterTag(b.e.cluster)
	for _, l := range []struct {
		resource string
		query    url.Values
		into     any
	}{
		{"security-groups", url.Values{"fields": {"id", "name"}}, &sgs},
		{"security-groups", url.Values{"fields": {"id", "name"}, "tags": {cluster}}, &tagged},
		{"security-group-rules", url.Values{"fields": {"security_group_id", "remote_ip_prefix"}}, &rs},
		{"ports", url.Values{"fields": {"security_groups"}, "tags": {cluster}}, &ps},
		{"address-groups", url.Values{}, &ags},
	} {
		u := b.e.OS.Network.ServiceURL(l.resource) + "?" + l.query.Encode()
		if _, err := b.e.OS.Network.Get(ctx, u, l.into, nil); err != nil {
			return c, fmt.Errorf("list %s: %w", l.resource, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	ours, open := map[string]bool{}, map[string]bool{}
	for _, g := range sgs.Groups {
		if uid, ok := strings.CutPrefix(g.Name, names.PolicyGroupPrefix); ok && b.uids[uid] {
			ours[g.ID] = true
		}
		open[g.ID] = names.IsOpenGroup(g.Name)
	}
	c.groups = len(ours)
	for _, r := range rs.Rules {
		if open[r.Group] {
			c.openRules++
		}
		if !ours[r.Group] {
			continue
		}
		c.rules++
		if p, err := netip.ParsePrefix(r.Prefix); err == nil && p.IsSingleIP() && b.podIPs[p.Addr().String()] {
			c.hostRules++
		}
	}
	for _, g := range tagged.Groups {
		if strings.HasPrefix(g.Name, names.PeerGroupPrefix) {
			c.peerIDs[g.ID] = true
		}
	}
	c.peerGroups = len(c.peerIDs)
	for _, p := range ps.Ports {
		for _, g := range p.Groups {
			if c.peerIDs[g] {
				c.members++
			}
		}
	}
	for _, g := range ags.Groups {
		if strings.HasPrefix(g.Name, names.PeerGroupPrefix) && g.Description == names.PeerAddressGroupDescription(b.e.cluster) {
			c.peerIDs[g.ID] = true
			c.addressGroups++
			c.addresses += len(g.Addresses)
		}
	}
	return c, nil
}

// notePeerGroups records the peer groups the run's KuryrNetworkPolicies
// name now, for the clean-up to wait for.
func (b *policyBench) notePeerGroups(ctx context.Context) error {
	var list kuryrv1.KuryrNetworkPolicyList
	if err := b.e.kuryr.List(ctx, &list); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range list.Items {
		if b.teams[k.Namespace] == "" {
			continue
		}
		for key, id := range k.Status.PeerGroups {
			b.peerGroups[id] = key
		}
		for key, id := range k.Status.PeerAddressGroups {
			b.peerGroups[id] = key
		}
	}
	return nil
}

// livePeerKeys: the peers the cluster's KuryrNetworkPolicies not being
// deleted name (their groups stay).
func (b *policyBench) livePeerKeys(ctx context.Context) (map[string]bool, error) {
	var list kuryrv1.KuryrNetworkPolicyList
	if err := b.e.kuryr.List(ctx, &list); err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, k := range list.Items {
		if k.DeletionTimestamp.IsZero() {
			for _, p := range k.Spec.Peers {
				live[p.Key] = true
			}
		}
	}
	return live, nil
}
