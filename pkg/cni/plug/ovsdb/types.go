// Package ovsdb is a minimal OVSDB client (RFC 7047): JSON-RPC over a unix
// or tcp socket, transactions, and a monitor that keeps a cache of the
// columns a caller reads. It reconnects by itself, so a daemon can hold one
// for its lifetime without the ovs-vsctl binary.
package ovsdb

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Op is one operation of a transaction, as RFC 7047 section 5.2 spells it.
type Op map[string]any

// Row is a row of a table as the monitor reports it: its UUID and the raw
// JSON of the monitored columns.
type Row struct {
	UUID string
	Cols map[string]json.RawMessage
}

// OpResult is the server's answer to one operation.
type OpResult struct {
	UUID    []string                     `json:"uuid,omitempty"`
	Count   *int                         `json:"count,omitempty"`
	Rows    []map[string]json.RawMessage `json:"rows,omitempty"`
	Error   string                       `json:"error,omitempty"`
	Details string                       `json:"details,omitempty"`
}

// UUID is the OVSDB encoding of a row reference.
func UUID(u string) []any { return []any{"uuid", u} }

// NamedUUID refers to a row inserted earlier in the same transaction.
func NamedUUID(name string) []any { return []any{"named-uuid", name} }

// Set is the OVSDB encoding of a set of atoms.
func Set(elems ...any) []any {
	if elems == nil {
		elems = []any{}
	}
	return []any{"set", elems}
}

// Map is the OVSDB encoding of a string map, its keys in order.
func Map(m map[string]string) []any {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]any, 0, len(m))
	for _, k := range keys {
		pairs = append(pairs, []any{k, m[k]})
	}
	return []any{"map", pairs}
}

// Cond is one clause of a where: column, function (==, !=, includes...), value.
func Cond(column, function string, value any) []any { return []any{column, function, value} }

// Where is a conjunction of clauses; none matches every row.
func Where(conds ...[]any) []any {
	w := make([]any, 0, len(conds))
	for _, c := range conds {
		w = append(w, c)
	}
	return w
}

// String decodes a string column; absent or malformed gives "".
func String(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	// An optional string (min 0, max 1) is a set of zero or one string.
	if elems := setElems(raw); len(elems) == 1 {
		_ = json.Unmarshal(elems[0], &s)
	}
	return s
}

// Int decodes an integer column; absent or malformed gives 0.
func Int(raw json.RawMessage) int64 {
	var n int64
	_ = json.Unmarshal(raw, &n)
	return n
}

// StringMap decodes a map column of strings.
func StringMap(raw json.RawMessage) map[string]string {
	m := map[string]string{}
	var tagged [2]json.RawMessage
	if json.Unmarshal(raw, &tagged) != nil {
		return m
	}
	var pairs [][2]string
	if json.Unmarshal(tagged[1], &pairs) != nil {
		return m
	}
	for _, kv := range pairs {
		m[kv[0]] = kv[1]
	}
	return m
}

// UUIDs decodes a column of references: one ["uuid", u] or a set of them.
func UUIDs(raw json.RawMessage) []string {
	if u, ok := uuidAtom(raw); ok {
		return []string{u}
	}
	var out []string
	for _, e := range setElems(raw) {
		if u, ok := uuidAtom(e); ok {
			out = append(out, u)
		}
	}
	return out
}

func uuidAtom(raw json.RawMessage) (string, bool) {
	var a [2]string
	if json.Unmarshal(raw, &a) != nil || a[0] != "uuid" {
		return "", false
	}
	return a[1], true
}

func setElems(raw json.RawMessage) []json.RawMessage {
	var tagged []json.RawMessage
	if json.Unmarshal(raw, &tagged) != nil || len(tagged) != 2 {
		return nil
	}
	var tag string
	if json.Unmarshal(tagged[0], &tag) != nil || tag != "set" {
		return nil
	}
	var elems []json.RawMessage
	_ = json.Unmarshal(tagged[1], &elems)
	return elems
}

// txnError reports the first failed operation of a transaction's results.
func txnError(ops []Op, res []OpResult) error {
	for i, r := range res {
		if r.Error == "" {
			continue
		}
		what := "commit"
		if i < len(ops) {
			what = fmt.Sprintf("op %d (%v %v)", i, ops[i]["op"], ops[i]["table"])
		}
		return fmt.Errorf("%s: %s: %s", what, r.Error, r.Details)
	}
	return nil
}
