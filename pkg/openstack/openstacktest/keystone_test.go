package openstacktest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// The fake answers token requests as Keystone v3 does.
func TestKeystoneTokens(t *testing.T) {
	k := NewKeystone(t)
	k.AddUser("kuryr", "pw", DefaultDomain)
	k.AddApplicationCredential("ac1", "s")
	k.AddEndpoint("network", Endpoint{Region: "RegionOne", Interface: "public", URL: "https://neutron"})
	client := trusting(t, k.CAFile)
	appCred := func(id, secret, scope string) string {
		return `{"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": "` + id +
			`", "secret": "` + secret + `"}}` + scope + `}}`
	}
	password := func(pw, scope string) string {
		return `{"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "kuryr", "domain": {"name": "Default"}, "password": "` +
			pw + `"}}}` + scope + `}}`
	}
	project := `, "scope": {"project": {"name": "kuryr", "domain": {"id": "default"}}}`
	tests := []struct {
		name, body  string
		code        int
		wantCatalog bool
	}{
		{"application credential", appCred("ac1", "s", ""), http.StatusCreated, true},
		{"wrong secret", appCred("ac1", "x", ""), http.StatusUnauthorized, false},
		{"unknown application credential", appCred("nope", "s", ""), http.StatusNotFound, false},
		{"application credential with a scope", appCred("ac1", "s", project), http.StatusUnauthorized, false},
		{"password scoped to the project", password("pw", project), http.StatusCreated, true},
		{"password unscoped", password("pw", ""), http.StatusCreated, false},
		{"wrong password", password("x", project), http.StatusUnauthorized, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.Post(k.URL+"/auth/tokens", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Token struct {
					ExpiresAt time.Time        `json:"expires_at"`
					Catalog   []map[string]any `json:"catalog"`
				}
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.code)
			}
			if tt.code != http.StatusCreated {
				return
			}
			if resp.Header.Get("X-Subject-Token") == "" || body.Token.ExpiresAt.Before(time.Now()) {
				t.Errorf("token %q expires %s", resp.Header.Get("X-Subject-Token"), body.Token.ExpiresAt)
			}
			if (len(body.Token.Catalog) > 0) != tt.wantCatalog {
				t.Errorf("catalog %v", body.Token.Catalog)
			}
		})
	}
}

// A service behind Authorize refuses expired and revoked tokens.
func TestKeystoneAuthorize(t *testing.T) {
	k := NewKeystone(t)
	k.AddApplicationCredential("ac1", "s")
	now := time.Now()
	k.SetClock(func() time.Time { return now }, time.Minute)
	svc := k.Service(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	client := trusting(t, k.CAFile)
	token := func() string {
		resp, err := client.Post(k.URL+"/auth/tokens", "application/json", strings.NewReader(
			`{"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": "ac1", "secret": "s"}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("X-Subject-Token")
	}
	call := func(path, tok string) int {
		req, _ := http.NewRequest(http.MethodGet, svc.URL+path, nil)
		req.Header.Set("X-Auth-Token", tok)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tok := token()
	if got := call("/v2.0/ports", tok); got != http.StatusNoContent {
		t.Errorf("valid token: %d", got)
	}
	if got := call("/", ""); got != http.StatusOK {
		t.Errorf("version document without a token: %d", got)
	}
	later := now.Add(2 * time.Minute)
	k.SetClock(func() time.Time { return later }, time.Minute)
	if got := call("/v2.0/ports", tok); got != http.StatusUnauthorized {
		t.Errorf("expired token: %d", got)
	}
	tok = token()
	k.ExpireTokens()
	if got := call("/v2.0/ports", tok); got != http.StatusUnauthorized {
		t.Errorf("revoked token: %d", got)
	}
}

func trusting(t *testing.T, caFile string) *http.Client {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}
