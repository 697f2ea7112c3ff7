package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/startup"
)

// attachmentsTimeout bounds `kuryr-daemon attachments`.
const attachmentsTimeout = 5 * time.Second

// attachments is `kuryr-daemon attachments [--config-file F] [--set ...]`:
// it prints the JSON of the running daemon's /attachments (on
// 127.0.0.1:[cni_health_server] port) to stdout. `kubectl kuryr describe`
// execs it in the daemon's container, whose image has no shell or curl.
// It returns the exit status.
func attachments(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kuryr-daemon attachments", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := startup.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := opts.Load(logr.Discard())
	if err != nil {
		fmt.Fprintf(stderr, "kuryr-daemon attachments: invalid configuration: %v\n", err)
		return 1
	}
	url := fmt.Sprintf("http://127.0.0.1:%d%s", cfg.CNIHealthServer.Port, api.AttachmentsPath)
	if err := fetchAttachments(url, stdout); err != nil {
		fmt.Fprintf(stderr, "kuryr-daemon attachments: %v\n", err)
		return 1
	}
	return 0
}

// fetchAttachments copies the body of GET url to w.
func fetchAttachments(url string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), attachmentsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("request %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("is kuryr-daemon running on this node? GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("read %s: %w", url, err)
	}
	return nil
}
