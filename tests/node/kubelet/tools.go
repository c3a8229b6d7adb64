//go:build tools

// Package tools pins the kubelet this module builds (test tooling for tests/node), so that
// `go mod tidy` keeps it in go.mod and go.sum. Same Kubernetes version as tests/kube/k8s.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubelet"
)
