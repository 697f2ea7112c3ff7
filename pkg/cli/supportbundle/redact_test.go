package supportbundle

import "testing"

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"application_credential_secret: s3cr3t", "application_credential_secret: REDACTED"},
		{`{"password": "hunter2", "username": "kuryr"}`, `{"password": REDACTED, "username": "kuryr"}`},
		{"[neutron]\npassword = p@ss\nusername = kuryr", "[neutron]\npassword = REDACTED\nusername = kuryr"},
		{"X-Auth-Token: gAAAAABk", "X-Auth-Token: REDACTED"},
		{"Authorization: Bearer eyJhbGci", "Authorization: Bearer REDACTED"},
		{"msg=auth token=abc123 user=x", "msg=auth token=REDACTED user=x"},
		// Names that only refer to a secret stay readable.
		{"token_file = /var/run/secrets/kubernetes.io/serviceaccount/token", "token_file = /var/run/secrets/kubernetes.io/serviceaccount/token"},
		{"secretName: kuryr-openstack", "secretName: kuryr-openstack"},
		{"application_credential_id: 0c3f", "application_credential_id: 0c3f"},
		{"a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nb", "a\nREDACTED PRIVATE KEY\nb"},
		{"no secrets here: 10.0.0.1", "no secrets here: 10.0.0.1"},
	} {
		if got := string(Redact([]byte(c.in))); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
