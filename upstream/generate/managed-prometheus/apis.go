//go:build tools

// Package tools pins the API types of Google Cloud Managed Service for Prometheus
// (github.com/GoogleCloudPlatform/prometheus-engine) and the controller-gen its shipped CRDs
// were written with (their controller-gen.kubebuilder.io/version annotation), so build.sh can
// run that generator on those types. The replaces are the module's own, for its API types to
// build outside it.
package tools

import _ "github.com/GoogleCloudPlatform/prometheus-engine/pkg/operator/apis/monitoring/v1"
