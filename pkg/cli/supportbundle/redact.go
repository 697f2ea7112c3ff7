package supportbundle

import (
	"regexp"
	"strings"
)

var (
	// namedSecret matches a value after a name that says it is secret, on
	// the same line, in YAML, JSON, INI (kuryr.conf) and log lines: a
	// quoted value, or the rest of the line.
	namedSecret = regexp.MustCompile(`(?i)("?([a-z_.-]*(?:password|secret|token|passwd|private_key)[a-z_.-]*)"?[ \t]*[:=][ \t]*)("[^"\n]*"|'[^'\n]*'|[^\n]+)`)
	// headerSecret matches tokens in HTTP headers (a logged request).
	headerSecret = regexp.MustCompile(`(?i)((?:x-auth-token|x-subject-token|authorization):[ \t]*(?:bearer[ \t]+|basic[ \t]+)?)(\S+)`)
	// urlPassword matches the password of a URL's user information.
	urlPassword = regexp.MustCompile(`(://[^/\s:@]+:)[^@\s/]+@`)
	privateKey  = regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`)
	// plainValue: what a secret's name may be followed by that is no
	// secret (a flag, a count, a block that follows on the next lines).
	plainValue = regexp.MustCompile(`^(true|false|null|[0-9]+|\{\}|\[\]|[|>][-+]?)$`)
)

// notSecret are names that only refer to a secret (a file, an object's
// name, a reference, a setting about it) and stay readable.
func notSecret(name string) bool {
	n := strings.ToLower(name)
	for _, suffix := range []string{"file", "name", "ref", "path", "dir", "lifetime", "_id", "keys", "seconds", "audience"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}

// secretNameRe tells a secret's name (an environment variable's, an
// option's).
var secretNameRe = regexp.MustCompile(`(?i)(password|secret|token|passwd|private_key|credential)`)

// SecretName says whether an environment variable or option named name
// holds a secret (DB_PASSWORD, API_TOKEN, ...).
func SecretName(name string) bool { return secretNameRe.MatchString(name) && !notSecret(name) }

// Redact replaces secrets' values by REDACTED. Pure.
func Redact(data []byte) []byte {
	data = namedSecret.ReplaceAllFunc(data, func(m []byte) []byte {
		sub := namedSecret.FindSubmatch(m)
		value := strings.TrimSpace(strings.Trim(string(sub[3]), `"'`))
		if notSecret(string(sub[2])) || plainValue.MatchString(value) {
			return m
		}
		return append(append([]byte{}, sub[1]...), "REDACTED"...)
	})
	data = headerSecret.ReplaceAll(data, []byte("${1}REDACTED"))
	data = urlPassword.ReplaceAll(data, []byte("${1}REDACTED@"))
	return privateKey.ReplaceAll(data, []byte("REDACTED PRIVATE KEY"))
}
