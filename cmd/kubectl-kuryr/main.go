// Command kubectl-kuryr is the kubectl plugin `kubectl kuryr`: describe a
// pod, Service or NetworkPolicy with what kuryr made of it in Kubernetes,
// OpenStack and on the node, and check an installation (doctor).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kuryr-k8s/kuryr/pkg/cli"
)

func main() {
	// Every way of being asked to stop ends the context, so that the
	// temporary copy of the credentials is removed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
