package openstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"

	"github.com/kuryr-k8s/kuryr/pkg/config"
)

// NewClients builds clients from kuryr.conf's [neutron] (one identity for
// every service, as in the original) and [octavia] sections: noauth
// endpoints, a Keystone password or application credential, or an entry of
// clouds.yaml.
func NewClients(ctx context.Context, a config.Auth, octaviaEndpoint string) (*Clients, error) {
	if a.NoAuth() {
		return NewNoAuthClients(Endpoints{Network: a.EndpointOverride, LoadBalancer: octaviaEndpoint}, a.Timeout)
	}
	ao, eo, tlsCfg, err := authOptions(a)
	if err != nil {
		return nil, err
	}
	if tlsCfg == nil {
		if tlsCfg, err = tlsConfig(a); err != nil {
			return nil, err
		}
	}
	pc, err := gopenstack.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("keystone client for %q: %w", ao.IdentityEndpoint, err)
	}
	pc.HTTPClient = httpClient(a.Timeout, tlsCfg)
	if err := gopenstack.Authenticate(ctx, pc, ao); err != nil {
		return nil, fmt.Errorf("authenticate to %s: %w", ao.IdentityEndpoint, err)
	}
	c := &Clients{}
	if c.Network, err = gopenstack.NewNetworkV2(pc, eo); err != nil {
		return nil, fmt.Errorf("network endpoint: %w", err)
	}
	if a.EndpointOverride != "" {
		c.Network.Endpoint = withSlash(a.EndpointOverride)
		c.Network.ResourceBase = c.Network.Endpoint + "v2.0/"
	}
	// Octavia is optional: pods and namespaces work without it.
	if c.LoadBalancer, err = gopenstack.NewLoadBalancerV2(pc, eo); err != nil {
		c.LoadBalancer = nil
	}
	if c.LoadBalancer != nil && octaviaEndpoint != "" {
		c.LoadBalancer.Endpoint = withSlash(octaviaEndpoint)
		c.LoadBalancer.ResourceBase = c.LoadBalancer.Endpoint + "v2.0/"
	}
	return c, nil
}

// authOptions turns the [neutron] section, or the clouds.yaml entry it
// names, into gophercloud's options. Tokens are renewed on expiry.
func authOptions(a config.Auth) (gophercloud.AuthOptions, gophercloud.EndpointOpts, *tls.Config, error) {
	eo := gophercloud.EndpointOpts{Region: a.RegionName, Availability: gophercloud.Availability(a.EndpointType)}
	var ao gophercloud.AuthOptions
	var tlsCfg *tls.Config
	switch a.AuthType {
	case "password", "v3password":
		ao = gophercloud.AuthOptions{
			IdentityEndpoint: a.AuthURL, Username: a.Username, Password: a.Password,
			DomainName: a.UserDomainName, TenantID: a.ProjectID, TenantName: a.ProjectName,
		}
		if a.ProjectID == "" {
			ao.Scope = &gophercloud.AuthScope{ProjectName: a.ProjectName, DomainName: a.ProjectDomainName}
		}
	case "v3applicationcredential", "applicationcredential":
		ao = gophercloud.AuthOptions{
			IdentityEndpoint: a.AuthURL, ApplicationCredentialID: a.ApplicationCredentialID,
			ApplicationCredentialSecret: a.ApplicationCredentialSecret,
		}
	default:
		opts := []clouds.ParseOption{clouds.WithCloudName(a.Cloud)}
		if a.CloudsFile != "" {
			opts = append(opts, clouds.WithLocations(a.CloudsFile))
		}
		var err error
		if ao, eo, tlsCfg, err = clouds.Parse(opts...); err != nil {
			return ao, eo, nil, fmt.Errorf("clouds.yaml entry %q: %w", a.Cloud, err)
		}
	}
	ao.AllowReauth = true
	return ao, eo, tlsCfg, nil
}

func tlsConfig(a config.Auth) (*tls.Config, error) {
	if a.CAFile == "" && !a.Insecure {
		return nil, nil
	}
	cfg := &tls.Config{InsecureSkipVerify: a.Insecure} //nolint:gosec // an explicit operator choice
	if a.CAFile != "" {
		pem, err := os.ReadFile(a.CAFile)
		if err != nil {
			return nil, fmt.Errorf("[neutron] cafile: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("[neutron] cafile %s: no certificates found", a.CAFile)
		}
	}
	return cfg, nil
}

// httpClient bounds every request and counts it (metrics.go).
func httpClient(timeout time.Duration, tlsCfg *tls.Config) http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	if tlsCfg != nil {
		tr.TLSClientConfig = tlsCfg
	}
	return http.Client{Transport: instrument(tr), Timeout: timeout}
}
