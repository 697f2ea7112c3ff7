package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/kuryr-k8s/kuryr/pkg/cli/migrate"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

func migrateCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Move a cluster from the original (Python) kuryr-kubernetes to kuryr, running pods untouched",
		Long: `migrate moves a cluster the original kuryr-kubernetes networks to kuryr in two steps around
installing kuryr; pods keep their ports, addresses and interfaces, Services their load balancers,
VIPs and floating IPs (docs/migrate.md):

  1. helm install kuryr into another namespace than the original's, with crds.install=false,
     controller.replicas=0 and daemon.enabled=false (its configuration and credentials only);
  2. kubectl kuryr migrate prepare --yes: the original's controller is scaled to 0, its objects are
     recorded and backed up, what they name in OpenStack is tagged for kuryr, then they, its CRDs
     and its DaemonSet are deleted;
  3. helm upgrade kuryr with crds.install=true and the controller and daemons on;
  4. kubectl kuryr migrate finish --yes: the original's finalizers come off each Pod, Service and
     NetworkPolicy once kuryr owns it, then its NetworkPolicy groups and pooled ports are deleted.

Without --yes each step only says what it would do.`,
	}
	cmd.AddCommand(migratePrepareCommand(g), migrateFinishCommand(g))
	return cmd
}

func migrateFlags(cmd *cobra.Command, o *migrate.Options) {
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "do it (without it, only say what would be done)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Minute, "how long each wait may take")
	o.Interval = 2 * time.Second
}

func migratePrepareCommand(g *globals) *cobra.Command {
	o := migrate.Options{}
	cmd := &cobra.Command{
		Use:   "prepare",
		Short: "Stop the original, record its objects and tag what they name in OpenStack for kuryr",
		Long: `prepare checks that kuryr.conf agrees with the original's (pod_subnets_driver, pod_subnet or
pod_router, service_subnet, project), scales the original's kuryr-controller to 0, reads its
KuryrPorts, KuryrNetworks, KuryrLoadBalancers and KuryrNetworkPolicies, writes them and its
workloads to a backup file and records what they name in the ConfigMap kuryr-migration; tags each
pod's port, each namespace's network and subnet (renamed as kuryr names them), each Service's
load balancer and the floating IPs the original allocated, for the cluster;
then deletes the original's objects, finalizers first, its CRDs and its DaemonSet. Running it again
goes on where it stopped.`,
		Example: `  kubectl kuryr migrate prepare --kuryr-namespace kuryr --python-namespace kube-system
  kubectl kuryr migrate prepare --kuryr-namespace kuryr --yes`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, f, err := g.prepare(cmd.Context())
			if err != nil {
				return err
			}
			if o.Backup == "" {
				o.Backup = names.MigrationBackupPrefix + "-" + time.Now().UTC().Format("20060102T150405Z") + ".yaml"
			}
			findings, err := migrate.Prepare(cmd.Context(), e, o)
			return printFindings(cmd, f, findings, err)
		},
	}
	migrateFlags(cmd, &o)
	cmd.Flags().StringVar(&o.PythonNamespace, "python-namespace", "kube-system", "the namespace the original runs in")
	cmd.Flags().StringVar(&o.Backup, "backup", "", "the file the original's objects are written to (default "+
		names.MigrationBackupPrefix+"-<time>.yaml)")
	return cmd
}

func migrateFinishCommand(g *globals) *cobra.Command {
	o := migrate.Options{}
	cmd := &cobra.Command{
		Use:   "finish",
		Short: "Release the original's finalizers as kuryr takes over, then delete its leftovers",
		Long: `finish waits for kuryr-controller, then removes the original's finalizers from each Pod,
Service and NetworkPolicy once kuryr owns it (its KuryrPort Ready with the same port, its
KuryrLoadBalancer Ready with the same load balancer, its KuryrNetworkPolicy Ready); terminating
objects and those the original made nothing for are released at once. Then the original's
NetworkPolicy security groups (kuryr replaced them on every port) and its unused pooled ports
(those carrying its resource_tags) are deleted. Without --yes it says where things stand.`,
		Example: `  kubectl kuryr migrate finish --kuryr-namespace kuryr
  kubectl kuryr migrate finish --kuryr-namespace kuryr --yes --timeout 20m`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, f, err := g.prepare(cmd.Context())
			if err != nil {
				return err
			}
			findings, err := migrate.Finish(cmd.Context(), e, o)
			return printFindings(cmd, f, findings, err)
		},
	}
	migrateFlags(cmd, &o)
	return cmd
}
