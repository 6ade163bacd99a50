//go:build tools

// Kueue's manager, pinned by go.mod; scripts/build-kueue builds it.
package kueue

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
