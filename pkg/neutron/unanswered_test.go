package neutron

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
