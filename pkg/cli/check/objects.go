package check

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kuryr-k8s/kuryr/pkg/names"
)

const (
	managedBy   = "app.kubernetes.io/managed-by"
	managerName = "kubectl-kuryr"
	appLabel    = "app.kubernetes.io/name"
	appName     = names.Check
	roleLabel   = "kuryr-check/role"
	port        = 8080
	serviceName = names.Check
	policyName  = names.Check
)

// serve: an HTTP server answering with the pod's name, as nobody.
const serve = `mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www`

// probePod is a server pod pinned to node, role "a" or "b". Pure.
func probePod(ns, name, role, node, image string) *corev1.Pod {
	var grace int64 = 1
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{appLabel: appName, managedBy: managerName, roleLabel: role}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65534),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "probe", Image: image, Command: []string{"sh", "-c", serve},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port}},
				// The kubelet's probe is node → pod.
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}, PeriodSeconds: 2},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "www", MountPath: "/www"}},
			}},
			Volumes: []corev1.Volume{{Name: "www", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// probeService is a ClusterIP Service over the probe pods. Pure.
func probeService(ns string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: serviceName, Labels: map[string]string{managedBy: managerName}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{appLabel: appName},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
}

// probePolicy selects the pods of role target; from, if not empty, is the
// one role admitted (empty: no ingress at all). Pure.
func probePolicy(ns, target, from string) *networkingv1.NetworkPolicy {
	p := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: policyName, Labels: map[string]string{managedBy: managerName}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{roleLabel: target}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
	if from != "" {
		p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel: from}}}}}}
	}
	return p
}

// getCommand fetches the index of a server at ip:port from inside a probe pod
// (busybox's nc: its wget times out badly), printing the last line: the
// server pod's name, or nc's complaint (a refused connection), or nothing
// when nothing answered within 3 s. Pure.
func getCommand(ip string, port int) []string {
	return []string{"sh", "-c", fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s %d 2>&1 | tail -n 1`, ip, port)}
}
