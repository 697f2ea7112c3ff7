package openstack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"gopkg.in/yaml.v2"

	"github.com/kuryr-k8s/kuryr/pkg/config"
)

// fromCloudsYAML reads the clouds.yaml entry [neutron] cloud names.
// gophercloud's clouds.Parse interprets it (auth, scope, domains, cert and
// key, secure.yaml, profiles); kuryr reads the entry's auth_type, cacert
// and verify itself to name them in errors. What kuryr.conf sets
// explicitly (region_name, endpoint_type, cafile, insecure) wins over the
// entry; gophercloud's OS_* environment variables come in between.
func fromCloudsYAML(a config.Auth) (settings, error) {
	file, err := cloudsFile(a.CloudsFile)
	if err != nil {
		return settings{}, err
	}
	e, err := readEntry(file, a.Cloud)
	if err != nil {
		return settings{}, err
	}
	t := e.trust(a)
	if _, err := t.pool(); err != nil {
		return settings{}, err
	}
	opts := []clouds.ParseOption{clouds.WithCloudName(a.Cloud), clouds.WithLocations(file)}
	if t.caFile != "" {
		opts = append(opts, clouds.WithCACertPath(t.caFile))
	}
	if a.Insecure != nil {
		opts = append(opts, clouds.WithInsecure(*a.Insecure))
	}
	if a.RegionName != "" {
		opts = append(opts, clouds.WithRegion(a.RegionName))
	}
	if a.EndpointType != "" {
		opts = append(opts, clouds.WithEndpointType(a.EndpointType))
	}
	ao, eo, tlsCfg, err := clouds.Parse(opts...)
	if err != nil {
		return settings{}, fmt.Errorf("cloud %q in %s: %w", a.Cloud, file, err)
	}
	if err := e.applyAuthType(&ao); err != nil {
		return settings{}, fmt.Errorf("cloud %q in %s: %w", a.Cloud, file, err)
	}
	e.applyDefaultDomain(&ao)
	return settings{auth: ao, endpoint: eo, tls: tlsCfg, trust: t}, nil
}

// cloudsFile is the clouds.yaml to read: clouds_file, else the first that
// exists of the places gophercloud (and the openstack CLI) look.
func cloudsFile(configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	candidates := []string{"clouds.yaml"}
	if dir, err := os.UserConfigDir(); err == nil {
		candidates = append(candidates, filepath.Join(dir, "openstack", "clouds.yaml"))
	}
	candidates = append(candidates, "/etc/openstack/clouds.yaml")
	if env := os.Getenv("OS_CLIENT_CONFIG_FILE"); env != "" {
		candidates = []string{env}
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("no clouds.yaml: set [neutron] clouds_file (looked in %s)", strings.Join(candidates, ", "))
}

// entry is what kuryr reads of a clouds.yaml entry itself.
type entry struct {
	name string
	clouds.Cloud
	// tlsFile is the file that set cacert or verify (clouds.yaml, or the
	// secure.yaml next to it).
	tlsFile string
}

// readEntry reads cloud name from file, with what the secure.yaml next
// to it says over it.
func readEntry(file, name string) (entry, error) {
	c, err := decode(file, name)
	if err != nil {
		return entry{}, err
	}
	e := entry{name: name, Cloud: c, tlsFile: file}
	secure := filepath.Join(filepath.Dir(file), "secure.yaml")
	s, err := decode(secure, name)
	var absent *notInFile
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.As(err, &absent):
	case err != nil:
		return entry{}, err
	default:
		e.mergeSecure(s, secure)
	}
	return e, nil
}

func (e *entry) mergeSecure(s clouds.Cloud, file string) {
	if s.AuthType != "" {
		e.AuthType = s.AuthType
	}
	if s.CACertFile != "" || s.Verify != nil {
		e.tlsFile = file
	}
	if s.CACertFile != "" {
		e.CACertFile = s.CACertFile
	}
	if s.Verify != nil {
		e.Verify = s.Verify
	}
}

// notInFile: the file has no entry of that name.
type notInFile struct{ file, name, names string }

func (e *notInFile) Error() string {
	return fmt.Sprintf("no cloud %q in %s (it has: %s)", e.name, e.file, e.names)
}

// quoted is a value a YAML error quotes: it may be a password, and the
// error goes to logs and Events.
var quoted = regexp.MustCompile("`[^`]*`")

func decode(file, name string) (clouds.Cloud, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return clouds.Cloud{}, fmt.Errorf("clouds.yaml: %w", err)
	}
	var all clouds.Clouds
	if err := yaml.Unmarshal(b, &all); err != nil {
		return clouds.Cloud{}, fmt.Errorf("%s: not a clouds.yaml: %s", file, quoted.ReplaceAllString(err.Error(), "`...`"))
	}
	c, ok := all.Clouds[name]
	if !ok {
		names := make([]string, 0, len(all.Clouds))
		for n := range all.Clouds {
			names = append(names, n)
		}
		sort.Strings(names)
		return c, &notInFile{file: file, name: name, names: strings.Join(names, ", ")}
	}
	return c, nil
}

// trust resolves the CA and verification: kuryr.conf, else gophercloud's
// $OS_CACERT, else the entry.
func (e *entry) trust(a config.Auth) trust {
	var t trust
	switch {
	case a.CAFile != "":
		t.caFile, t.caFrom = a.CAFile, "[neutron] cafile"
	case os.Getenv("OS_CACERT") != "":
		t.caFile, t.caFrom = os.Getenv("OS_CACERT"), "$OS_CACERT"
	case e.CACertFile != "":
		t.caFile, t.caFrom = e.CACertFile, fmt.Sprintf("cacert of cloud %s in %s", e.name, e.tlsFile)
	}
	switch {
	case a.Insecure != nil:
		t.insecure, t.insecureFrom = *a.Insecure, "[neutron] insecure = true"
	case e.Verify != nil:
		t.insecure, t.insecureFrom = !*e.Verify, fmt.Sprintf("verify: false of cloud %s in %s", e.name, e.tlsFile)
	}
	return t
}

// applyAuthType keeps the method the entry's auth_type names, which
// gophercloud does not read: a password left next to an application
// credential would otherwise be used instead.
func (e *entry) applyAuthType(ao *gophercloud.AuthOptions) error {
	switch e.AuthType {
	case "":
	case "v3applicationcredential":
		ao.Password = ""
	case "password", "v3password":
		ao.ApplicationCredentialID, ao.ApplicationCredentialName, ao.ApplicationCredentialSecret = "", "", ""
	case "token", "v3token", "v2token":
		return fmt.Errorf("auth_type %s: a token cannot be renewed when it expires; use v3applicationcredential or password", e.AuthType)
	default:
		return fmt.Errorf("auth_type %s is not supported: use v3applicationcredential or password", e.AuthType)
	}
	return nil
}

// applyDefaultDomain applies the entry's default_domain, which the
// openstack CLI uses for the user's and the project's domain when neither
// is given, and gophercloud ignores.
func (e *entry) applyDefaultDomain(ao *gophercloud.AuthOptions) {
	d := ""
	if e.AuthInfo != nil {
		d = e.AuthInfo.DefaultDomain
	}
	if d == "" || ao.ApplicationCredentialID != "" {
		return
	}
	if ao.Username != "" && ao.DomainID == "" && ao.DomainName == "" {
		ao.DomainID = d
	}
	if s := ao.Scope; s != nil && s.ProjectName != "" && s.DomainID == "" && s.DomainName == "" {
		s.DomainID = d
	}
}
