//go:build tools

// Package tools pins kwok, which simulates nodes and the kubelet's pod
// lifecycle for the test control plane.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
