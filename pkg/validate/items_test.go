package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// Issue 27's items, each on a bundle built from the good one (as the rule
// fixtures are, with materialize), each asserting the rule, its severity
// and where it points.

// edited validates the good bundle with a fixture's changes.
func edited(t *testing.T, f fixture) (dir string, findings []result.Finding) {
	t.Helper()
	dir = t.TempDir()
	materialize(t, f, dir)
	res := Path(dir, Options{}, bundle.Options{})
	require.Empty(t, res.Errors)
	return dir, res.Findings
}

// ofRule keeps the findings of one rule.
func ofRule(findings []result.Finding, rule string) []result.Finding {
	var out []result.Finding
	for _, f := range findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

// lineOf is the 1-based line of the first occurrence of s in file.
func lineOf(t *testing.T, file, s string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	i := strings.Index(string(data), s)
	require.GreaterOrEqual(t, i, 0, "%q not in %s", s, file)
	return 1 + strings.Count(string(data[:i]), "\n")
}

// v1beta1CRDWithoutConditionOG is the v1beta1 CRD of the fixtures with no
// observedGeneration in its conditions (nor in status): what Strimzi's
// CRDs are, and what a v1beta1 CRD's defaulted preserveUnknownFields
// keeps anyway.
var v1beta1CRDWithoutConditionOG = strings.Replace(v1beta1CRD, "                  observedGeneration:\n                    type: integer\n                    format: int64\n", "", 1)

// TestItem5V1beta1PreserveUnknownFieldsCannotVerifyObservedGeneration is
// issue 27, item 5: a v1beta1 CRD that does not set
// spec.preserveUnknownFields keeps every unknown field, so the probe's
// condition observedGeneration comes back although the schema does not
// describe it (strimzi-kafka-operator-0.22.1's Kafka). That is the
// "cannot be verified" forklift's x-kubernetes-preserve-unknown-fields
// status gets, one level down: a warning, where before there was nothing.
// The same CRD with preserveUnknownFields false prunes it: the error.
func TestItem5V1beta1PreserveUnknownFieldsCannotVerifyObservedGeneration(t *testing.T) {
	require.NotEqual(t, v1beta1CRD, v1beta1CRDWithoutConditionOG)
	const file = "manifests/cooloperators.crd.yaml"
	dir, findings := edited(t, fixture{remove: []string{crdFile}, add: map[string]string{file: v1beta1CRDWithoutConditionOG}})
	got := ofRule(findings, "conditions-observedgeneration-missing")
	require.Len(t, got, 1, "findings: %+v", findings)
	fd := got[0]
	assert.Equal(t, result.Warning, fd.Severity)
	assert.Contains(t, fd.Message, "cannot be verified")
	assert.Contains(t, fd.Message, "an apiextensions.k8s.io/v1beta1 CRD defaults it to true")
	assert.Equal(t, filepath.Join(dir, file), fd.File)
	assert.Equal(t, lineOf(t, fd.File, "                properties:\n                  type:\n")+0, fd.Line, "at the condition's properties, where observedGeneration would go")
	assert.NotZero(t, fd.Column)
	assert.Empty(t, ofRule(findings, "conditions-schema-missing"), "the conditions themselves are described")

	// Pruned, the same schema loses the condition's observedGeneration.
	pruned := strings.Replace(v1beta1CRDWithoutConditionOG, "  scope: Namespaced\n", "  scope: Namespaced\n  preserveUnknownFields: false\n", 1)
	_, findings = edited(t, fixture{remove: []string{crdFile}, add: map[string]string{file: pruned}})
	got = ofRule(findings, "conditions-observedgeneration-missing")
	require.Len(t, got, 1, "findings: %+v", findings)
	assert.Equal(t, result.Error, got[0].Severity)
	assert.Contains(t, got[0].Message, "prunes both")

	// The CRD as the fixtures write it describes observedGeneration: clean.
	_, findings = edited(t, fixture{remove: []string{crdFile}, add: map[string]string{file: v1beta1CRD}})
	assert.Empty(t, ofRule(findings, "conditions-observedgeneration-missing"))
}

// TestItem9StatusSourceThatMayNeverExist is issue 27, item 9, validate's
// half: with whenAbsent Allow, a status source that names a CR nothing
// shows is created (here alm-examples' sample, with no initialization
// resource) is a gate that never blocks if that CR never exists: a
// warning at the annotation's name. whenAbsent Block, or an operator that
// may create the kind and is given the name, says nothing.
func TestItem9StatusSourceThatMayNeverExist(t *testing.T) {
	noInit := edit{csvFile, initResource + "\n", ""}
	dir, findings := edited(t, fixture{edits: []edit{noInit}})
	got := ofRule(findings, "status-source-may-not-exist")
	require.Len(t, got, 1, "findings: %+v", findings)
	assert.Equal(t, result.Warning, got[0].Severity)
	assert.Equal(t, filepath.Join(dir, csvFile), got[0].File)
	assert.Equal(t, lineOf(t, got[0].File, "operatorframework.io/status-source:"), got[0].Line)
	assert.Equal(t, "metadata.annotations[operatorframework.io/status-source].name", got[0].Field)
	assert.Contains(t, got[0].Message, "alm-examples entry 1, a sample")
	assert.Contains(t, got[0].Message, "the gate never blocks")

	_, findings = edited(t, fixture{edits: []edit{noInit, annotation(`{` + cool + `,"whenAbsent":"Block"}`)}})
	assert.Empty(t, ofRule(findings, "status-source-may-not-exist"), "whenAbsent Block holds upgrades until it exists")

	// The name alone, without the permission to create the kind, shows
	// nothing.
	_, findings = edited(t, fixture{edits: []edit{noInit,
		{csvFile, "                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n", "                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n                env:\n                - name: SINGLETON\n                  value: cool-operator\n"}}})
	assert.Len(t, ofRule(findings, "status-source-may-not-exist"), 1)
}

// TestItem10InvalidALMExamples is issue 27, item 10: alm-examples that is
// not JSON was silence. Now it is a finding where the JSON breaks (in a
// literal block scalar; else at the annotation) with the JSON error: an
// error when the status source's example would come from it (no
// initialization resource), a warning when it comes from the
// initialization resource.
func TestItem10InvalidALMExamples(t *testing.T) {
	broken := edit{csvFile, `"spec": {"storageLayer": "PostgreSQL"}}]`, `"spec": {"storageLayer": "PostgreSQL"}}`}
	dir, findings := edited(t, fixture{edits: []edit{broken, {csvFile, initResource + "\n", ""}}})
	got := ofRule(findings, "alm-examples-invalid")
	require.Len(t, got, 1, "findings: %+v", findings)
	fd := got[0]
	assert.Equal(t, result.Error, fd.Severity)
	assert.Equal(t, filepath.Join(dir, csvFile), fd.File)
	assert.Equal(t, lineOf(t, fd.File, "alm-examples:")+1, fd.Line, "the value's line, a literal block's")
	assert.Equal(t, len(`      [{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}`), fd.Column, "its last character: the bracket is not closed")
	assert.Equal(t, "metadata.annotations[alm-examples]", fd.Field)
	assert.Contains(t, fd.Message, "not valid JSON: unexpected end of JSON input (at the end of the value: a bracket, brace or string is not closed)")
	assert.Contains(t, fd.Message, "the status source's example would come from alm-examples")
	assert.Contains(t, fd.Message, "`statuscheck generate` cannot derive the name from it")

	// A trailing comma: YAML reads it, the console's JSON.parse does not.
	_, findings = edited(t, fixture{edits: []edit{{csvFile, `"spec": {"storageLayer": "PostgreSQL"}}]`, `"spec": {"storageLayer": "PostgreSQL"},}]`}, {csvFile, initResource + "\n", ""}}})
	got = ofRule(findings, "alm-examples-invalid")
	require.Len(t, got, 1, "findings: %+v", findings)
	assert.Equal(t, result.Error, got[0].Severity)
	assert.Contains(t, got[0].Message, `invalid character '}' looking for beginning of object key string (line 1, column 150 of the value); it parses as YAML, but the console and operator-sdk parse it as JSON`)

	_, findings = edited(t, fixture{edits: []edit{broken}})
	got = ofRule(findings, "alm-examples-invalid")
	require.Len(t, got, 1, "findings: %+v", findings)
	assert.Equal(t, result.Warning, got[0].Severity, "the status source's example is the initialization resource")

	// A single object where a list goes is not what the console reads.
	_, findings = edited(t, fixture{edits: []edit{{csvFile,
		`      [{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}]`,
		`      {"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}`}}})
	got = ofRule(findings, "alm-examples-invalid")
	require.Len(t, got, 1, "findings: %+v", findings)
	assert.Contains(t, got[0].Message, "not a JSON list of objects: a JSON object where a list of objects goes")
}

// TestItem11BridgeContainerMustRunBridge is issue 27, item 11: the
// declared bridge container must run `statuscheck bridge` (its command
// and args, with the image's entrypoint /usr/local/bin/statuscheck, make
// bridge the subcommand); otherwise bridge-container-missing points at
// the command or args that decide.
func TestItem11BridgeContainerMustRunBridge(t *testing.T) {
	container := func(lines string) edit {
		return edit{csvFile, "                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n",
			"                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n              - name: statuscheck-bridge\n                image: quay.io/statuscheck/statuscheck:v0.1.0\n" + lines +
				"                env:\n                - name: STATUSCHECK_STATUS_SOURCE\n                  valueFrom:\n                    fieldRef:\n                      fieldPath: metadata.annotations['operatorframework.io/status-source']\n"}
	}
	tests := []struct {
		name  string
		lines string
		at    string // the line the finding points at; "" for none
		msg   string
	}{
		{name: "a shell", lines: "                command: [/bin/sh]\n", at: "command: [/bin/sh]", msg: `its command ["/bin/sh"] replaces the image's entrypoint /usr/local/bin/statuscheck`},
		{name: "a shell running the bridge", lines: "                command: [/bin/sh, -c, exec statuscheck bridge]\n", at: "command: [/bin/sh", msg: "so it runs /bin/sh"},
		{name: "another subcommand", lines: "                args: [validate, /bundle]\n", at: "args: [validate", msg: `whose subcommand is "validate", not "bridge"`},
		{name: "a flag before the subcommand", lines: "                args: [--metrics-bind-address=:8385, bridge]\n", at: "args: [--metrics", msg: `subcommand is "--metrics-bind-address=:8385"`},
		{name: "no arguments", lines: "", at: "- name: statuscheck-bridge", msg: "it gives no arguments, so it runs /usr/local/bin/statuscheck with no subcommand"},
		{name: "the entrypoint alone as command", lines: "                command: [/usr/local/bin/statuscheck]\n", at: "command: [/usr/local/bin/statuscheck]", msg: "it gives no arguments"},
		{name: "the image's entrypoint and args", lines: "                args: [bridge]\n"},
		{name: "the entrypoint written out", lines: "                command: [/usr/local/bin/statuscheck, bridge]\n"},
		{name: "statuscheck from the PATH, the subcommand in args", lines: "                command: [statuscheck]\n                args: [bridge, --metrics-bind-address=127.0.0.1:8385]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, findings := edited(t, fixture{edits: []edit{bridgeDeclared, container(tt.lines)}})
			got := ofRule(findings, "bridge-container-missing")
			if tt.at == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "findings: %+v", findings)
			assert.Equal(t, result.Error, got[0].Severity)
			assert.Equal(t, filepath.Join(dir, csvFile), got[0].File)
			assert.Equal(t, lineOf(t, got[0].File, tt.at), got[0].Line)
			assert.Contains(t, got[0].Message, tt.msg)
			assert.Contains(t, got[0].Message, `container "statuscheck-bridge" of deployment "cool-operator" is declared to run the bridge`)
		})
	}
}

