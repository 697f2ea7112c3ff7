// Package openstacktest is the plumbing the fake OpenStack services for
// unit tests share (neutrontest, octaviatest): an HTTP server closed with
// the test and clients pointed at it, an in-memory store of objects by
// collection and id, request counting, and the fault-injection hooks
// (answer instead of the service, or answer otherwise once it has done the
// request). What each service answers stays in its fake.
//
// It also holds a fake Keystone (Keystone) with TLS, expiring tokens and a
// service catalog, for tests of authentication and token renewal; its
// comment documents the real Keystone behaviour it mimics.
package openstacktest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// Faults counts a fake's requests and holds the hooks a test sets to make
// it fail. A fake embeds it, so that tests see fake.Requests, fake.Fail
// and fake.Unanswered; the fake's lock guards it.
type Faults struct {
	// Requests counts requests by method and collection: "POST ports",
	// "PUT members".
	Requests map[string]int
	// Fail, when set, may answer a request instead of the fake (status and
	// body); return 0 to let the fake answer. Nothing is changed.
	Fail func(method, collection string) (int, string)
	// Unanswered, when set, may replace the answer to a request that the
	// fake has done (a create committed, a delete done): the client sees
	// this status and body (a server error, a timeout) although the
	// service has committed.
	Unanswered func(method, collection string) (int, string)
	// Late, when set, may hold a request instead of doing it: the client
	// gets 504 at once (a proxy gave up on a slow service), and the
	// fake does the request when the test says (neutrontest's Land),
	// after later ones, as an overloaded service does what its clients
	// gave up on. Only neutrontest holds requests (octaviatest ignores
	// Late).
	Late func(method, collection string) bool
	late []*http.Request
}

// HoldLocked keeps r for later and answers the client 504 when Late asks
// for it, and says whether it did. The caller holds the fake's lock.
func (h *Faults) HoldLocked(w http.ResponseWriter, r *http.Request, collection string) bool {
	if h.Late == nil || !h.Late(r.Method, collection) {
		return false
	}
	body, _ := io.ReadAll(r.Body)
	held := r.Clone(r.Context())
	held.Body = io.NopCloser(bytes.NewReader(body))
	h.late = append(h.late, held)
	w.WriteHeader(http.StatusGatewayTimeout)
	return true
}

// TakeLateLocked returns the requests held so far, oldest first, and
// forgets them: the fake does them now. The caller holds the fake's lock.
func (h *Faults) TakeLateLocked() []*http.Request {
	out := h.late
	h.late = nil
	return out
}

// NewFaults counts from zero, with no hook set.
func NewFaults() Faults { return Faults{Requests: map[string]int{}} }

// Record counts a request and returns the hooks as they are now. The
// caller holds the fake's lock.
func (h *Faults) Record(method, collection string) (fail, unanswered func(method, collection string) (int, string)) {
	h.Requests[method+" "+collection]++
	return h.Fail, h.Unanswered
}

// WritesLocked is the number of POST, PUT and DELETE requests so far. The
// caller holds the fake's lock.
func (h *Faults) WritesLocked() int {
	n := 0
	for k, v := range h.Requests {
		if len(k) < 4 || k[:4] != "GET " {
			n += v
		}
	}
	return n
}

// Refuse answers the request with fail's status and body when fail is set
// and gives one, and says whether it did.
func Refuse(w http.ResponseWriter, fail func(method, collection string) (int, string), method, collection string) bool {
	if fail == nil {
		return false
	}
	code, body := fail(method, collection)
	if code == 0 {
		return false
	}
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
	return true
}

// Swallow asks unanswered (when set) about the request; if it gives a
// status, the writer returned drops what the fake answers and flush sends
// unanswered's status and body instead. Otherwise w is returned as it is
// and flush does nothing. Call flush once the fake has answered.
func Swallow(w http.ResponseWriter, unanswered func(method, collection string) (int, string), method, collection string) (http.ResponseWriter, func()) {
	if unanswered == nil {
		return w, func() {}
	}
	code, body := unanswered(method, collection)
	if code == 0 {
		return w, func() {}
	}
	s := &swallow{ResponseWriter: w, code: code, body: body}
	return s, s.flush
}

// swallow does the request but answers with another status and body.
type swallow struct {
	http.ResponseWriter
	code int
	body string
}

func (s *swallow) WriteHeader(int)             {}
func (s *swallow) Write(b []byte) (int, error) { return len(b), nil }
func (s *swallow) flush() {
	s.ResponseWriter.WriteHeader(s.code)
	_, _ = s.ResponseWriter.Write([]byte(s.body))
}

// WriteJSON answers with a status and v as a JSON body.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
