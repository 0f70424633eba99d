{{/*
Labels of every object: the overlays' (name, part-of, region) and Helm's.
Selectors use only app.kubernetes.io/name, as the overlays do, so a release
can take over the objects `kubectl apply -k` created (a Deployment's
selector cannot change).
*/}}
{{- define "idemcoord.labels" -}}
app.kubernetes.io/name: idemd
app.kubernetes.io/part-of: idemcoord
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
idemcoord.dev/region: {{ .Values.region }}
{{- end }}

{{- define "idemcoord.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
The region's idemd.yaml: values.config plus the blocks the chart owns
(region, listen, store, etcd). Checks what the schema cannot: that config
leaves those blocks to the chart and that region is one of config.regions.
*/}}
{{- define "idemcoord.config" -}}
{{- $c := deepCopy (.Values.config | default dict) -}}
{{- range $k := list "region" "listen" "store" "etcd" -}}
{{- if hasKey $c $k -}}
{{- fail (printf "config.%s: written by the chart from the values (region, port, store, etcd); remove it from config" $k) -}}
{{- end -}}
{{- end -}}
{{- $names := list -}}
{{- range $r := $c.regions | default list -}}
{{- $names = append $names $r.name -}}
{{- end -}}
{{- if not (has .Values.region $names) -}}
{{- fail (printf "region: %q is not one of config.regions[].name %v" .Values.region $names) -}}
{{- end -}}
{{- $s := .Values.store -}}
{{- $store := dict "backend" $s.backend "max_conns" $s.maxConns -}}
{{- if $s.connectTimeout -}}
{{- $_ := set $store "connect_timeout" $s.connectTimeout -}}
{{- end -}}
{{- if eq $s.backend "patroni" -}}
{{- $p := dict "clusters" $s.patroni.clusters -}}
{{- if $s.patroni.auditCluster -}}
{{- $_ := set $p "audit_cluster" $s.patroni.auditCluster -}}
{{- end -}}
{{- $_ := set $store "patroni" $p -}}
{{- else -}}
{{- $_ := set $store "dsn" $s.dsn -}}
{{- end -}}
{{- $_ := set $c "region" .Values.region -}}
{{- $_ := set $c "listen" (printf "0.0.0.0:%d" (int .Values.port)) -}}
{{- $_ := set $c "store" $store -}}
{{- $_ := set $c "etcd" (dict "endpoints" .Values.etcd.endpoints "dial_timeout" .Values.etcd.dialTimeout) -}}
{{- toYaml $c -}}
{{- end }}

{{/* The pod security context of idemd and the migration Job. */}}
{{- define "idemcoord.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The container security context of idemd and the migration Job. */}}
{{- define "idemcoord.securityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
runAsNonRoot: true
capabilities:
  drop: [ALL]
{{- end }}

{{/* The store password, from the operator's Secret (the DSNs have none). */}}
{{- define "idemcoord.pgpassword" -}}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.store.secret.name }}
      key: {{ .Values.store.secret.passwordKey }}
{{- end }}

{{/* DNS egress, shared by idemd's and the Job's NetworkPolicy. */}}
{{- define "idemcoord.egressDNS" -}}
- to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ .Values.networkPolicy.dns.namespace }}
      podSelector:
        matchLabels:
          {{- toYaml .Values.networkPolicy.dns.podLabels | nindent 10 }}
  ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- end }}

{{/* Store egress, shared by idemd's and the Job's NetworkPolicy. */}}
{{- define "idemcoord.egressStore" -}}
- to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ .Values.networkPolicy.store.namespace }}
  ports:
    - port: {{ .Values.networkPolicy.store.port }}
      protocol: TCP
{{- end }}