// TestItemInstallModesAgainstTheStatusSource is issue 27's install-mode
// item: OLM v0 makes permissions Roles in the install namespace and the
// target namespaces, and ClusterRoles only under AllNamespaces
// (operatorgroup.go, ensureRBACInTargetNamespace, ensureSingletonRBAC,
// ensureTenantRBAC). Held against the status source when its /status rule
// is only in permissions:
func TestItemInstallModesAgainstTheStatusSource(t *testing.T) {
	const goodModes = "  - type: OwnNamespace\n    supported: true\n  - type: SingleNamespace\n    supported: true\n  - type: MultiNamespace\n    supported: false\n  - type: AllNamespaces\n    supported: false\n"
	modes := func(own, single, multi, all bool) edit {
		b := func(v bool) string {
			if v {
				return "true"
			}
			return "false"
		}
		return edit{csvFile, goodModes, "  - type: OwnNamespace\n    supported: " + b(own) + "\n  - type: SingleNamespace\n    supported: " + b(single) +
			"\n  - type: MultiNamespace\n    supported: " + b(multi) + "\n  - type: AllNamespaces\n    supported: " + b(all) + "\n"}
	}
	cluster := edit{crdFile, "  scope: Namespaced", "  scope: Cluster"}
	pinned := annotation(`{` + cool + `,"namespace":"cool-system"}`)
	clusterRule := []edit{{csvFile, statusRule, ""}, {csvFile, "      deployments:\n", "      clusterPermissions:\n      - serviceAccountName: cool-operator\n        rules:\n" + statusRule + "      deployments:\n"}}
	tests := []struct {
		name  string
		edits []edit
		// want is rule(severity) of status-rbac-install-mode and
		// status-rbac-missing; "" for neither.
		want string
		msg  string
	}{
		{name: "cluster-scoped, AllNamespaces beside OwnNamespace and SingleNamespace: Forbidden under the two",
			edits: []edit{cluster, modes(true, true, false, true)}, want: "status-rbac-install-mode(error)", msg: "installed in OwnNamespace or SingleNamespace mode"},
		{name: "cluster-scoped, AllNamespaces only: OLM lifts the Roles to ClusterRoles, nothing is missing",
			edits: []edit{cluster, modes(false, false, false, true)}},
		{name: "cluster-scoped, no AllNamespaces: no ClusterRole under any mode",
			edits: []edit{cluster}, want: "status-rbac-missing(error)", msg: "OLM lifts them to ClusterRoles only under AllNamespaces, which the CSV does not support"},
		{name: "cluster-scoped, the rule in clusterPermissions",
			edits: append([]edit{cluster, modes(true, true, false, true)}, clusterRule...)},
		{name: "pinned, OwnNamespace only: writable only when installed in the pinned namespace",
			edits: []edit{pinned, modes(true, false, false, false)}, want: "status-rbac-install-mode(warning)", msg: `no OperatorGroup makes "cool-system" a target unless the operator is installed there`},
		{name: "pinned, OwnNamespace and AllNamespaces: OwnNamespace elsewhere cannot write it",
			edits: []edit{pinned, modes(true, false, false, true)}, want: "status-rbac-install-mode(warning)", msg: "under AllNamespaces OLM lifts them to ClusterRoles"},
		{name: "pinned, SingleNamespace: an OperatorGroup can target it",
			edits: []edit{pinned}},
		{name: "pinned, AllNamespaces only: the lifted ClusterRoles reach every namespace",
			edits: []edit{pinned, modes(false, false, false, true)}},
		{name: "pinned, OwnNamespace only, the rule in clusterPermissions",
			edits: append([]edit{pinned, modes(true, false, false, false)}, clusterRule...)},
		{name: "the operator's namespace, OwnNamespace only: its Role is there",
			edits: []edit{modes(true, false, false, false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, findings := edited(t, fixture{edits: tt.edits})
			var got []string
			var msg string
			for _, f := range append(ofRule(findings, "status-rbac-install-mode"), ofRule(findings, "status-rbac-missing")...) {
				got = append(got, f.Rule+"("+f.Severity.String()+")")
				msg = f.Message
			}
			if tt.want == "" {
				assert.Empty(t, got, "findings: %+v", findings)
				return
			}
			assert.Equal(t, []string{tt.want}, got, "findings: %+v", findings)
			assert.Contains(t, msg, tt.msg)
		})
	}
}
