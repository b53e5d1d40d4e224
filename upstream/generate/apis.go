// Package apis names the API packages the upstream generators read (build.sh), so that go.mod
// keeps their modules at the pinned versions and go.sum holds the hash of everything they load.
package apis

import (
	_ "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	_ "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha1"
	_ "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	_ "sigs.k8s.io/gateway-api/apis/v1"
	_ "sigs.k8s.io/gateway-api/apis/v1alpha2"
	_ "sigs.k8s.io/gateway-api/apis/v1alpha3"
	_ "sigs.k8s.io/gateway-api/apis/v1beta1"
	_ "sigs.k8s.io/gateway-api/apisx/v1alpha1"
)
