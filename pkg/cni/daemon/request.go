package daemon

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/utils"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
)

// podArgs are the Kubernetes facts the runtime passes in CNI_ARGS.
type podArgs struct{ Namespace, Name, UID string }

// parsePodArgs reads the keys kuryr knows from CNI_ARGS ("K=V;K2=V2") and
// ignores the rest, whatever IgnoreUnknown says: a runtime adding keys must
// not break pods. ADD and CHECK need the pod's namespace and name.
func parsePodArgs(req *api.Request) (podArgs, *types.Error) {
	var a podArgs
	for _, pair := range strings.Split(req.Args, ";") {
		k, v, _ := strings.Cut(pair, "=")
		switch k {
		case "K8S_POD_NAMESPACE":
			a.Namespace = v
		case "K8S_POD_NAME":
			a.Name = v
		case "K8S_POD_UID":
			a.UID = v
		}
	}
	if a.Namespace == "" || a.Name == "" {
		return a, types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_ARGS lacks K8S_POD_NAMESPACE or K8S_POD_NAME", req.Args)
	}
	return a, nil
}

// validateSandbox checks the sandbox a request names, as the CNI spec
// defines its variables: a container id of letters, digits, '_', '.' and
// '-'; an interface name the kernel accepts.
func validateSandbox(req *api.Request) *types.Error {
	if err := utils.ValidateContainerID(req.ContainerID); err != nil {
		return err
	}
	return utils.ValidateInterfaceName(req.IfName)
}

// validateNetns checks that CNI_NETNS is a network namespace (an absolute
// path to one).
func (d *Daemon) validateNetns(path string) *types.Error {
	if path == "" || !filepath.IsAbs(path) {
		return types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_NETNS must be the absolute path of a network namespace", path)
	}
	if err := d.Kernel.CheckNetns(path); err != nil {
		return types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_NETNS is not a network namespace", err.Error())
	}
	return nil
}

// cniVersion is the version the runtime asked for in its configuration.
func cniVersion(config []byte) (string, *types.Error) {
	var c types.PluginConf
	if err := json.Unmarshal(config, &c); err != nil {
		return "", types.NewError(types.ErrDecodingFailure, "invalid network configuration", err.Error())
	}
	if c.CNIVersion == "" {
		return "", types.NewError(types.ErrInvalidNetworkConfig, "network configuration has no cniVersion", "")
	}
	return c.CNIVersion, nil
}
