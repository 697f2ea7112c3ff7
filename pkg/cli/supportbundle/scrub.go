package supportbundle

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lastApplied is kubectl's copy of an object's spec, with whatever secret
// its environment held: never collected.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// scrub takes secrets out of objects before they are written, where
// their structure says so (Redact catches the rest in the text): the
// values of environment variables named as secrets, and kubectl's
// last-applied copies.
func scrub(l client.ObjectList) {
	objs, err := meta.ExtractList(l)
	if err != nil {
		return
	}
	for _, o := range objs {
		if m, ok := o.(client.Object); ok && m.GetAnnotations()[lastApplied] != "" {
			a := m.GetAnnotations()
			delete(a, lastApplied)
			m.SetAnnotations(a)
		}
		switch x := o.(type) {
		case *corev1.Pod:
			scrubPod(&x.Spec)
		case *appsv1.Deployment:
			scrubPod(&x.Spec.Template.Spec)
		case *appsv1.DaemonSet:
			scrubPod(&x.Spec.Template.Spec)
		}
	}
	_ = meta.SetList(l, objs)
}

func scrubPod(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for j := range cs[i].Env {
				if e := &cs[i].Env[j]; e.Value != "" && SecretName(e.Name) {
					e.Value = "REDACTED"
				}
			}
		}
	}
}
