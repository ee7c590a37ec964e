package cli

import (
	"github.com/spf13/cobra"

	"github.com/statuscheck/statuscheck/pkg/source"
)

// SourceFlags name the status source as simulate, record, gate and the
// bridge take it: --bundle, or --crd with --source.
type SourceFlags struct {
	BundleDir, CRDFile, Source string
}

// Register defines the three flags on cmd; --bundle excludes the others.
func (s *SourceFlags) Register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&s.BundleDir, "bundle", "", "take the status source and its CRD from the bundle `DIR`")
	fl.StringVar(&s.CRDFile, "crd", "", "the CRD `PATH`, a file or a directory of CRD files, for an operator deployed without OLM (with --source)")
	fl.StringVar(&s.Source, "source", "", "the status source as `GROUP/VERSION/KIND[/NAMESPACE]/NAME` (with --crd)")
	cmd.MarkFlagsMutuallyExclusive("bundle", "crd")
	cmd.MarkFlagsMutuallyExclusive("bundle", "source")
}

// Resolve resolves --bundle, or --crd with --source (nil when neither was
// given).
func (s SourceFlags) Resolve() (*source.Context, error) {
	switch {
	case s.BundleDir != "":
		return source.FromBundle(s.BundleDir)
	case s.CRDFile != "":
		return source.FromCRD(s.CRDFile, s.Source)
	}
	return nil, nil
}
