package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/go-logr/logr"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/startup"
)

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
	if err := api.FetchAttachments(url, stdout); err != nil {
		fmt.Fprintf(stderr, "kuryr-daemon attachments: %v\n", err)
		return 1
	}
	return 0
}
