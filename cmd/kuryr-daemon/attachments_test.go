package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestAttachmentsNoDaemon(t *testing.T) {
	var out, errOut bytes.Buffer
	// Port 1 on loopback: nothing listens.
	code := attachments([]string{"--config-file", "", "--set", "cni_health_server.port=1"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "is kuryr-daemon running") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}
