package openstack

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/kuryr-k8s/kuryr/pkg/config"
)

// NewClients builds clients from kuryr.conf's [neutron] (one identity for
// every service, as in the original) and [octavia] sections: noauth
// endpoints, a Keystone password or application credential, or an entry of
// clouds.yaml. Tokens are renewed when a service answers 401 (an expired
// or revoked token); concurrent requests wait for one renewal.
//
// A failure to reach or authenticate to OpenStack is a *ConnectError,
// whose message says in operator words what is wrong (Explain); a
// configuration that cannot work (a missing CA file or clouds.yaml entry)
// is an error naming the file and the option.
func NewClients(ctx context.Context, a config.Auth, octaviaEndpoint string) (*Clients, error) {
	if a.NoAuth() {
		return NewNoAuthClients(Endpoints{Network: a.EndpointOverride, LoadBalancer: octaviaEndpoint}, a.Timeout)
	}
	s, err := resolve(a)
	if err != nil {
		return nil, err
	}
	s.auth.AllowReauth = true
	pc, err := gopenstack.NewClient(s.auth.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("keystone URL %q: %w", s.auth.IdentityEndpoint, err)
	}
	pc.HTTPClient = httpClient(a.Timeout, s.tls)
	if err := gopenstack.Authenticate(ctx, pc, s.auth); err != nil {
		return nil, s.connectError("keystone", s.auth.IdentityEndpoint, err)
	}
	c := &Clients{Warnings: s.trust.warnings(), Identity: s.describe()}
	if c.Network, err = gopenstack.NewNetworkV2(pc, s.endpoint); err != nil {
		return nil, s.connectError("network", "", notInCatalog(pc, "network", s.endpoint, err))
	}
	if a.EndpointOverride != "" {
		c.Network.Endpoint = withSlash(a.EndpointOverride)
		c.Network.ResourceBase = c.Network.Endpoint + "v2.0/"
	}
	// Octavia is optional: pods and namespaces work without it.
	if c.LoadBalancer, err = gopenstack.NewLoadBalancerV2(pc, s.endpoint); err != nil {
		c.LoadBalancer = nil
		if !absent(err) {
			c.Warnings = append(c.Warnings, "no Octavia client: "+s.connectError("load-balancer", "", err).Error())
		}
	}
	if c.LoadBalancer != nil && octaviaEndpoint != "" {
		c.LoadBalancer.Endpoint = withSlash(octaviaEndpoint)
		c.LoadBalancer.ResourceBase = c.LoadBalancer.Endpoint + "v2.0/"
	}
	return c, nil
}

// settings are what NewClients connects with, from kuryr.conf or
// clouds.yaml.
type settings struct {
	auth     gophercloud.AuthOptions
	endpoint gophercloud.EndpointOpts
	// tls is nil for Go's defaults.
	tls   *tls.Config
	trust trust
}

func resolve(a config.Auth) (settings, error) {
	if a.AuthType == "" {
		return fromCloudsYAML(a)
	}
	t := trust{caFile: a.CAFile, caFrom: "[neutron] cafile"}
	if a.Insecure != nil && *a.Insecure {
		t.insecure, t.insecureFrom = true, "[neutron] insecure = true"
	}
	tlsCfg, err := t.config()
	if err != nil {
		return settings{}, err
	}
	iface := a.EndpointType
	if iface == "" {
		iface = string(gophercloud.AvailabilityPublic)
	}
	eo := gophercloud.EndpointOpts{Region: a.RegionName, Availability: gophercloud.Availability(iface)}
	return settings{auth: confAuth(a), endpoint: eo, tls: tlsCfg, trust: t}, nil
}

// confAuth turns the [neutron] credentials into gophercloud's options.
// Domain IDs win over names (whose default is "Default"); an application
// credential carries its project, so no scope goes with it.
func confAuth(a config.Auth) gophercloud.AuthOptions {
	if a.AuthType == "v3applicationcredential" || a.AuthType == "applicationcredential" {
		return gophercloud.AuthOptions{IdentityEndpoint: a.AuthURL, ApplicationCredentialID: a.ApplicationCredentialID,
			ApplicationCredentialSecret: a.ApplicationCredentialSecret}
	}
	ao := gophercloud.AuthOptions{IdentityEndpoint: a.AuthURL, Username: a.Username, Password: a.Password}
	if a.UserDomainID != "" {
		ao.DomainID = a.UserDomainID
	} else {
		ao.DomainName = a.UserDomainName
	}
	switch {
	case a.ProjectID != "":
		ao.Scope = &gophercloud.AuthScope{ProjectID: a.ProjectID}
	case a.ProjectDomainID != "":
		ao.Scope = &gophercloud.AuthScope{ProjectName: a.ProjectName, DomainID: a.ProjectDomainID}
	default:
		ao.Scope = &gophercloud.AuthScope{ProjectName: a.ProjectName, DomainName: a.ProjectDomainName}
	}
	return ao
}

// connectError gives err what Explain needs to say what is wrong.
func (s settings) connectError(service, url string, err error) *ConnectError {
	return &ConnectError{Service: service, URL: url, Credential: credentialOf(s.auth), Trust: s.trust.String(), Err: err}
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

// describe says how kuryr authenticates (no secret) and how TLS is
// verified.
func (s settings) describe() string {
	how := "user " + s.auth.Username
	switch {
	case s.auth.ApplicationCredentialID != "":
		how = "application credential " + s.auth.ApplicationCredentialID
	case s.auth.ApplicationCredentialName != "":
		how = "application credential " + s.auth.ApplicationCredentialName
	case s.auth.UserID != "":
		how = "user " + s.auth.UserID
	}
	where := ""
	if s.endpoint.Region != "" {
		where = ", region " + s.endpoint.Region
	}
	iface := string(s.endpoint.Availability)
	if iface == "" {
		iface = "public"
	}
	return fmt.Sprintf("Keystone %s as %s%s, %s endpoints; TLS verified by %s",
		s.auth.IdentityEndpoint, how, where, iface, s.trust)
}
