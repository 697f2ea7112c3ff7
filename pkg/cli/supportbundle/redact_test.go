package supportbundle

import "testing"

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"application_credential_secret: s3cr3t", "application_credential_secret: REDACTED"},
		{`{"password": "hunter2", "username": "kuryr"}`, `{"password": REDACTED, "username": "kuryr"}`},
		{"[neutron]\npassword = correct horse battery staple\nusername = kuryr", "[neutron]\npassword = REDACTED\nusername = kuryr"},
		{"password = p@ss,word", "password = REDACTED"},
		{"X-Auth-Token: gAAAAABk", "X-Auth-Token: REDACTED"},
		{"Authorization: Bearer eyJhbGci", "Authorization: Bearer REDACTED"},
		{"msg=auth token=abc123", "msg=auth token=REDACTED"},
		{"url: https://kuryr:hunter2@keystone:5000/v3", "url: https://kuryr:REDACTED@keystone:5000/v3"},
		// Names that only refer to a secret, and what is no secret, stay.
		{"token_file = /var/run/secrets/kubernetes.io/serviceaccount/token", "token_file = /var/run/secrets/kubernetes.io/serviceaccount/token"},
		{"secretName: kuryr-openstack", "secretName: kuryr-openstack"},
		{"secret:\n  secretName: kuryr-openstack", "secret:\n  secretName: kuryr-openstack"},
		{"- serviceAccountToken:\n    expirationSeconds: 3607", "- serviceAccountToken:\n    expirationSeconds: 3607"},
		{"automountServiceAccountToken: false", "automountServiceAccountToken: false"},
		{"application_credential_id: 0c3f", "application_credential_id: 0c3f"},
		{"a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nb", "a\nREDACTED PRIVATE KEY\nb"},
		{"no secrets here: 10.0.0.1", "no secrets here: 10.0.0.1"},
	} {
		if got := string(Redact([]byte(c.in))); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{"DB_PASSWORD": true, "API_TOKEN": true, "OS_APPLICATION_CREDENTIAL_SECRET": true,
		"TOKEN_FILE": false, "POD_NAME": false, "KUBERNETES_NODE_NAME": false} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%s) = %v", name, got)
		}
	}
}
