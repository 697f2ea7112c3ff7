package openstack_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// Each way connecting fails is told in operator words, against real
// (fake) servers.
func TestExplainConnectErrors(t *testing.T) {
	c := newCloud(t)
	wrongCA := openstacktest.OtherCA(t)
	down := closedAddress(t)
	tests := []struct {
		name  string
		setup func(a *config.Auth)
		want  string
	}{
		{name: "wrong CA", setup: func(a *config.Auth) { a.CAFile = wrongCA },
			want: "keystone " + c.URL + ": TLS certificate not trusted by cafile " + wrongCA +
				" (from [neutron] cafile): x509: certificate signed by unknown authority"},
		{name: "wrong region", setup: func(a *config.Auth) { a.RegionName = "RegionThree" },
			want: "no network endpoint for region RegionThree, interface public in the catalog (regions in the catalog: RegionOne, RegionTwo)"},
		{name: "wrong interface", setup: func(a *config.Auth) { a.RegionName, a.EndpointType = "RegionTwo", "admin" },
			want: "no network endpoint for region RegionTwo, interface admin in the catalog (interfaces in the catalog: internal, public)"},
		{name: "revoked credential", setup: func(a *config.Auth) {
			c.AddApplicationCredential("expired", "x")
			c.ExpireApplicationCredential("expired")
			a.ApplicationCredentialID, a.ApplicationCredentialSecret = "expired", "x"
		}, want: "keystone " + c.URL + " rejected the application credential expired (401): it may be revoked or expired"},
		{name: "wrong secret", setup: func(a *config.Auth) { a.ApplicationCredentialSecret = "guess" },
			want: "keystone " + c.URL + " rejected the application credential ac1 (401)"},
		{name: "deleted credential", setup: func(a *config.Auth) { a.ApplicationCredentialID = "gone" },
			want: "keystone " + c.URL + " does not know the application credential gone (404): it was deleted, or the ID is wrong"},
		{name: "wrong password", setup: func(a *config.Auth) {
			*a = c.passwordAuth()
			a.Password = "guess"
		}, want: "keystone " + c.URL + " rejected the password of user kuryr (401): wrong user, password or domain"},
		{name: "keystone down", setup: func(a *config.Auth) { a.AuthURL = "https://" + down + "/v3" },
			want: "keystone https://" + down + "/v3 unreachable: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := c.appCredAuth()
			tt.setup(&a)
			_, err := openstack.NewClients(context.Background(), a, "")
			if err == nil {
				t.Fatal("connected")
			}
			var ce *openstack.ConnectError
			if !errors.As(err, &ce) {
				t.Errorf("%T is not a ConnectError", err)
			}
			t.Log(err)
			// Explain finds it through any wrapping.
			if got := openstack.Explain(fmt.Errorf("OpenStack: %w", err)); !strings.Contains(got, tt.want) {
				t.Errorf("explained as\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// Errors without a ConnectError around them are explained from what they
// carry; a failed token renewal by its cause.
func TestExplainBareErrors(t *testing.T) {
	keystone401 := gophercloud.ErrUnexpectedResponseCode{URL: "https://k/v3/auth/tokens", Actual: 401,
		Body: []byte(`{"error": {"code": 401, "message": "The request you have made requires authentication."}}`)}
	neutron401 := gophercloud.ErrUnexpectedResponseCode{URL: "https://n/v2.0/ports", Actual: 401}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "nil", err: nil, want: ""},
		{name: "an error answer", err: fmt.Errorf("list ports: %w", gophercloud.ErrUnexpectedResponseCode{URL: "https://n/v2.0/ports",
			Actual: 503, Body: []byte(`{"NeutronError": "busy"}`)}), want: `OpenStack https://n/v2.0/ports answered 503: {"NeutronError": "busy"}`},
		{name: "renewal refused", err: &gophercloud.ErrUnableToReauthenticate{ErrOriginal: neutron401, ErrReauth: keystone401},
			want: "token renewal failed: keystone https://k/v3/auth/tokens rejected the credentials (401)"},
		{name: "anything else", err: errors.New("boom"), want: "OpenStack: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := openstack.Explain(tt.err); !strings.HasPrefix(got, tt.want) {
				t.Errorf("explained as\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// closedAddress is a local address nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
