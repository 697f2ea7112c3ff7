package openstack

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/gophercloud/gophercloud/v2"
)

// Unreachable reports that a call got no answer at all: a network error,
// a deadline passed, or the caller gave up (its context cancelled).
func Unreachable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// Refused reports that the service (Neutron, Octavia) answered a request
// with a client error (4xx): it was understood and nothing was done.
func Refused(err error) bool {
	var ue gophercloud.ErrUnexpectedResponseCode
	return errors.As(err, &ue) && ue.Actual >= 400 && ue.Actual < 500
}

// Unclear reports that a write may or may not have been done: the service
// answered with a server error, or never answered (timeout, connection
// reset, the caller gave up). Neutron and Octavia have no idempotency
// keys, so before the same thing is created again it must be looked up
// (by its tags).
// A refusal (4xx) is clear: nothing was done.
func Unclear(err error) bool {
	if err == nil || Refused(err) {
		return false
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &ue) {
		return ue.Actual >= 500
	}
	// Anything else failed on the way: the request may have been sent.
	return true
}

// ConnectError is a failure to reach or authenticate to OpenStack, with
// what it takes to say in operator words what is wrong: its message is
// that explanation (see Explain); it unwraps to the cause.
type ConnectError struct {
	// Service is what failed: "keystone", "network", "load-balancer".
	Service string
	// URL is where (Keystone's: the auth URL); empty: the failed
	// request's.
	URL string
	// Credential is who authenticated.
	Credential Credential
	// Trust names what verifies TLS certificates ("cafile /x (from
	// [neutron] cafile)").
	Trust string
	Err   error
}

func (e *ConnectError) Unwrap() error { return e.Err }

// Credential names an identity in messages.
type Credential struct {
	// AppCredential: an application credential (by ID or name); otherwise
	// a user's password.
	AppCredential bool
	// Name is the credential's ID or name, or the user's.
	Name string
}

func (c Credential) String() string {
	switch {
	case c.Name == "":
		return "credentials"
	case c.AppCredential:
		return "application credential " + c.Name
	}
	return "password of user " + c.Name
}

// credentialOf is the identity gophercloud authenticates with: a password
// wins over an application credential.
func credentialOf(ao gophercloud.AuthOptions) Credential {
	switch {
	case ao.Password != "":
		return Credential{Name: cmp.Or(ao.Username, ao.UserID)}
	case ao.ApplicationCredentialID != "" || ao.ApplicationCredentialName != "":
		return Credential{AppCredential: true, Name: cmp.Or(ao.ApplicationCredentialID, ao.ApplicationCredentialName)}
	}
	return Credential{}
}

// Explain says in operator words why connecting to OpenStack failed: a
// TLS certificate the configured CAs do not trust, no endpoint for the
// region and interface in the catalog, credentials Keystone rejects, an
// unreachable Keystone or service. A *ConnectError in err's chain adds
// the URL, credential and CA to it; a failed token renewal is explained
// by its cause.
func Explain(err error) string {
	if err == nil {
		return ""
	}
	var ce *ConnectError
	if errors.As(err, &ce) {
		return ce.Error()
	}
	return (&ConnectError{Err: err}).Error()
}

func (e *ConnectError) Error() string {
	var renew *gophercloud.ErrUnableToReauthenticate
	if errors.As(e.Err, &renew) {
		return "token renewal failed: " + (&ConnectError{Service: "keystone", Credential: e.Credential, Trust: e.Trust, Err: renew.ErrReauth}).Error()
	}
	var nf *catalogError
	if errors.As(e.Err, &nf) {
		return nf.Error()
	}
	where := strings.TrimSpace(cmp.Or(e.Service, "OpenStack") + " " + cmp.Or(e.URL, requestURL(e.Err)))
	if why, ok := tlsProblem(e.Err, cmp.Or(e.Trust, "the configured CAs")); ok {
		return where + ": " + why
	}
	if why, ok := unreachable(e.Err); ok {
		return where + " unreachable: " + why
	}
	if v, ok := unexpected(e.Err); ok {
		return e.refusal(where, v.Actual, message(v))
	}
	return where + ": " + e.Err.Error()
}

// refusal explains an HTTP error answer; Keystone's to a token request
// says what is wrong with the credential.
func (e *ConnectError) refusal(where string, code int, body string) string {
	if e.Service == "keystone" {
		switch {
		case code == http.StatusUnauthorized && e.Credential.Name == "":
			return fmt.Sprintf("%s rejected the credentials (401): wrong, revoked or expired", where)
		case code == http.StatusUnauthorized && e.Credential.AppCredential:
			return fmt.Sprintf("%s rejected the %s (401): it may be revoked or expired, or its secret is wrong", where, e.Credential)
		case code == http.StatusUnauthorized:
			return fmt.Sprintf("%s rejected the %s (401): wrong user, password or domain, a disabled user, or no role on the project",
				where, e.Credential)
		case code == http.StatusNotFound && e.Credential.AppCredential:
			return fmt.Sprintf("%s does not know the %s (404): it was deleted, or the ID is wrong", where, e.Credential)
		}
	}
	return fmt.Sprintf("%s answered %d: %s", where, code, body)
}

// tlsProblem explains a certificate the client did not accept.
func tlsProblem(err error, trust string) (string, bool) {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return fmt.Sprintf("TLS certificate not trusted by %s: %v", trust, unknown), true
	case errors.As(err, &host):
		return fmt.Sprintf("TLS certificate is not for this host name: %v", host), true
	case errors.As(err, &invalid):
		return fmt.Sprintf("TLS certificate not valid: %v", invalid), true
	case errors.As(err, &verify):
		return fmt.Sprintf("TLS certificate rejected (checked against %s): %v", trust, verify.Err), true
	}
	return "", false
}

// unreachable explains a request that got no answer (Unreachable).
func unreachable(err error) (string, bool) {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case !Unreachable(err):
		return "", false
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "no route to host", true
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset", true
	case errors.As(err, &dns):
		return fmt.Sprintf("cannot resolve %s: %s", dns.Name, dns.Err), true
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "no answer in time ([neutron] timeout)", true
	case errors.Is(err, context.Canceled):
		return "gave up: stopping", true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error(), true
	}
	return err.Error(), true
}

// unexpected is the error answer in err's chain (gophercloud returns it
// by value or by pointer).
func unexpected(err error) (gophercloud.ErrUnexpectedResponseCode, bool) {
	var v gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &v) {
		return v, true
	}
	var p *gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &p) {
		return *p, true
	}
	return v, false
}

// message is an error answer's message: an OpenStack error body's
// "message", else the body.
func message(v gophercloud.ErrUnexpectedResponseCode) string {
	var body struct {
		Error struct{ Message string } `json:"error"`
	}
	if json.Unmarshal(v.Body, &body) == nil && body.Error.Message != "" {
		return body.Error.Message
	}
	return strings.TrimSpace(string(v.Body))
}

// requestURL is the URL of the request err failed, if it says.
func requestURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.URL
	}
	if v, ok := unexpected(err); ok {
		return v.URL
	}
	return ""
}
