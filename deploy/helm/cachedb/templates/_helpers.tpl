{{/* The chart's name, as labels carry it. */}}
{{- define "cachedb.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the LeaderWorkerSet's, and so its pods' DNS subdomain. Kept
short enough for the Services and pods named after it. */}}
{{- define "cachedb.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains (include "cachedb.name" .) .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "cachedb.name" .) | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "cachedb.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cachedb.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "cachedb.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "cachedb.selectorLabels" . }}
app.kubernetes.io/version: {{ include "cachedb.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: cachedb
{{- end -}}

{{- define "cachedb.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{- define "cachedb.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "cachedb.tag" .) -}}
{{- end -}}

{{- define "cachedb.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "cachedb.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the cluster secret: the one named, or the chart's. */}}
{{- define "cachedb.clusterSecretName" -}}
{{- if .Values.clusterSecret.existingSecret -}}
{{- .Values.clusterSecret.existingSecret -}}
{{- else if .Values.clusterSecret.value -}}
{{- printf "%s-cluster-secret" (include "cachedb.fullname" .) -}}
{{- else -}}
{{- fail "clusterSecret: set existingSecret (the name of a Secret holding the cluster secret) or value" -}}
{{- end -}}
{{- end -}}

{{/* The kubernetes.io/tls Secret the pods serve TLS with: the one named, or cert-manager's. */}}
{{- define "cachedb.tlsSecretName" -}}
{{- if .Values.tls.existingSecret -}}
{{- .Values.tls.existingSecret -}}
{{- else if .Values.tls.certManager.issuerRef.name -}}
{{- printf "%s-tls" (include "cachedb.fullname" .) -}}
{{- else -}}
{{- fail "tls.enabled: set tls.existingSecret (a kubernetes.io/tls Secret) or tls.certManager.issuerRef.name (the cert-manager Issuer that signs)" -}}
{{- end -}}
{{- end -}}

{{/* The client certificate's Secret of the training runtime's pods (mutual TLS). */}}
{{- define "cachedb.tlsClientSecretName" -}}
{{- if .Values.tls.clientExistingSecret -}}
{{- .Values.tls.clientExistingSecret -}}
{{- else if .Values.tls.certManager.issuerRef.name -}}
{{- printf "%s-client-tls" (include "cachedb.fullname" .) -}}
{{- else -}}
{{- fail "tls.mutual with the training runtime: set tls.clientExistingSecret (a client certificate's kubernetes.io/tls Secret) or tls.certManager.issuerRef.name" -}}
{{- end -}}
{{- end -}}

{{/* Where the TLS Secret is mounted. */}}
{{- define "cachedb.tlsDir" -}}/etc/cachedb-tls{{- end -}}

{{/* The client side of TLS for a pod of the training runtime: variables (cachedb sql's flags;
the Python client's tls_ca) naming the mounted files. */}}
{{- define "cachedb.tlsClientEnv" -}}
{{- if .Values.tls.enabled }}
{{- if .Values.tls.caFromSecret }}
- name: CACHEDB_TLS_CA
  value: {{ include "cachedb.tlsDir" . }}/ca.crt
{{- else }}
- name: CACHEDB_TLS
  value: "true"
{{- end }}
{{- if .Values.tls.mutual }}
- name: CACHEDB_TLS_CERT
  value: {{ include "cachedb.tlsDir" . }}/tls.crt
- name: CACHEDB_TLS_KEY
  value: {{ include "cachedb.tlsDir" . }}/tls.key
{{- end }}
{{- end }}
{{- end -}}

{{/* Whether a training runtime pod mounts TLS files: the CA from the Secret, or a client
certificate for mutual TLS ("true" or ""). */}}
{{- define "cachedb.tlsClientFiles" -}}
{{- if and .Values.tls.enabled (or .Values.tls.caFromSecret .Values.tls.mutual) }}true{{ end -}}
{{- end -}}

{{/* The volume of a training runtime pod's TLS files: the CA, and the client certificate for
mutual TLS. */}}
{{- define "cachedb.tlsClientVolume" -}}
- name: tls
  secret:
    {{- if .Values.tls.mutual }}
    secretName: {{ include "cachedb.tlsClientSecretName" . }}
    {{- else }}
    secretName: {{ include "cachedb.tlsSecretName" . }}
    items: [{key: ca.crt, path: ca.crt}]
    {{- end }}
{{- end -}}

{{/* The head's Service: where clients, data nodes' tickets and the training runtime go. */}}
{{- define "cachedb.headService" -}}
{{- printf "%s-head" (include "cachedb.fullname" .) -}}
{{- end -}}

{{/* Environment shared by the head and the data nodes: flags as CACHEDB_* variables. */}}
{{- define "cachedb.env" -}}
- name: POD_NAME
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
- name: POD_NAMESPACE
  valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
- name: CACHEDB_LISTEN
  value: {{ printf ":%d" (int .Values.ports.flight) | quote }}
- name: CACHEDB_HTTP_LISTEN
  value: {{ printf ":%d" (int .Values.ports.http) | quote }}
- name: CACHEDB_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: CACHEDB_LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
- name: CACHEDB_PPROF
  value: {{ .Values.pprof | toString | quote }}
- name: CACHEDB_CLUSTER_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ include "cachedb.clusterSecretName" . }}
      key: {{ .Values.clusterSecret.key }}
{{- if .Values.s3.existingSecret }}
- name: CACHEDB_S3_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .Values.s3.existingSecret }}
      key: {{ .Values.s3.accessKeyIdKey }}
- name: CACHEDB_S3_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.s3.existingSecret }}
      key: {{ .Values.s3.secretAccessKeyKey }}
{{- end }}
{{- if .Values.config }}
- name: CACHEDB_CONFIG
  value: /etc/cachedb/config.yaml
{{- end }}
{{- if .Values.tls.enabled }}
- name: CACHEDB_TLS_CERT
  value: {{ include "cachedb.tlsDir" . }}/tls.crt
