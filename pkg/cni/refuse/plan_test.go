package refuse

import (
	"strings"
	"testing"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

func refusePort(route, gw string, refuse ...string) kuryrv1.NodePort {
	return kuryrv1.NodePort{PortID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", MACAddress: "fa:16:3e:00:00:0a", MTU: 1442,
		IPs: []string{"10.96.129.7/16"}, Routes: []kuryrv1.Route{{Destination: route, Gateway: gw}}, Refuse: refuse}
}

func TestNewPlan(t *testing.T) {
	answering := func(np kuryrv1.NodePort, mac string) kuryrv1.NodePort { np.AnswerMAC = mac; return np }
	local := refusePort("0.0.0.0/0", "10.96.255.254", "10.96.0.0/17")
	for _, tc := range []struct {
		name   string
		np     kuryrv1.NodePort
		err    string
		answer string
	}{
		{"the ClusterIPs of the local cloud", answering(local, "02:aa:bb:cc:dd:ee"), "", "02:aa:bb:cc:dd:ee"},
		{"an older controller's: answers with the port's own MAC", local, "", "fa:16:3e:00:00:0a"},
		{"a multicast answer MAC", answering(local, "03:aa:bb:cc:dd:ee"), "answer MAC", ""},
		{"a bad answer MAC", answering(local, "02:aa:bb"), "answer MAC", ""},
		{"no default route", refusePort("10.0.0.0/8", "10.96.255.254", "10.96.0.0/17"), "not a default route", ""},
		{"a gateway elsewhere", refusePort("0.0.0.0/0", "10.11.0.1", "10.96.0.0/17"), "not on the port's subnet", ""},
		{"its own address refused", refusePort("0.0.0.0/0", "10.96.255.254", "10.96.0.0/16"), "the port's own or its gateway", ""},
		{"nothing refused", refusePort("0.0.0.0/0", "10.96.255.254"), "refuses no address", ""},
		{"not a prefix", refusePort("0.0.0.0/0", "10.96.255.254", "10.96.0.0"), "refused prefix", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(tc.np)
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want %q", err, tc.err)
			case err == nil && p.HostIf() != "kuryr-refuse":
				t.Fatalf("host interface %q", p.HostIf())
			case err == nil && p.Answer.String() != tc.answer:
				t.Fatalf("answers with %s, want %s", p.Answer, tc.answer)
			}
		})
	}
}

func TestNewProbePlan(t *testing.T) {
	p, err := NewProbePlan(refusePort("0.0.0.0/0", "10.96.255.254"))
	if err != nil || p.HostIf() != "kuryr-probe" || len(p.Refuse) != 0 {
		t.Fatalf("plan %+v, err %v", p, err)
	}
	if _, err := NewProbePlan(refusePort("0.0.0.0/0", "10.96.255.254", "10.96.0.0/17")); err == nil ||
		!strings.Contains(err.Error(), "its own address only") {
		t.Fatalf("a probe port refusing others: %v", err)
	}
	if _, err := NewProbePlan(refusePort("10.0.0.0/8", "10.96.255.254")); err == nil {
		t.Fatal("a probe port without a default route")
	}
}
