package neutrontest

import (
	"net/http"

	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// rename serves PUT /v2.0/networks/{id} and PUT /v2.0/subnets/{id} for
// what kuryr changes there: the name (and the description, as Neutron
// takes it); any other attribute is refused here, so that a test notices
// a write the fake does not model.
func (f *Fake) rename(w http.ResponseWriter, r *http.Request, collection, id string) {
	in, err := member(r, collection[:len(collection)-1])
	if err == nil {
		for k := range in {
			if k != "name" && k != "description" {
				err = badRequest("HTTPBadRequest", "the fake updates only the name and description of %s, not %s", collection, k)
			}
		}
	}
	if err != nil {
		err.write(w)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[collection][id]
	if !ok {
		notFound(collection, id).write(w)
		return
	}
	for k, v := range in {
		o[k] = v
	}
	openstacktest.WriteJSON(w, 200, Object{collection[:len(collection)-1]: o})
}
