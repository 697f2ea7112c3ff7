package openstacktest

import (
	"fmt"
	"net/http"
)

// authRequest is the "auth" of POST /v3/auth/tokens.
type authRequest struct {
	Identity struct {
		Methods  []string `json:"methods"`
		Password *struct {
			User struct {
				Name, Password string
				Domain         *domainRef
			}
		} `json:"password"`
		ApplicationCredential *struct{ ID, Secret string } `json:"application_credential"`
	} `json:"identity"`
	Scope *struct {
		Project *struct {
			ID, Name string
			Domain   *domainRef
		}
	} `json:"scope"`
}

// domainRef names a domain by id or by name.
type domainRef struct{ ID, Name string }

func (r *domainRef) is(d Domain) bool {
	return r != nil && ((r.ID != "" && r.ID == d.ID) || (r.ID == "" && r.Name == d.Name))
}

// authFailure is Keystone's answer to a token request it refuses.
type authFailure struct {
	code int
	msg  string
}

var unauthorized = &authFailure{http.StatusUnauthorized, "The request you have made requires authentication."}

func (k *Keystone) createToken(w http.ResponseWriter, r *http.Request) {
	req, err := decodeAuth(r)
	if err != nil {
		keystoneError(w, http.StatusBadRequest, "Expecting to find auth in request body: "+err.Error())
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var fail *authFailure
	var method string
	switch {
	case req.Identity.ApplicationCredential != nil:
		method, fail = "application_credential", k.checkAppCredLocked(req)
	case req.Identity.Password != nil:
		method, fail = "password", k.checkPasswordLocked(req)
	default:
		fail = &authFailure{http.StatusBadRequest, "Expecting to find identity in auth."}
	}
	if fail != nil {
		keystoneError(w, fail.code, fail.msg)
		return
	}
	k.issued++
	id := fmt.Sprintf("token-%d", k.issued)
	issued := k.now()
	k.tokens[id] = issued.Add(k.ttl)
	token := map[string]any{
		"methods":    []string{method},
		"issued_at":  issued.UTC().Format(keystoneTime),
		"expires_at": issued.Add(k.ttl).UTC().Format(keystoneTime),
		"user":       map[string]any{"id": "u1", "name": "kuryr", "domain": map[string]any{"id": DefaultDomain.ID, "name": DefaultDomain.Name}},
	}
	if method == "application_credential" || req.Scope != nil {
		token["project"] = map[string]any{"id": k.project.ID, "name": k.project.Name,
			"domain": map[string]any{"id": k.project.Domain.ID, "name": k.project.Domain.Name}}
		token["catalog"] = k.catalogLocked()
	}
	w.Header().Set("X-Subject-Token", id)
	w.Header().Set("Content-Type", "application/json")
	WriteJSON(w, http.StatusCreated, map[string]any{"token": token})
}

// keystoneTime is how Keystone writes times: microseconds, UTC.
const keystoneTime = "2006-01-02T15:04:05.000000Z"

func (k *Keystone) checkAppCredLocked(req authRequest) *authFailure {
	ac := req.Identity.ApplicationCredential
	c, ok := k.appCreds[ac.ID]
	switch {
	case !ok:
		return &authFailure{http.StatusNotFound, fmt.Sprintf("Could not find Application Credential: %s.", ac.ID)}
	case req.Scope != nil:
		return &authFailure{http.StatusUnauthorized, "Application credentials cannot request a scope."}
	case c.secret != ac.Secret || c.expired:
		return unauthorized
	}
	return nil
}

func (k *Keystone) checkPasswordLocked(req authRequest) *authFailure {
	pu := req.Identity.Password.User
	u, ok := k.users[pu.Name]
	if !ok || u.password != pu.Password || !pu.Domain.is(u.domain) {
		return unauthorized
	}
	p := req.Scope
	if p == nil || p.Project == nil {
		return nil // an unscoped token: no project, no catalog
	}
	if p.Project.ID != k.project.ID && (p.Project.ID != "" || p.Project.Name != k.project.Name || !p.Project.Domain.is(k.project.Domain)) {
		return unauthorized
	}
	return nil
}

func (k *Keystone) catalogLocked() []map[string]any {
	out := []map[string]any{}
	for typ, eps := range k.catalog {
		var list []map[string]any
		for i, e := range eps {
			list = append(list, map[string]any{"id": fmt.Sprintf("%s-%d", typ, i), "region": e.Region, "region_id": e.Region,
				"interface": e.Interface, "url": e.URL})
		}
		out = append(out, map[string]any{"id": typ, "type": typ, "name": typ, "endpoints": list})
	}
	return out
}