- name: CACHEDB_TLS_KEY
  value: {{ include "cachedb.tlsDir" . }}/tls.key
{{- if .Values.tls.caFromSecret }}
- name: CACHEDB_TLS_CA
  value: {{ include "cachedb.tlsDir" . }}/ca.crt
{{- end }}
{{- if .Values.tls.mutual }}
- name: CACHEDB_TLS_CLIENT_CA
  value: {{ include "cachedb.tlsDir" . }}/ca.crt
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The container parts shared by the head and the data nodes. */}}
{{- define "cachedb.containerCommon" -}}
image: {{ include "cachedb.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
ports:
  - {name: flight, containerPort: {{ .Values.ports.flight }}, protocol: TCP}
  - {name: http, containerPort: {{ .Values.ports.http }}, protocol: TCP}
readinessProbe:
  httpGet: {path: /ready, port: http}
  {{- toYaml .Values.probes.readiness | nindent 2 }}
livenessProbe:
  httpGet: {path: /live, port: http}
  {{- toYaml .Values.probes.liveness | nindent 2 }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - {name: tmp, mountPath: /tmp}
  {{- if .Values.config }}
  - {name: config, mountPath: /etc/cachedb, readOnly: true}
  {{- end }}
  {{- if .Values.tls.enabled }}
  - {name: tls, mountPath: {{ include "cachedb.tlsDir" . }}, readOnly: true}
  {{- end }}
  {{- with .Values.extraVolumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/* The pod parts shared by the head and the data nodes. */}}
{{- define "cachedb.podCommon" -}}
serviceAccountName: {{ include "cachedb.serviceAccountName" . }}
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: tmp
    emptyDir: {sizeLimit: {{ .Values.tmpSizeLimit }}}
  {{- if .Values.config }}
  - name: config
    configMap: {name: {{ include "cachedb.fullname" . }}}
  {{- end }}
  {{- if .Values.tls.enabled }}
  - name: tls
    secret: {secretName: {{ include "cachedb.tlsSecretName" . }}}
  {{- end }}
  {{- with .Values.extraVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}
