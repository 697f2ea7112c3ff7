package openstacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Keystone is a fake Keystone v3 (identity) served over TLS, for tests of
// how clients authenticate, renew their tokens and find their endpoints.
// It mimics what a real Keystone answers:
//
//   - POST /v3/auth/tokens with the "password" method (a user by name in a
//     domain given by id or name, scoped to a project by id, or by name in a
//     domain) or the "application_credential" method (id and secret, no
//     scope: the credential carries its project) answers 201 Created with
//     the token in the X-Subject-Token header and a body {"token":
//     {"methods", "expires_at", "issued_at", "user", "project", "catalog"}};
//     the catalog lists each service type's endpoints with region,
//     region_id, interface (public, internal, admin) and url.
//   - A wrong password or secret, an unknown user or project, an expired
//     application credential, or a scope asked with an application
//     credential: 401 {"error": {"code": 401, "title": "Unauthorized",
//     "message": ...}}. An unknown (deleted) application credential id: 404
//     "Could not find Application Credential: <id>.".
//   - A token is valid until its expires_at (TTL after it was issued, by
//     the clock SetClock sets) unless revoked (ExpireTokens; deleting an application
//     credential revokes its tokens). A service behind Authorize, as
//     behind keystonemiddleware, answers 401 with WWW-Authenticate:
//     Keystone uri="..." to a missing, unknown, expired or revoked
//     X-Auth-Token, and serves its version document (GET /) without one.
//
// Version discovery of Keystone itself (GET /, GET /v3) is not served:
// give clients an auth URL ending in /v3.
//
// Every httptest TLS server presents the same certificate (for 127.0.0.1),
// so CAFile also verifies the services started with Service.
type Keystone struct {
	// URL is the auth URL: https://127.0.0.1:port/v3.
	URL string
	// CAFile is a PEM file of the CA that signed the server's certificate.
	CAFile string

	mu sync.Mutex
	// ttl is a token's lifetime, now the clock (SetClock).
	ttl time.Duration
	now func() time.Time

	project  Project
	users    map[string]user
	appCreds map[string]*appCred
	catalog  map[string][]Endpoint
	tokens   map[string]time.Time // id: expiry
	issued   int
}

// Domain is a Keystone domain; DefaultDomain is the one every cloud has.
type Domain struct{ ID, Name string }

// DefaultDomain is Keystone's "default" domain.
var DefaultDomain = Domain{ID: "default", Name: "Default"}

// Project is the project tokens are scoped to.
type Project struct {
	ID, Name string
	Domain   Domain
}

// Endpoint is an endpoint of a service in the catalog.
type Endpoint struct{ Region, Interface, URL string }

type user struct {
	password string
	domain   Domain
}

type appCred struct {
	secret  string
	expired bool
}

// NewKeystone starts a fake Keystone, closed with the test, whose tokens
// are scoped to project: ID p1, name kuryr, in DefaultDomain.
func NewKeystone(t testing.TB) *Keystone {
	t.Helper()
	k := &Keystone{ttl: time.Hour, now: time.Now, project: Project{ID: "p1", Name: "kuryr", Domain: DefaultDomain},
		users: map[string]user{}, appCreds: map[string]*appCred{}, catalog: map[string][]Endpoint{}, tokens: map[string]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v3/auth/tokens", k.createToken)
	srv := serveTLS(t, mux)
	k.URL = srv.URL + "/v3"
	k.CAFile = WriteCA(t, srv)
	return k
}

// Project is the project every token is scoped to.
func (k *Keystone) Project() Project { return k.project }

// SetClock sets the clock tokens expire by and their lifetime (by
// default time.Now and one hour).
func (k *Keystone) SetClock(now func() time.Time, ttl time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.now, k.ttl = now, ttl
}

// AddUser adds a user of domain d with a role on the project.
func (k *Keystone) AddUser(name, password string, d Domain) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.users[name] = user{password: password, domain: d}
}

// AddApplicationCredential adds an application credential of the project.
func (k *Keystone) AddApplicationCredential(id, secret string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.appCreds[id] = &appCred{secret: secret}
}

// ExpireApplicationCredential makes the credential past its expires_at:
// Keystone then refuses it with 401.
func (k *Keystone) ExpireApplicationCredential(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.appCreds[id]; c != nil {
		c.expired = true
	}
}

// DeleteApplicationCredential deletes the credential (Keystone then
// answers 404 for it) and revokes every token.
func (k *Keystone) DeleteApplicationCredential(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.appCreds, id)
	clear(k.tokens)
}

// AddEndpoint adds an endpoint of a service type ("network",
// "load-balancer") to the catalog.
func (k *Keystone) AddEndpoint(serviceType string, e Endpoint) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.catalog[serviceType] = append(k.catalog[serviceType], e)
}

// ExpireTokens revokes every token issued so far.
func (k *Keystone) ExpireTokens() {
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.tokens)
}

// Issued is the number of tokens issued so far.
func (k *Keystone) Issued() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.issued
}

// Authorize is keystonemiddleware in front of a service: a request
// without a valid X-Auth-Token gets 401.
func (k *Keystone) Authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		exp, ok := k.tokens[r.Header.Get("X-Auth-Token")]
		valid := ok && k.now().Before(exp)
		k.mu.Unlock()
		if !valid {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Keystone uri=%q", k.URL))
			keystoneError(w, http.StatusUnauthorized, "The request you have made requires authentication.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Service starts a TLS service, closed with the test, behind Authorize;
// GET / answers its version document (a current v2.0, as Neutron and
// Octavia have) without a token, as the real ones do.
func (k *Keystone) Service(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	authorized := k.Authorize(h)
	return serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/" {
			w.Header().Set("Content-Type", "application/json")
			WriteJSON(w, http.StatusOK, map[string]any{"versions": []map[string]any{{"id": "v2.0", "status": "CURRENT"}}})
			return
		}
		authorized.ServeHTTP(w, r)
	}))
}

// serveTLS starts a TLS server closed with the test. Its log is dropped:
// the handshakes that tests of wrong CAs fail on are expected.
func serveTLS(t testing.TB, h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func keystoneError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	WriteJSON(w, code, map[string]any{"error": map[string]any{"code": code, "title": http.StatusText(code), "message": msg}})
}

// decodeAuth reads a token request.
func decodeAuth(r *http.Request) (authRequest, error) {
	var req struct {
		Auth authRequest `json:"auth"`
	}
	err := json.NewDecoder(r.Body).Decode(&req)
	return req.Auth, err
}
