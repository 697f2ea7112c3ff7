package ovsdb

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// Tables are the rows of each monitored table, by UUID.
type Tables map[string]map[string]Row

// Cache holds what the monitor reported of the monitored tables, and wakes
// whoever waits on it at every change.
type Cache struct {
	mu      sync.Mutex
	tables  Tables
	changed chan struct{}
}

func newCache() *Cache {
	return &Cache{tables: Tables{}, changed: make(chan struct{})}
}

// View runs f on the cache's tables; f must not keep or change them.
func (c *Cache) View(f func(Tables)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c.tables)
}

// WaitFor blocks until ok holds of the tables, or ctx ends.
func (c *Cache) WaitFor(ctx context.Context, ok func(Tables) bool) error {
	for {
		c.mu.Lock()
		done, changed := ok(c.tables), c.changed
		c.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// tableUpdates is RFC 7047's <table-updates>: table, then row UUID, then
// the row's old and new values (new absent for a deleted row).
type tableUpdates map[string]map[string]struct {
	Old map[string]json.RawMessage `json:"old"`
	New map[string]json.RawMessage `json:"new"`
}

// reset replaces the whole cache by a monitor's initial contents.
func (c *Cache) reset(raw json.RawMessage) error {
	var u tableUpdates
	if err := json.Unmarshal(raw, &u); err != nil {
		return fmt.Errorf("decode monitor reply: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tables = Tables{}
	c.applyLocked(u)
	return nil
}

// update applies an "update" notification's <table-updates>.
func (c *Cache) update(raw json.RawMessage) error {
	var u tableUpdates
	if err := json.Unmarshal(raw, &u); err != nil {
		return fmt.Errorf("decode monitor update: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applyLocked(u)
	return nil
}

func (c *Cache) applyLocked(u tableUpdates) {
	for table, rows := range u {
		t := c.tables[table]
		if t == nil {
			t = map[string]Row{}
			c.tables[table] = t
		}
		for uuid, ch := range rows {
			if ch.New == nil {
				delete(t, uuid)
				continue
			}
			// A monitor (version 1) sends every monitored column in new.
			t[uuid] = Row{UUID: uuid, Cols: ch.New}
		}
	}
	close(c.changed)
	c.changed = make(chan struct{})
}
