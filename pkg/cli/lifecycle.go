package cli

import (
	"cmp"
	"time"

	"github.com/spf13/cobra"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/uninstall"
)

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
			if len(findings) > 0 {
				failed, perr := doctor.Print(cmd.OutOrStdout(), f, findings)
				if err == nil && perr == nil && failed {
					err = errFailed
				}
				err = cmp.Or(err, perr)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "remove (without it, only list what would be removed)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Minute,
		"how long each step may take (the controller's pods gone; OpenStack emptied)")
	return cmd
}
