package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/generate"
	"github.com/statuscheck/statuscheck/pkg/report"
	"github.com/statuscheck/statuscheck/pkg/result"
)

func (a *app) generateCommand() *cobra.Command {
	var (
		values             generate.Values
		apiVersion, kind   string
		name, namespace    string
		conditions         []string
		specPath, annoKey  string
		ackPath            string
		crds               []string
		write, diff, check bool
		force              bool
		bridgeImage        string
		bridgeDeployment   string
		bridgeSecure       bool
		whenAbsent         = newEnum("Allow", "Allow", "Block")
		handshake          = newEnum("None", "None", "OperatorCondition", "RequestAck").named("MODE")
		output             = newEnum("yaml", "yaml", "patch")
		guards             guardFlags
	)
	cmd := &cobra.Command{
		Use:   "generate PATH...",
		Short: "Write the status-source annotation into a CSV, changing nothing else",
		Long: `Generate writes the operatorframework.io/status-source annotation into a
ClusterServiceVersion. PATH is a bundle root, a manifests directory, a
directory of bundles (each bundle in it, as validate takes it) or a CSV
file (operator-sdk's config/manifests/bases/NAME.clusterserviceversion.yaml
too; point --crd at the CRDs it has no copy of). A path that cannot be
done does not stop the others; each is named at the end, with exit 2.

Flags set the value; what they leave open comes from the current annotation
when it is valid, else from operatorframework.io/initialization-resource,
else from the only owned CRD and its alm-examples entry. When that is still
ambiguous, generate exits 2 and lists the candidates. A name found only in
alm-examples (a sample for the console, not a CR anything shows the
operator keeps) is not taken on its own: generate exits 2 and offers it as
--name, which accepts it.

Like gofmt: the new CSV goes to stdout; -w writes it in place (atomically);
-d prints a diff; -o patch prints a JSON 6902 patch for kustomize; --check
exits 1 when the file is not up to date. Only the annotation changes: every
other byte (comments, order, quoting, indentation, line endings) stays.

The value is checked with validate's rules against the CRDs at hand first;
with errors nothing is written and the exit code is 1, unless --force.
Whether the upgrade is then held is validate's verdict, about the bundle
as a whole: when it is not yet (no bridge, a race the protocol search
finds), generate still writes the value, exits 0, and says so on stderr
("the upgrade is not held yet; validate will report ..."); validate
exits 1 on it.

--bridge IMAGE also adds what statuscheck bridge needs to run on today's
OLM (docs/bridge.md): a sidecar container in the operator's deployment
(POD_NAMESPACE and the status-source annotation from the downward API,
metrics on localhost unless --bridge-metrics-secure), the RBAC rules its
service account lacks, by name (get and watch on the status source; under
RequestAck patch on it and list and watch on CSVs), and the
statuscheck.operatorframework.io/bridge annotation that declares it, with
the same guarantee: only those lines change. A status source with the
OperatorCondition handshake is refused (exit 2): the operator writes the
OperatorCondition itself there, and the bridge would fight it.`,
		Example: `  statuscheck generate -w bundle/
  statuscheck generate -d --kind HyperConverged --name kubevirt-hyperconverged bundle/manifests
  statuscheck generate --check config/manifests/bases/my-operator.clusterserviceversion.yaml --crd config/crd/bases
  statuscheck generate -o patch bundle/ > config/manifests/status-source-patch.json
  statuscheck generate -w --bridge quay.io/statuscheck/statuscheck:v0.1.0 bundle/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			str := func(flag string, v string) *string {
				if f.Changed(flag) {
					return &v
				}
				return nil
			}
			values.APIVersion = str("api-version", apiVersion)
			values.Kind = str("kind", kind)
			values.Name = str("name", name)
			values.Namespace = str("namespace", namespace)
			if f.Changed("conditions") {
				values.Conditions = conditions
			}
			values.WhenAbsent = str("when-absent", whenAbsent.value)
			values.Handshake = str("handshake", handshake.value)
			values.RequestSpecPath = str("request-spec-path", specPath)
			values.RequestAnnotation = str("request-annotation", annoKey)
			values.AckStatusPath = str("ack-status-path", ackPath)
			if guards.admissionPolicy || f.Changed("upgrade-hook") {
				for _, other := range []string{"write", "diff", "check", "output", "bridge", "bridge-deployment", "bridge-metrics-secure", "force", "crd"} {
					if f.Changed(other) {
						return Usagef("--%s does not go with --admission-policy or --upgrade-hook: they print new manifests on stdout", other)
					}
				}
				if len(args) != 1 {
					return Usagef("--admission-policy and --upgrade-hook take one bundle or CSV")
				}
				return a.runGuards(args[0], values, guards, f.Changed("upgrade-hook"))
			}
			for _, only := range []string{"install-namespace", "deployment", "gate-timeout"} {
				if f.Changed(only) {
					return Usagef("--%s goes with --admission-policy or --upgrade-hook", only)
				}
			}
			// A directory of bundles (as validate takes it) is each bundle
			// in it.
			var paths []string
			for _, p := range args {
				paths = append(paths, bundle.Roots(p, bundle.Options{})...)
			}
			if len(args) == 1 && len(paths) > 1 && !write && !check && !diff {
				return Usagef("%s is a directory of %d bundles: several paths need -w, -d or --check; stdout holds one file", args[0], len(paths))
			}
			if err := generateConflicts(values, output.value, write, diff, check, len(paths)); err != nil {
				return err
			}
			opts := generate.Options{Values: values, CRDs: crds}
			switch {
			case f.Changed("bridge") && bridgeImage == "":
				return Usagef("--bridge needs the image that runs statuscheck bridge")
			case f.Changed("bridge"):
				opts.Bridge = &generate.Bridge{Image: bridgeImage, Deployment: bridgeDeployment, MetricsSecure: bridgeSecure}
			case f.Changed("bridge-deployment"):
				return Usagef("--bridge-deployment goes with --bridge IMAGE")
			case f.Changed("bridge-metrics-secure"):
				return Usagef("--bridge-metrics-secure goes with --bridge IMAGE")
			}
			code := result.ExitOK
			fix := fixCommand(f)
			// Like gofmt -w over many files: one path that cannot be done
			// does not stop the others; each is named at the end (exit 2).
			var errs []error
			for _, path := range paths {
				c, err := a.generateOne(path, opts, output.value, write, diff, check, force, fix)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				code = max(code, c)
			}
			a.code = code
			return errors.Join(errs...)
		},
	}
	f := cmd.Flags()
	f.StringVar(&apiVersion, "api-version", "", "the status source's `GROUP/VERSION`")
	f.StringVar(&kind, "kind", "", "the status source's `KIND`")
	f.StringVar(&name, "name", "", "the singleton's `NAME` (metadata.name)")
	f.StringVar(&namespace, "namespace", "", "its `NAMESPACE` (namespaced kinds; empty: the operator's namespace)")
	f.StringSliceVar(&conditions, "conditions", nil, "condition `TYPES` the gate reads, comma-separated (default Upgradeable)")
	f.Var(whenAbsent, "when-absent", "verdict while the CR does not exist: Allow or Block")
	f.Var(handshake, "handshake", "lock flow: None, OperatorCondition or RequestAck")
	f.StringVar(&specPath, "request-spec-path", "", "RequestAck: the spec field OLM writes its token to (`PATH`: .spec.FIELD); implies --handshake RequestAck")
	f.StringVar(&annoKey, "request-annotation", "", "RequestAck: the annotation `KEY` OLM writes its token to; implies --handshake RequestAck")
	f.StringVar(&ackPath, "ack-status-path", "", "RequestAck: the status field the operator echoes the token in (`PATH`: .status.FIELD); implies --handshake RequestAck")
	f.StringSliceVar(&crds, "crd", nil, "the CRD files or directories at `PATH` to check against (repeatable)")
	f.BoolVarP(&write, "write", "w", false, "write the result to the file instead of stdout")
	f.BoolVarP(&diff, "diff", "d", false, "print a unified diff instead of the file")
	f.VarP(output, "output", "o", "yaml (the whole CSV) or patch (a JSON 6902 patch)")
	f.BoolVar(&check, "check", false, "exit 1 when the file is not up to date (for pre-commit)")
	f.BoolVar(&force, "force", false, "write even when validate finds errors in the value")
	f.StringVar(&bridgeImage, "bridge", "", "also add the bridge: a sidecar running statuscheck bridge from the container `IMAGE`, its RBAC and its declaration (docs/bridge.md)")
	f.StringVar(&bridgeDeployment, "bridge-deployment", "", "the install strategy's deployment `NAME` the bridge joins (default: the only one)")
	f.BoolVar(&bridgeSecure, "bridge-metrics-secure", false, "the bridge serves its metrics on the pod's port \""+sidecar.PortMetrics+"\" over HTTPS, authenticated and authorized by the apiserver (it then needs create on tokenreviews and subjectaccessreviews), instead of on localhost")
	guards.register(f)
	return cmd
}

func generateConflicts(v generate.Values, output string, write, diff, check bool, paths int) error {
	switch {
	case check && write:
		return Usagef("--check and -w do not go together: --check never writes")
	case check && output == "patch":
		return Usagef("--check and -o patch do not go together")
	case output == "patch" && (write || diff):
		return Usagef("-o patch prints a patch; it does not go with -w or -d")
	case v.RequestSpecPath != nil && v.RequestAnnotation != nil:
		return Usagef("--request-spec-path and --request-annotation do not go together: OLM writes its token to one place")
	case v.Handshake != nil && *v.Handshake != string(v1alpha1.HandshakeRequestAck) &&
		(v.RequestSpecPath != nil || v.RequestAnnotation != nil || v.AckStatusPath != nil):
		return Usagef("--request-spec-path, --request-annotation and --ack-status-path need --handshake RequestAck, not %s", *v.Handshake)
	case v.Handshake != nil && *v.Handshake == string(v1alpha1.HandshakeRequestAck) && v.RequestSpecPath == nil && v.RequestAnnotation == nil:
		return Usagef("--handshake RequestAck needs --request-spec-path or --request-annotation")
	case v.RequestSpecPath != nil && placeholder(*v.RequestSpecPath):
		return Usagef("--request-spec-path %s is the placeholder of a suggested command: give the spec field your CRD reserves for OLM's request (a string field of its own, such as .spec.upgradeRequest, added to the CRD's spec schema first)", *v.RequestSpecPath)
	case v.AckStatusPath != nil && placeholder(*v.AckStatusPath):
		return Usagef("--ack-status-path %s is the placeholder of a suggested command: give the status field the operator echoes the answered request in (such as .status.observedUpgradeRequest, added to the CRD's status schema first)", *v.AckStatusPath)
	case paths > 1 && !write && !check && !diff:
		return Usagef("several paths need -w, -d or --check; stdout holds one file")
	}
	return nil
}

// placeholder reports whether a path is the placeholder word of one of
// statuscheck's suggested commands (.spec.FIELD), pasted as it is.
func placeholder(path string) bool {
	_, field, _ := strings.Cut(strings.TrimPrefix(path, "."), ".")
	return field == "FIELD" || field == "PATH" || strings.ContainsAny(path, "<>")
}

// fixCommand is the generate -w command that brings a file up to date:
// the flags this run was given that choose the value (not --check, -d or
// -o), quoted as a shell reads them. PATH follows.
func fixCommand(f *pflag.FlagSet) string {
	words := []string{"statuscheck", "generate", "-w"}
	f.Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "check", "diff", "write", "output":
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				words = append(words, "--"+fl.Name, shellQuote(v))
			}
			return
		}
		if fl.Value.Type() == "bool" {
			words = append(words, "--"+fl.Name)
			return
		}
		words = append(words, "--"+fl.Name, shellQuote(fl.Value.String()))
	})
	return strings.Join(words, " ")
}

// shellQuote quotes a word for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,@%+-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (a *app) generateOne(path string, opts generate.Options, output string, write, diff, check, force bool, fix string) (int, error) {
	res, err := generate.Run(path, opts)
	if err != nil {
		return 0, err
	}
	if check && !diff && !res.Changed() && !res.Invalid() {
		return result.ExitOK, nil // up to date: nothing to say (pre-commit)
	}
	for _, n := range res.Notes {
		if err := report.Note(a.stderr, res.File, n); err != nil {
			return 0, err
		}
	}
	for _, v := range res.Verdict {
		fmt.Fprintf(a.stderr, "statuscheck: %s: the upgrade is not held yet; validate will report %s %s: %s\n", res.File, v.Severity, v.Rule, v.Message)
	}
	if err := report.Lines(a.stderr, res.Findings); err != nil {
		return 0, err
	}
	if res.Invalid() && !force && !check {
		fmt.Fprintf(a.stderr, "statuscheck: %s: the status source %s is invalid (findings above); nothing written (--force writes it anyway)\n", res.File, res.Derivation.Source.Marshal())
		if img := declaredBridgeImage(res); opts.Bridge == nil && img != "" && slices.ContainsFunc(res.Findings, func(f result.Finding) bool { return f.Rule == "bridge-rbac-missing" }) {
			fmt.Fprintf(a.stderr, "statuscheck: %s: the declared bridge needs more RBAC for this value, which generate adds only with --bridge: run %s --bridge %s %s\n", res.File, fix, shellQuote(img), shellQuote(path))
		}
		return result.ExitFindings, nil
	}
	code := result.ExitOK
	if check {
		if res.Changed() {
			what := "the status-source annotation is"
			if res.Bridge != nil {
				what = "the status-source annotation or the bridge is"
			}
			fmt.Fprintf(a.stdout, "%s: %s not up to date; run: %s %s\n", res.File, what, fix, shellQuote(path))
			code = result.ExitFindings
		}
		if res.Invalid() {
			code = result.ExitFindings
		}
		if !diff {
			return code, nil
		}
	}
	switch {
	case output == "patch":
		p, err := generate.Patch(res)
		if err != nil {
			return 0, err
		}
		_, err = a.stdout.Write(p)
		return code, err
	case diff:
		d, err := generate.Diff(res)
		if err != nil {
			return 0, err
		}
		fmt.Fprint(a.stdout, d)
	case !write:
		_, err := a.stdout.Write(res.New)
		return code, err
	}
	if write && res.Changed() {
		if err := generate.WriteFile(res.File, res.Old, res.New); err != nil {
			return 0, err
		}
		if res.Bridge != nil {
			fmt.Fprintf(a.stderr, "statuscheck: %s: wrote the status-source annotation (%s) and the bridge (%s)\n", res.File, res.Derivation.From, res.Bridge)
		} else {
			fmt.Fprintf(a.stderr, "statuscheck: %s: wrote the status-source annotation (%s)\n", res.File, res.Derivation.From)
		}
	}
	return code, nil
}

// declaredBridgeImage is the image of the bridge the CSV declares, "" when
// it declares none (or it cannot be found).
func declaredBridgeImage(res *generate.Result) string {
	_, csv, err := generate.ParseCSV(res.File, res.Old)
	if err != nil {
		return ""
	}
	d, err := sidecar.Declared(csv)
	if err != nil || d == nil {
		return ""
	}
	install := csv.Spec.InstallStrategy.StrategySpec
	dep, ctr := sidecar.Find(install, *d)
	if dep < 0 || ctr < 0 {
		return ""
	}
	return install.DeploymentSpecs[dep].Spec.Template.Spec.Containers[ctr].Image
}
