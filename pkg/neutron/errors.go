// Package neutron wraps the Neutron calls kuryr makes, one file per
// resource. Each wrapper is a few lines over gophercloud; what they add is
// what every caller needs: tags that identify kuryr's resources, NotFound on
// delete treated as success, and errors classified for users.
package neutron

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Kind classifies a Neutron error for Events, conditions and retries.
type Kind string

// Error kinds a user can act on; everything else is KindOther.
const (
	KindNotFound    Kind = "NotFound"
	KindSubnetFull  Kind = "SubnetFull"
	KindQuota       Kind = "QuotaExceeded"
	KindUnavailable Kind = "NeutronUnavailable"
	KindConflict    Kind = "Conflict"
	KindBadRequest  Kind = "BadRequest"
	KindOther       Kind = "NeutronError"
)

// Classify says what went wrong with a Neutron call.
func Classify(err error) Kind {
	if err == nil {
		return ""
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &ue) {
		body := string(ue.Body)
		switch {
		case ue.Actual == http.StatusNotFound:
			return KindNotFound
		case strings.Contains(body, "IpAddressGenerationFailure") || strings.Contains(body, "No more IP addresses"):
			return KindSubnetFull
		case strings.Contains(body, "OverQuota") || strings.Contains(body, "Quota exceeded"):
			return KindQuota
		case ue.Actual == http.StatusConflict:
			return KindConflict
		case ue.Actual == http.StatusBadRequest:
			return KindBadRequest
		case ue.Actual >= 500:
			return KindUnavailable
		}
		return KindOther
	}
	if openstack.Unreachable(err) {
		return KindUnavailable
	}
	return KindOther
}

// IsNotFound reports a 404 from Neutron.
func IsNotFound(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusNotFound) }

// InUse says Neutron refused because something still uses the resource
// (409), e.g. a security group on a port.
func InUse(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusConflict) }

// Forbidden says Neutron's policy refused the request (403).
func Forbidden(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusForbidden) }

// BadRequest says Neutron found the request invalid (400).
func BadRequest(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusBadRequest) }

// ignoreNotFound makes deleting something already gone a success.
func ignoreNotFound(err error) error {
	if IsNotFound(err) {
		return nil
	}
	return err
}
