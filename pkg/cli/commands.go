package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kuryr-k8s/kuryr/pkg/cli/describe"
	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/version"
)

func describeCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "describe (pod|svc|networkpolicy)/NAME | KIND NAME",
		Short: "Show what kuryr made of a pod, Service or NetworkPolicy: Kubernetes, OpenStack and the node",
		Long: `describe shows one object with everything kuryr made of it:

  pod            its KuryrPort, each VIF's Neutron port (status, binding, addresses, security
                 groups) and, for a hypervisor node, how the node's kuryr-daemon plugged it
  svc            its KuryrLoadBalancer, the Octavia load balancer, listeners, pools and
                 members against the Service's endpoints, floating IP
  networkpolicy  its KuryrNetworkPolicy, the security groups and rules it became, and the
                 pods it selects`,
		Example: `  kubectl kuryr describe pod/web -n demo
  kubectl kuryr describe pod/web -n demo -o jsonpath='{range .ports[*]}{.id} {.status}{"\n"}{end}'
  kubectl kuryr describe svc db -n demo -o yaml
  kubectl kuryr describe networkpolicy/allow-web -n demo -o jsonpath='{.securityGroupId}'`,
		Aliases:           []string{"desc"},
		ValidArgsFunction: completeTargets(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := describe.ParseTarget(args); err != nil {
				return usageError{err}
			}
			e, f, err := g.prepare(cmd.Context())
			if err != nil {
				return err
			}
			return describe.Run(cmd.Context(), e, args, f, cmd.OutOrStdout())
		},
	}
}

func doctorCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check a kuryr installation, both sides: Kubernetes and OpenStack",
		Long: `doctor checks the controller and its leader, a daemon on every node, the CRDs, the
configuration, OpenStack (reachable, the credential's permissions, quota headroom, the objects
kuryr.conf names), what pods admit from the cloud's networks, leaked OpenStack objects, pods
without a port and kuryr's resources that are not Ready. Each check is one line: OK, WARN or
FAIL. It exits 1 if any check failed.`,
		Example: `  kubectl kuryr doctor
  kubectl kuryr doctor -o json --set neutron.region_name=RegionTwo
  kubectl kuryr doctor -o jsonpath='{range [?(@.status=="FAIL")]}{.check}: {.message}{"\n"}{end}'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, f, err := g.prepare(cmd.Context())
			if err != nil {
				return err
			}
			failed, err := doctor.Run(cmd.Context(), e, f, cmd.OutOrStdout())
			if err == nil && failed {
				err = errFailed
			}
			return err
		},
	}
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Get().String("kubectl-kuryr"))
			return err
		},
	}
}

// noArgs refuses arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.Name(), args)}
	}
	return nil
}
