package supportbundle

import (
	"regexp"
	"strings"
)

var (
	// namedSecret matches a value after a name that says it is secret,
	// in YAML, JSON, INI (kuryr.conf) and log lines ("key=value").
	namedSecret = regexp.MustCompile(`(?i)("?([a-z_.-]*(?:password|secret|token|passwd|private_key)[a-z_.-]*)"?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,}]+)`)
	// headerSecret matches tokens in HTTP headers (a logged request).
	headerSecret = regexp.MustCompile(`(?i)((?:x-auth-token|x-subject-token|authorization):\s*(?:bearer\s+|basic\s+)?)(\S+)`)
	privateKey   = regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`)
)

// notSecret are names that only refer to a secret (a file, an object's
// name, a reference) and stay readable.
func notSecret(name string) bool {
	n := strings.ToLower(name)
	for _, suffix := range []string{"file", "name", "ref", "path", "dir", "lifetime", "_id", "keys"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}

// Redact replaces secrets' values by REDACTED. Pure.
func Redact(data []byte) []byte {
	data = namedSecret.ReplaceAllFunc(data, func(m []byte) []byte {
		sub := namedSecret.FindSubmatch(m)
		if notSecret(string(sub[2])) {
			return m
		}
		return append(append([]byte{}, sub[1]...), "REDACTED"...)
	})
	data = headerSecret.ReplaceAll(data, []byte("${1}REDACTED"))
	return privateKey.ReplaceAll(data, []byte("REDACTED PRIVATE KEY"))
}
