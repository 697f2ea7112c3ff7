{{/* The image every kuryr pod runs: repository:tag, or @digest. */}}
{{- define "kuryr.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{/* Labels of every object; selectors use name and component only. */}}
{{- define "kuryr.labels" -}}
app.kubernetes.io/name: kuryr
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* kuryr.conf from .Values.config: sections and keys sorted, lists
comma-separated, integral numbers as integers, empty values left out
(kuryr's default applies). What the chart decides itself (where the
credentials and the CA are mounted, the Lease's namespace, HA) is set
here, and a value that would contradict it is refused. */}}
{{- define "kuryr.conf" -}}
{{- $config := deepCopy .Values.config -}}
{{- $neutron := get $config "neutron" | default dict -}}
{{- if hasKey $neutron "clouds_file" -}}
{{- fail "config.neutron.clouds_file is where the chart mounts openstack.cloudsYaml (or existingSecret): leave it out" -}}
{{- end -}}
{{- $_ := set $neutron "clouds_file" "/etc/kuryr/openstack/clouds.yaml" -}}
{{- if and .Values.openstack.caBundle (not (hasKey $neutron "cafile")) -}}
{{- $_ := set $neutron "cafile" "/etc/kuryr/openstack/ca.crt" -}}
{{- end -}}
{{- $_ := set $config "neutron" $neutron -}}
{{- $kubernetes := get $config "kubernetes" | default dict -}}
{{- $haNamespace := get $kubernetes "controller_ha_namespace" | default .Release.Namespace -}}
{{- if ne $haNamespace .Release.Namespace -}}
{{- fail (printf "config.kubernetes.controller_ha_namespace (%s) must be the release's namespace (%s): the chart grants the Lease there" $haNamespace .Release.Namespace) -}}
{{- end -}}
{{- if hasKey $kubernetes "controller_ha" -}}
{{- fail "config.kubernetes.controller_ha: the chart always runs the controller with HA (one active, controller.replicas in all); leave it out" -}}
{{- end -}}
{{- $vif := get $kubernetes "pod_vif_driver" | default "neutron-vif" -}}
{{- if and .Values.daemon.enabled (ne $vif "neutron-vif") -}}
{{- fail (printf "config.kubernetes.pod_vif_driver is %s but daemon.enabled (the hypervisor nodes' DaemonSet, with Open vSwitch) is true: for a cluster of VMs set daemon.enabled=false and nestedDaemons [{name: nested, podVif: %s, allNodes: true}]" $vif $vif) -}}
{{- end -}}
{{- $_ := set $kubernetes "controller_ha_namespace" $haNamespace -}}
{{- $_ := set $config "kubernetes" $kubernetes -}}
# Rendered by the kuryr Helm chart from its values (config): do not edit.
{{- range $section := keys $config | sortAlpha }}
{{- $options := get $config $section }}
{{- if not (kindIs "map" $options) }}
{{- fail (printf "config.%s must be a map of options (a kuryr.conf section)" $section) }}
{{- end }}

[{{ $section }}]
{{- range $name := keys $options | sortAlpha }}
{{- $value := get $options $name }}
{{- if kindIs "slice" $value }}
{{ $name }} = {{ join "," $value }}
{{- else if kindIs "map" $value }}
{{- fail (printf "config.%s.%s is a map: kuryr.conf options are strings, numbers, booleans or lists" $section $name) }}
{{- else if and (kindIs "float64" $value) (eq $value (floor $value)) }}
{{ $name }} = {{ int64 $value }}
{{- else if not (kindIs "invalid" $value) }}
{{- if ne (toString $value) "" }}
{{ $name }} = {{ $value }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{ end -}}

{{/* Pods roll when their configuration changes: every pod with kuryr.conf,
the controller (the only one mounting them) also with the credentials. */}}
{{- define "kuryr.checksums" -}}
checksum/config: {{ include "kuryr.conf" . | sha256sum }}
{{- end -}}

{{- define "kuryr.credentialsChecksum" -}}
{{- if not .Values.openstack.existingSecret }}
checksum/openstack: {{ printf "%s\n%s" .Values.openstack.cloudsYaml .Values.openstack.caBundle | sha256sum }}
{{- end }}
{{- end -}}

{{- define "kuryr.openstackSecret" -}}
{{ .Values.openstack.existingSecret | default "kuryr-openstack" }}
{{- end -}}

{{/* kuryr.port SECTION OPTION DEFAULT: a port from config, as the pods
listen on it. */}}
{{- define "kuryr.port" -}}
{{- $ctx := index . 0 -}}
{{- $section := get $ctx.Values.config (index . 1) | default dict -}}
{{- get $section (index . 2) | default (index . 3) | int -}}
{{- end -}}

{{/* kuryr.metricsScheme: https when [prometheus_exporter] auth is kubernetes
(kuryr's default), else http. */}}
{{- define "kuryr.metricsScheme" -}}
{{- $pe := get .Values.config "prometheus_exporter" | default dict -}}
{{- $auth := get $pe "auth" | default "kubernetes" -}}
{{- if eq $auth "kubernetes" }}https{{ else if eq $auth "none" }}http{{ else }}{{ fail (printf "config.prometheus_exporter.auth must be kubernetes or none, not %q" $auth) }}{{ end -}}
{{- end -}}
