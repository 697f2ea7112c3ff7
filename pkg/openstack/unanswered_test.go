package openstack

import (
	"testing"
	"time"
)

func TestUnanswered(t *testing.T) {
	var u Unanswered
	if pending, _ := u.Pending("a"); pending {
		t.Fatal("pending before any mark")
	}
	u.Mark("a")
	if pending, left := u.Pending("a"); !pending || left <= 0 || left > UnclearSettle {
		t.Errorf("just marked: %v %s", pending, left)
	}
	first := time.Now()
	u.Now = func() time.Time { return first.Add(time.Hour) }
	u.Mark("a") // the first mark counts
	if pending, left := u.Pending("a"); !pending || left != 0 {
		t.Errorf("after the settle time: %v %s", pending, left)
	}
	u.Clear("a")
	if pending, _ := u.Pending("a"); pending {
		t.Error("pending after Clear")
	}
}

// Each create that goes unanswered again after nothing was found doubles
// the settle time, up to UnclearSettleMax; finding what was made (Clear)
// starts over.
func TestUnansweredSettleDoubles(t *testing.T) {
	now := time.Now()
	u := Unanswered{Now: func() time.Time { return now }}
	for _, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second,
		80 * time.Second, UnclearSettleMax, UnclearSettleMax} {
		u.Mark("a")
		if _, left := u.Pending("a"); left != want {
			t.Fatalf("settle %s, want %s", left, want)
		}
		u.GiveUp("a")
	}
	u.GiveUp("b") // nothing pending: no strike
	u.Mark("b")
	if _, left := u.Pending("b"); left != UnclearSettle {
		t.Errorf("a key never given up: settle %s", left)
	}
	u.Clear("a")
	u.Mark("a")
	if _, left := u.Pending("a"); left != UnclearSettle {
		t.Errorf("after Clear: settle %s", left)
	}
}
