// Command kustomize renders one kustomization directory to YAML on stdout, like
// `kustomize build DIR` / `kubectl kustomize DIR`, with the kustomize library pinned in go.mod.
// tests/deploy builds it (into $ADR_CACHE_DIR/kustomize) to render every overlay of deploy/k8s,
// so the tests need Go, not a kubectl or kustomize binary of whatever version a machine has.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kustomize DIR")
		os.Exit(2)
	}
	options := krusty.MakeDefaultOptions()
	// kubectl kustomize's and kustomize build's default order: Namespaces, then CRDs, then
	// Secrets and ConfigMaps before the workloads that mount them, so `kubectl apply` of the
	// output creates what is referenced first.
	options.Reorder = krusty.ReorderOptionLegacy
	k := krusty.MakeKustomizer(options)
	resources, err := k.Run(filesys.MakeFsOnDisk(), os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "kustomize %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	out, err := resources.AsYaml()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kustomize %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(out); err != nil {
		os.Exit(1)
	}
}
