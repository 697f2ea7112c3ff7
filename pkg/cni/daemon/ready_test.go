package daemon

import (
	"strings"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
)

func TestReadiness(t *testing.T) {
	o := &fakeOVS{}
	r := &Readiness{OVS: o}
	if err := r.CanServe(); err == nil || !strings.Contains(err.Error(), "not synced") {
		t.Errorf("before sync: %v", err)
	}
	r.Synced.Store(true)
	if err := r.CanServe(); err != nil {
		t.Errorf("synced, OVS answering: %v", err)
	}
	if err := r.Ready(); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("not installed: %v", err)
	}
	r.Installed.Store(true)
	if err := r.Ready(); err != nil {
		t.Errorf("ready: %v", err)
	}
}

// The watch's handler keeps the registry equal to what the informer sees,
// tombstones included.
func TestRegistryHandler(t *testing.T) {
	reg := NewRegistry()
	h := registryHandler(reg)
	kp := kuryrPort("web", "u1")
	h.OnAdd(kp, true)
	if _, ok := reg.Get("ns", "web"); !ok {
		t.Fatal("not added")
	}
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/web", Obj: kp})
	if _, ok := reg.Get("ns", "web"); ok {
		t.Error("not removed by a tombstone")
	}
}
