package openstack

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// trust is how the certificates of Keystone, Neutron and Octavia are
// checked, and where each setting came from, so that an error can name
// the file and the option to fix.
type trust struct {
	// caFile is the CA bundle ("": the system's CAs), set by caFrom
	// ("[neutron] cafile", "$OS_CACERT", "cacert of cloud kuryr in
	// /etc/kuryr/openstack/clouds.yaml").
	caFile, caFrom string
	// insecure turns verification off, as insecureFrom says.
	insecure     bool
	insecureFrom string
}

// String names what verifies the certificates, for error messages.
func (t trust) String() string {
	switch {
	case t.insecure:
		return "nothing: verification is off (" + t.insecureFrom + ")"
	case t.caFile != "":
		return fmt.Sprintf("cafile %s (from %s)", t.caFile, t.caFrom)
	}
	return "the system's CA certificates"
}

// pool reads the CA bundle. A file that is missing, unreadable or holds
// no certificate is an error naming it and where it was set: never a
// silent fallback to the system's CAs.
func (t trust) pool() (*x509.CertPool, error) {
	if t.caFile == "" {
		return nil, nil
	}
	return CAPool(t.caFile, t.caFrom)
}

// CAPool reads the CA bundle file, set by from (for errors: "[neutron]
// cafile"): missing, unreadable or without a certificate is an error
// naming both.
func CAPool(file, from string) (*x509.CertPool, error) {
	path, err := expandHome(file)
	if err != nil {
		return nil, fmt.Errorf("CA file %s (from %s): %w", file, from, err)
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA file %s (from %s): %w", file, from, err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(bytes.TrimSpace(pem)) {
		return nil, fmt.Errorf("CA file %s (from %s): no PEM certificate in it", file, from)
	}
	return p, nil
}

// config is the TLS configuration; nil leaves Go's defaults (the system's
// CAs, verified).
func (t trust) config() (*tls.Config, error) {
	pool, err := t.pool()
	if err != nil || (pool == nil && !t.insecure) {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, InsecureSkipVerify: t.insecure}, nil //nolint:gosec // an explicit operator choice, warned about
}

// warnings are what an operator should hear about the choice: with
// verification off, a CA file is read (a typo is still an error) but not
// used, and kuryr's credentials go to whoever answers.
func (t trust) warnings() []string {
	switch {
	case t.insecure && t.caFile != "":
		return []string{fmt.Sprintf("TLS verification of OpenStack endpoints is off (%s): CA file %s (from %s) is not used",
			t.insecureFrom, t.caFile, t.caFrom)}
	case t.insecure:
		return []string{fmt.Sprintf("TLS verification of OpenStack endpoints is off (%s): kuryr's credentials go to whoever answers",
			t.insecureFrom)}
	}
	return nil
}

// expandHome resolves a leading "~/", as gophercloud does for clouds.yaml
// paths.
func expandHome(p string) (string, error) {
	rest, ok := strings.CutPrefix(p, "~/")
	if !ok {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("resolve ~: %w", err)
	}
	return filepath.Join(home, rest), nil
}
