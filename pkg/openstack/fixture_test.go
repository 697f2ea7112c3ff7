package openstack_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// cloud is a fake OpenStack: a Keystone whose catalog has, in RegionOne
// and RegionTwo, public and internal endpoints of Neutron and Octavia,
// each a server that names itself ("RegionTwo/internal") in what it lists.
type cloud struct {
	*openstacktest.Keystone
}

// Credentials of the fake cloud.
const (
	appCred, appSecret = "ac1", "s3cret"
	user, password     = "kuryr", "pw"
	// otherUser is in domain otherDomain (ID d2), not in Default.
	otherUser   = "other"
	otherDomain = "d2"
)

func newCloud(t *testing.T) *cloud {
	t.Helper()
	clearOSEnv(t)
	k := openstacktest.NewKeystone(t)
	k.AddUser(user, password, openstacktest.DefaultDomain)
	k.AddUser(otherUser, password, openstacktest.Domain{ID: otherDomain, Name: "Other"})
	k.AddApplicationCredential(appCred, appSecret)
	for _, region := range []string{"RegionOne", "RegionTwo"} {
		for _, iface := range []string{"public", "internal"} {
			label := region + "/" + iface
			k.AddEndpoint("network", openstacktest.Endpoint{Region: region, Interface: iface,
				URL: k.Service(t, list("/v2.0/networks", "networks", label)).URL})
			k.AddEndpoint("load-balancer", openstacktest.Endpoint{Region: region, Interface: iface,
				URL: k.Service(t, list("/v2.0/lbaas/loadbalancers", "loadbalancers", label)).URL})
		}
	}
	return &cloud{k}
}

// list answers GET path with one object named label.
func list(path, key, label string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		openstacktest.WriteJSON(w, http.StatusOK, map[string]any{key: []map[string]any{{"id": "x1", "name": label}}})
	})
}

// clearOSEnv unsets the OS_* variables gophercloud reads, so that the
// tests see kuryr.conf and clouds.yaml only.
func clearOSEnv(t *testing.T) {
	for _, v := range []string{"OS_CLOUD", "OS_CACERT", "OS_CERT", "OS_KEY", "OS_REGION_NAME", "OS_INTERFACE", "OS_CLIENT_CONFIG_FILE"} {
		t.Setenv(v, "")
	}
}

// appCredAuth is [neutron] with the cloud's application credential.
func (c *cloud) appCredAuth() config.Auth {
	return config.Auth{AuthType: "v3applicationcredential", AuthURL: c.URL, ApplicationCredentialID: appCred,
		ApplicationCredentialSecret: appSecret, CAFile: c.CAFile, Timeout: 5 * time.Second}
}

// passwordAuth is [neutron] with the cloud's user, as the defaults have it.
func (c *cloud) passwordAuth() config.Auth {
	return config.Auth{AuthType: "password", AuthURL: c.URL, Username: user, Password: password, UserDomainName: "Default",
		ProjectName: "kuryr", ProjectDomainName: "Default", CAFile: c.CAFile, Timeout: 5 * time.Second}
}

// cloudsAuth is [neutron] cloud = kuryr with a clouds.yaml holding body.
func cloudsAuth(t *testing.T, body string) config.Auth {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clouds.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return config.Auth{Cloud: "kuryr", CloudsFile: p, Timeout: 5 * time.Second}
}

// served lists networks and load balancers and returns who answered.
func served(ctx context.Context, c *openstack.Clients) (network, loadBalancer string, err error) {
	pages, err := networks.List(c.Network, nil).AllPages(ctx)
	if err != nil {
		return "", "", err
	}
	nets, err := networks.ExtractNetworks(pages)
	if err != nil || len(nets) != 1 {
		return "", "", err
	}
	if c.LoadBalancer == nil {
		return nets[0].Name, "", nil
	}
	lbPages, err := loadbalancers.List(c.LoadBalancer, nil).AllPages(ctx)
	if err != nil {
		return "", "", err
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(lbPages)
	if err != nil || len(lbs) != 1 {
		return "", "", err
	}
	return nets[0].Name, lbs[0].Name, nil
}
