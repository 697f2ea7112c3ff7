// Package octavia wraps the Octavia calls kuryr makes, one file per
// resource, over gophercloud's loadbalancer/v2. What the wrappers add is
// what every caller needs: small types, NotFound on delete treated as
// success, and errors classified for users.
package octavia

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Provisioning states of Octavia objects.
const (
	StatusActive        = "ACTIVE"
	StatusError         = "ERROR"
	StatusPendingDelete = "PENDING_DELETE"
	// Objects in PENDING_CREATE, PENDING_UPDATE or PENDING_DELETE are
	// immutable: a write is refused (409) until they are ACTIVE again.
	statusPendingPrefix = "PENDING_"
)

// StuckDelete: a load balancer still PENDING_DELETE this long after its
// delete is stuck (the provider lost the delete; a delete it applies takes
// seconds), and Octavia refuses every write to it. StuckDeleteRemedy is
// what an operator then does, in the words kuryr says it to users.
const (
	StuckDelete       = 5 * time.Minute
	StuckDeleteRemedy = "an operator must set its provisioning_status to ERROR in Octavia's database, " +
		"then delete it (openstack loadbalancer delete --cascade)"
)

// Pending reports whether an object is being provisioned.
func Pending(status string) bool { return strings.HasPrefix(status, statusPendingPrefix) }

// Client makes the Octavia calls.
type Client struct{ sc *gophercloud.ServiceClient }

// New wraps a load-balancer service client.
func New(sc *gophercloud.ServiceClient) *Client { return &Client{sc: sc} }

// Kind classifies an Octavia error for Events, conditions and retries.
type Kind string

// Error kinds a user can act on; everything else is KindOther.
const (
	KindNotFound     Kind = "NotFound"
	KindBusy         Kind = "LoadBalancerBusy"
	KindConflict     Kind = "Conflict"
	KindQuota        Kind = "QuotaExceeded"
	KindNotSupported Kind = "NotSupportedByProvider"
	KindBadRequest   Kind = "BadRequest"
	KindUnavailable  Kind = "OctaviaUnavailable"
	KindOther        Kind = "OctaviaError"
)

// Classify says what went wrong with an Octavia call.
func Classify(err error) Kind {
	if err == nil {
		return ""
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) {
		if openstack.Unreachable(err) {
			return KindUnavailable
		}
		return KindOther
	}
	body := string(ue.Body)
	switch {
	case ue.Actual == http.StatusNotFound:
		return KindNotFound
	case ue.Actual == http.StatusConflict && (strings.Contains(body, "Invalid state") || strings.Contains(body, "immutable")):
		return KindBusy
	case strings.Contains(body, "already allocated"):
		// A VIP address taken: the provider's 500 wraps Neutron's refusal.
		return KindConflict
	case ue.Actual == http.StatusConflict:
		return KindConflict
	case ue.Actual == http.StatusForbidden && strings.Contains(strings.ToLower(body), "quota"),
		strings.Contains(body, "Quota has been met"):
		return KindQuota
	case ue.Actual == http.StatusNotImplemented:
		return KindNotSupported
	case ue.Actual == http.StatusBadRequest:
		return KindBadRequest
	case ue.Actual >= 500:
		return KindUnavailable
	}
	return KindOther
}

// Unclear reports that a write may or may not have been done (a server
// error or no answer), so that what it creates must be looked up before it
// is created again. The provider's known refusals are clear.
func Unclear(err error) bool {
	return openstack.Unclear(err) && Classify(err) != KindConflict
}

// Busy reports a write refused because the load balancer is PENDING_*: it
// is retried once the load balancer is ACTIVE.
func Busy(err error) bool { return Classify(err) == KindBusy }

// NotFound reports an object Octavia does not have (any more).
func NotFound(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusNotFound) }

func ignoreNotFound(err error) error {
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil
	}
	return err
}
