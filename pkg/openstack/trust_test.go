package openstack_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// Which CA verifies OpenStack: kuryr.conf's cafile and insecure over the
// clouds.yaml entry's cacert and verify; a CA file that cannot be read is
// an error naming it and where it was set.
func TestTrust(t *testing.T) {
	c := newCloud(t)
	wrongCA := openstacktest.OtherCA(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	entry := func(tls string) string {
		return fmt.Sprintf("clouds:\n  kuryr:\n    auth:\n      auth_url: %s\n      application_credential_id: %s\n"+
			"      application_credential_secret: %s\n%s", c.URL, appCred, appSecret, tls)
	}
	yes, no := true, false
	tests := []struct {
		name string
		auth func(t *testing.T) config.Auth
		// wantErr is a part of the error; wantWarn of a warning.
		wantErr, wantWarn string
	}{
		{name: "kuryr.conf cafile", auth: func(*testing.T) config.Auth { return c.appCredAuth() }},
		{name: "kuryr.conf cafile missing", auth: func(*testing.T) config.Auth {
			a := c.appCredAuth()
			a.CAFile = "/nonexistent/ca.pem"
			return a
		}, wantErr: "CA file /nonexistent/ca.pem (from [neutron] cafile): open /nonexistent/ca.pem: no such file or directory"},
		{name: "kuryr.conf cafile without a certificate", auth: func(*testing.T) config.Auth {
			a := c.appCredAuth()
			a.CAFile = garbage
			return a
		}, wantErr: "(from [neutron] cafile): no PEM certificate in it"},
		{name: "kuryr.conf cafile of another CA", auth: func(*testing.T) config.Auth {
			a := c.appCredAuth()
			a.CAFile = wrongCA
			return a
		}, wantErr: "TLS certificate not trusted by cafile " + wrongCA + " (from [neutron] cafile): x509: certificate signed by unknown authority"},
		{name: "insecure with a cafile: warned, the CA not used", auth: func(*testing.T) config.Auth {
			a := c.appCredAuth()
			a.CAFile, a.Insecure = wrongCA, &yes
			return a
		}, wantWarn: "TLS verification of OpenStack endpoints is off ([neutron] insecure = true): CA file " + wrongCA + " (from [neutron] cafile) is not used"},
		{name: "insecure with a missing cafile", auth: func(*testing.T) config.Auth {
			a := c.appCredAuth()
			a.CAFile, a.Insecure = "/nonexistent/ca.pem", &yes
			return a
		}, wantErr: "CA file /nonexistent/ca.pem (from [neutron] cafile)"},
		{name: "no cafile: the system's CAs", auth: func(*testing.T) config.Auth {
			a := c.appCredAuth()
			a.CAFile = ""
			return a
		}, wantErr: "TLS certificate not trusted by the system's CA certificates"},
		{name: "clouds.yaml cacert", auth: func(t *testing.T) config.Auth { return cloudsAuth(t, entry("    cacert: "+c.CAFile+"\n")) }},
		{name: "clouds.yaml cacert missing", auth: func(t *testing.T) config.Auth {
			return cloudsAuth(t, entry("    cacert: /nonexistent/ca.pem\n"))
		}, wantErr: "CA file /nonexistent/ca.pem (from cacert of cloud kuryr in "},
		{name: "clouds.yaml cacert of another CA", auth: func(t *testing.T) config.Auth {
			return cloudsAuth(t, entry("    cacert: "+wrongCA+"\n"))
		}, wantErr: "TLS certificate not trusted by cafile " + wrongCA + " (from cacert of cloud kuryr in "},
		{name: "kuryr.conf cafile over clouds.yaml cacert", auth: func(t *testing.T) config.Auth {
			a := cloudsAuth(t, entry("    cacert: "+c.CAFile+"\n"))
			a.CAFile = wrongCA
			return a
		}, wantErr: "not trusted by cafile " + wrongCA + " (from [neutron] cafile)"},
		{name: "kuryr.conf cafile over a missing clouds.yaml cacert", auth: func(t *testing.T) config.Auth {
			a := cloudsAuth(t, entry("    cacert: /nonexistent/ca.pem\n"))
			a.CAFile = c.CAFile
			return a
		}},
		{name: "clouds.yaml verify: false", auth: func(t *testing.T) config.Auth { return cloudsAuth(t, entry("    verify: false\n")) },
			wantWarn: "TLS verification of OpenStack endpoints is off (verify: false of cloud kuryr in "},
		{name: "kuryr.conf insecure = false over clouds.yaml verify: false", auth: func(t *testing.T) config.Auth {
			a := cloudsAuth(t, entry("    verify: false\n"))
			a.Insecure = &no
			return a
		}, wantErr: "not trusted by the system's CA certificates"},
		{name: "clouds.yaml cacert in secure.yaml", auth: func(t *testing.T) config.Auth {
			a := cloudsAuth(t, entry(""))
			secure := filepath.Join(filepath.Dir(a.CloudsFile), "secure.yaml")
			if err := os.WriteFile(secure, []byte("clouds:\n  kuryr:\n    cacert: "+wrongCA+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return a
		}, wantErr: "(from cacert of cloud kuryr in " + "SECURE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.auth(t)
			wantErr := strings.ReplaceAll(tt.wantErr, "SECURE", filepath.Join(filepath.Dir(a.CloudsFile), "secure.yaml"))
			osc, err := openstack.NewClients(context.Background(), a, "")
			if wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), wantErr) {
					t.Fatalf("err = %v\nwant it to say %q", err, wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := served(context.Background(), osc); err != nil {
				t.Fatal(err)
			}
			warnings := strings.Join(osc.Warnings, "\n")
			if (tt.wantWarn == "") != (warnings == "") || !strings.Contains(warnings, tt.wantWarn) {
				t.Errorf("warnings %q, want %q", warnings, tt.wantWarn)
			}
		})
	}
}
