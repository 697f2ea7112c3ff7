// Package keyedlock serialises work on one key (a port, a trunk, a peer)
// while work on different keys runs at once; a key's lock is dropped when
// nobody holds or waits for it, so the map does not grow with every key
// ever seen.
package keyedlock

import "sync"

// Locks is a set of mutexes by key; its zero value is ready to use.
type Locks struct {
	mu    sync.Mutex
	locks map[string]*refLock
}

type refLock struct {
	sync.Mutex
	refs int
}

// Lock takes key's lock and returns its release.
func (k *Locks) Lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*refLock{}
	}
	l, ok := k.locks[key]
	if !ok {
		l = &refLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
