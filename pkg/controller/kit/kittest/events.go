// Package kittest holds the test doubles of what package kit defines: an
// Event recorder that keeps what it is told, and one that drops it.
package kittest

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// Events records every Event's reason and note (formatted); safe for
// concurrent reconciles.
type Events struct {
	mu  sync.Mutex
	all []Event
}

// Event is one recorded Event.
type Event struct {
	Type, Reason, Note string
}

// Eventf implements kit.Recorder.
func (e *Events) Eventf(_, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, Event{Type: eventtype, Reason: reason, Note: fmt.Sprintf(note, args...)})
}

// Reasons are the reasons recorded, in order.
func (e *Events) Reasons() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.all))
	for _, ev := range e.all {
		out = append(out, ev.Reason)
	}
	return out
}

// Notes are the notes of the Events of one reason, in order.
func (e *Events) Notes(reason string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.all {
		if ev.Reason == reason {
			out = append(out, ev.Note)
		}
	}
	return out
}

// String lists the Events, for failure messages.
func (e *Events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, ev := range e.all {
		fmt.Fprintf(&b, "%s %s: %s; ", ev.Type, ev.Reason, ev.Note)
	}
	return b.String()
}

// None drops every Event.
type None struct{}

// Eventf implements kit.Recorder.
func (None) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}
