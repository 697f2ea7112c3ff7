package openstack_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Tokens are renewed when they expire or are revoked, for every kind of
// credential (application credentials and passwords, in kuryr.conf and in
// clouds.yaml): a service's 401 makes gophercloud authenticate again and
// repeat the request, so no call fails across an expiry. Requests that
// meet the expiry together wait for one renewal.
func TestTokensRenewed(t *testing.T) {
	c := newCloud(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	c.SetClock(func() time.Time { return time.Unix(0, clock.Load()) }, time.Hour)
	tests := []struct {
		name string
		auth func(t *testing.T) config.Auth
	}{
		{"kuryr.conf application credential", func(*testing.T) config.Auth { return c.appCredAuth() }},
		{"kuryr.conf password", func(*testing.T) config.Auth { return c.passwordAuth() }},
		{"clouds.yaml application credential", func(t *testing.T) config.Auth {
			return cloudsAuth(t, fmt.Sprintf("clouds:\n  kuryr:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: %s\n"+
				"      application_credential_id: %s\n      application_credential_secret: %s\n    cacert: %s\n", c.URL, appCred, appSecret, c.CAFile))
		}},
		{"clouds.yaml password", func(t *testing.T) config.Auth {
			return cloudsAuth(t, fmt.Sprintf("clouds:\n  kuryr:\n    auth:\n      auth_url: %s\n      username: %s\n      password: %s\n"+
				"      user_domain_name: Default\n      project_name: kuryr\n      project_domain_id: default\n    cacert: %s\n",
				c.URL, user, password, c.CAFile))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			osc, err := openstack.NewClients(ctx, tt.auth(t), "")
			if err != nil {
				t.Fatal(err)
			}
			issued := c.Issued()
			expire := []func(){
				func() { clock.Add(int64(2 * time.Hour)) }, // past expires_at
				c.ExpireTokens, // revoked
			}
			if _, _, err := served(ctx, osc); err != nil {
				t.Fatal(err)
			}
			for round := range 4 {
				expire[round%2]()
				if _, _, err := served(ctx, osc); err != nil {
					t.Fatalf("after expiry %d: %v", round+1, err)
				}
			}
			if got := c.Issued() - issued; got != 4 {
				t.Errorf("%d tokens issued across 4 expiries, want 4", got)
			}
			c.ExpireTokens()
			concurrently(t, ctx, osc, 8)
			if got := c.Issued() - issued - 4; got != 1 {
				t.Errorf("%d tokens issued for 8 concurrent requests after an expiry, want 1", got)
			}
		})
	}
}

// concurrently lists networks and load balancers from n goroutines at
// once, with an expired token.
func concurrently(t *testing.T, ctx context.Context, osc *openstack.Clients, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			_, _, err := served(ctx, osc)
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
