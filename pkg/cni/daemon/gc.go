package daemon

import (
	"context"
	"encoding/json"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
)

// gc removes every attachment the runtime no longer lists as valid. Each
// is decided under its host interface's lock on what OVS says then, so that
// a sandbox plugged after the listing (valid, replacing an invalid one on
// the same host interface) is never removed.
func (d *Daemon) gc(ctx context.Context, req *api.Request) *types.Error {
	var conf types.PluginConf
	if err := json.Unmarshal(req.Config, &conf); err != nil {
		return types.NewError(types.ErrDecodingFailure, "invalid network configuration", err.Error())
	}
	valid := map[string]bool{}
	for _, a := range conf.ValidAttachments {
		valid[a.ContainerID+"/"+a.IfName] = true
	}
	ports, err := d.OVS.Ports(ctx)
	if err != nil {
		return tryAgain("reading OVS: %v", err)
	}
	for _, p := range ports {
		if valid[p.ContainerID+"/"+p.IfName] {
			continue
		}
		if _, cerr := d.removeAttachment(ctx, p.ContainerID, p.IfName); cerr != nil {
			return cerr
		}
	}
	return nil
}
