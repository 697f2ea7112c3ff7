package cli

import (
	"cmp"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
	"github.com/kuryr-k8s/kuryr/pkg/cli/supportbundle"
	"github.com/kuryr-k8s/kuryr/pkg/cli/uninstall"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// printFindings prints a command's findings, if any, and returns its
// error: err, else a failure to print, else errFailed when a finding
// failed (exit status 1).
func printFindings(cmd *cobra.Command, f output.Format, findings []doctor.Finding, err error) error {
	if len(findings) == 0 {
		return err
	}
	failed, perr := doctor.Print(cmd.OutOrStdout(), f, findings)
	if err == nil && perr == nil && failed {
		err = errFailed
	}
	return cmp.Or(err, perr)
}

func uninstallCommand(g *globals) *cobra.Command {
	o := uninstall.Options{Interval: 5 * time.Second}
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove every OpenStack object kuryr made and kuryr's objects and finalizers, before removing kuryr",
		Long: `uninstall removes what kuryr made, and nothing else, so that kuryr can then be removed
(helm uninstall, or kubectl delete -k) without KuryrPorts hanging on their finalizers or Neutron
and Octavia objects left behind. In order: kuryr-controller is scaled to 0; every KuryrPort,
KuryrNetwork, KuryrLoadBalancer and KuryrNetworkPolicy is deleted, its finalizer removed; kuryr's
annotations are taken off the Nodes; then every OpenStack object tagged with the cluster
(kuryr.conf's cluster_name) is deleted by the controller's own sweep, pass after pass until none
is left: ports and subports, networks and their router interfaces, load balancers, floating IPs,
security groups, address groups, the pairs kuryr added to VM ports.

Pods keep running but lose their Neutron ports: they are cut off. Drain or delete workloads
first, or accept that. The daemons, the CRDs, the Deployment and the chart are left for helm
uninstall (docs/uninstall.md). Without --yes it only lists what it would remove. Run it with
kuryr-debug's rights (it reads kuryr's credentials). It exits 1 if a step failed; running it
again continues.`,
		Example: `  kubectl kuryr uninstall            # what would be removed
  kubectl kuryr uninstall --yes && helm uninstall kuryr -n kube-system`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, f, err := g.prepare(cmd.Context())
			if err != nil {
				return err
			}
			findings, err := uninstall.Run(cmd.Context(), e, o)
			return printFindings(cmd, f, findings, err)
		},
	}
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "remove (without it, only list what would be removed)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Minute,
		"how long each step may take (the controller's pods gone; OpenStack emptied)")
	return cmd
}

func supportBundleCommand(g *globals) *cobra.Command {
	o := supportbundle.Options{}
	cmd := &cobra.Command{
		Use:   "supportbundle",
		Short: "Collect what it takes to debug kuryr, both sides, into one redacted archive",
		Long: `supportbundle writes one .tar.gz with: kuryr's objects, the nodes, pods, Services,
EndpointSlices, NetworkPolicies, Events and namespaces, kuryr's workloads and kuryr.conf; the logs
of every kuryr-controller and kuryr-daemon container (the previous instance's too); each node's
attachments as its kuryr-daemon records them; the Neutron and Octavia objects tagged for the
cluster; and doctor's findings. The credentials Secret is not collected (only its keys are
named), and every file is redacted (passwords, secrets, tokens, private keys) before it is
written. What could not be collected is listed in errors.txt and on stderr; the rest is written.

Run it with kuryr-view's and kuryr-debug's rights (kuryr-debug: kuryr's logs, the OpenStack
side and the node attachments). Secrets in users' objects are taken out where their structure
says so (environment variables named as secrets, kubectl's last-applied copies) and by pattern
elsewhere; review the archive before you share it.`,
		Example: `  kubectl kuryr supportbundle
  kubectl kuryr supportbundle --since 2h -f /tmp/kuryr.tar.gz`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, _, err := g.prepare(cmd.Context())
			if err != nil {
				return err
			}
			if o.Output == "" {
				o.Output = names.SupportBundle + "-" + time.Now().UTC().Format("20060102T150405Z") + ".tar.gz"
			}
			files, missing, err := supportbundle.Run(cmd.Context(), e, o)
			if err != nil {
				return err
			}
			for _, m := range missing {
				fmt.Fprintln(cmd.ErrOrStderr(), "not collected:", m)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d files (%d parts not collected)\n", o.Output, files, len(missing))
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.Output, "file", "f", "", "the archive to write (default kuryr-supportbundle-<time>.tar.gz)")
	cmd.Flags().DurationVar(&o.Since, "since", 0, "only logs newer than this (e.g. 2h; default: all)")
	return cmd
}
