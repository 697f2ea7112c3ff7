package openstack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Credentials, domains, regions and interfaces from kuryr.conf and from
// clouds.yaml, and kuryr.conf's settings over the entry's.
func TestNewClientsCredentialsAndEndpoints(t *testing.T) {
	c := newCloud(t)
	appCredEntry := fmt.Sprintf(`clouds:
  kuryr:
    auth_type: v3applicationcredential
    auth:
      auth_url: %s
      application_credential_id: %s
      application_credential_secret: %s
      # left over from a password entry: auth_type says it is not used
      username: nobody
      password: wrong
    region_name: RegionTwo
    interface: internal
    cacert: %s
`, c.URL, appCred, appSecret, c.CAFile)
	passwordEntry := func(auth string) string {
		return fmt.Sprintf("clouds:\n  kuryr:\n    auth:\n      auth_url: %s\n      password: %s\n      project_name: kuryr\n%s    cacert: %s\n",
			c.URL, password, auth, c.CAFile)
	}
	tests := []struct {
		name string
		auth func(t *testing.T) config.Auth
		// want is the label of the endpoints used; wantErr a part of the
		// error.
		want, wantErr string
	}{
		{name: "application credential: first region, public", auth: func(*testing.T) config.Auth { return c.appCredAuth() },
			want: "RegionOne/public"},
		{name: "password: region and internal interface", auth: func(*testing.T) config.Auth {
			a := c.passwordAuth()
			a.RegionName, a.EndpointType = "RegionTwo", "internal"
			return a
		}, want: "RegionTwo/internal"},
		{name: "password: project by ID", auth: func(*testing.T) config.Auth {
			a := c.passwordAuth()
			a.ProjectID, a.ProjectName = "p1", ""
			return a
		}, want: "RegionOne/public"},
		{name: "password: domain IDs win over the default names", auth: func(*testing.T) config.Auth {
			a := c.passwordAuth()
			a.Username, a.UserDomainID, a.ProjectDomainID = otherUser, otherDomain, "default"
			return a
		}, want: "RegionOne/public"},
		{name: "password: user in another domain than user_domain_name", auth: func(*testing.T) config.Auth {
			a := c.passwordAuth()
			a.Username = otherUser
			return a
		}, wantErr: "rejected the password of user other (401)"},
		{name: "clouds.yaml: application credential, its region, interface and cacert", auth: func(t *testing.T) config.Auth {
			return cloudsAuth(t, appCredEntry)
		}, want: "RegionTwo/internal"},
		{name: "clouds.yaml: kuryr.conf's region_name and endpoint_type win", auth: func(t *testing.T) config.Auth {
			a := cloudsAuth(t, appCredEntry)
			a.RegionName, a.EndpointType = "RegionOne", "public"
			return a
		}, want: "RegionOne/public"},
		{name: "clouds.yaml: password with domain IDs", auth: func(t *testing.T) config.Auth {
			return cloudsAuth(t, passwordEntry("      username: other\n      user_domain_id: d2\n      project_domain_id: default\n"))
		}, want: "RegionOne/public"},
		{name: "clouds.yaml: default_domain stands for both domains", auth: func(t *testing.T) config.Auth {
			return cloudsAuth(t, passwordEntry("      username: kuryr\n      default_domain: default\n"))
		}, want: "RegionOne/public"},
		{name: "clouds.yaml: a token cannot be renewed", auth: func(t *testing.T) config.Auth {
			return cloudsAuth(t, "clouds:\n  kuryr:\n    auth_type: token\n    auth: {auth_url: "+c.URL+", token: t}\n")
		}, wantErr: "auth_type token: a token cannot be renewed"},
		{name: "clouds.yaml: a YAML error does not quote the values", auth: func(t *testing.T) config.Auth {
			return cloudsAuth(t, "clouds:\n  kuryr:\n    auth: s3cret-password\n")
		}, wantErr: "not a clouds.yaml: yaml: unmarshal errors:\n  line 3: cannot unmarshal !!str `...` into"},
		{name: "clouds.yaml: no such entry", auth: func(t *testing.T) config.Auth {
			a := cloudsAuth(t, appCredEntry)
			a.Cloud = "other"
			return a
		}, wantErr: `no cloud "other" in `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			osc, err := openstack.NewClients(ctx, tt.auth(t), "")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to say %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			network, lb, err := served(ctx, osc)
			if err != nil {
				t.Fatal(err)
			}
			if network != tt.want || lb != tt.want {
				t.Errorf("network from %s, load balancers from %s, want %s", network, lb, tt.want)
			}
		})
	}
}
