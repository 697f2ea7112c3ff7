package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Until OpenStack answers, /readyz says why in operator words and each
// new reason is logged once; then the controller is ready.
func TestConnectOpenStack(t *testing.T) {
	revoked := &openstack.ConnectError{Service: "keystone", URL: "https://k/v3",
		Credential: openstack.Credential{AppCredential: true, Name: "ac1"},
		Err:        gophercloud.ErrUnexpectedResponseCode{Actual: 401}}
	down := errors.New("dial tcp: connection refused")
	attempts := []error{revoked, revoked, revoked, down, nil}
	var logs []string
	logger := funcr.New(func(prefix, args string) { logs = append(logs, args) }, funcr.Options{Verbosity: 0})
	var status openStackStatus
	if err := status.check(); err == nil || err.Error() != "not connected to OpenStack yet" {
		t.Errorf("before the first attempt: %v", err)
	}
	var readiness []string
	n := 0
	c, err := connectOpenStack(context.Background(), logger, &status, time.Millisecond, 2*time.Millisecond,
		func(context.Context) (*openstack.Clients, error) {
			if n > 0 {
				readiness = append(readiness, fmt.Sprint(status.check()))
			}
			err := attempts[n]
			n++
			if err != nil {
				return nil, err
			}
			return &openstack.Clients{Warnings: []string{"TLS verification is off"}}, nil
		})
	if err != nil || c == nil {
		t.Fatalf("connect: %v", err)
	}
	if err := status.check(); err != nil {
		t.Errorf("connected, but not ready: %v", err)
	}
	want := "not connected to OpenStack, retrying: keystone https://k/v3 rejected the application credential ac1 (401): it may be revoked or expired"
	if !strings.HasPrefix(readiness[0], want) {
		t.Errorf("readiness %q\nwant %q", readiness[0], want)
	}
	if !strings.Contains(readiness[3], "connection refused") {
		t.Errorf("readiness after the reason changed: %q", readiness[3])
	}
	all := strings.Join(logs, "\n")
	if strings.Count(all, "rejected the application credential") != 1 || strings.Count(all, "connection refused") != 1 {
		t.Errorf("each reason logged once, got:\n%s", all)
	}
	if !strings.Contains(all, "connected to OpenStack") || !strings.Contains(all, "TLS verification is off") {
		t.Errorf("no success or warning logged:\n%s", all)
	}
}
