package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/statuscheck/statuscheck/pkg/source"
)

// sourceFlags name the status source as simulate, record and bridge take
// it: --bundle, or --crd with --source.
type sourceFlags struct {
	bundleDir, crdFile, source string
}

// register defines the three flags on cmd; --bundle excludes the others.
func (s *sourceFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&s.bundleDir, "bundle", "", "take the status source and its CRD from the bundle `DIR`")
	fl.StringVar(&s.crdFile, "crd", "", "the CRD `PATH`, a file or a directory of CRD files, for an operator deployed without OLM (with --source)")
	fl.StringVar(&s.source, "source", "", "the status source as `GROUP/VERSION/KIND[/NAMESPACE]/NAME` (with --crd)")
	cmd.MarkFlagsMutuallyExclusive("bundle", "crd")
	cmd.MarkFlagsMutuallyExclusive("bundle", "source")
}

// resolve resolves --bundle, or --crd with --source (nil when neither was
// given).
func (s sourceFlags) resolve() (*source.Context, error) {
	switch {
	case s.bundleDir != "":
		return source.FromBundle(s.bundleDir)
	case s.crdFile != "":
		return source.FromCRD(s.crdFile, s.source)
	}
	return nil, nil
}

// clusterFlags are how a command reaches the cluster, as kubectl does.
type clusterFlags struct {
	kubeconfig, kubeContext string
}

func (c *clusterFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&c.kubeconfig, "kubeconfig", "", "the kubeconfig `FILE` (default: $KUBECONFIG, else ~/.kube/config, else the in-cluster config)")
	fl.StringVar(&c.kubeContext, "context", "", "the kubeconfig context `NAME` to use (default: its current context)")
}
