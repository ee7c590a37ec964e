package validate

// The per-rule fixtures under testdata/bundles/rules/RULE/{fail,pass} are
// each the good bundle (testdata/bundles/good) with the edits listed here:
// the table says exactly how each fixture differs from a bundle that passes
// every rule. `go test ./pkg/validate -run TestRuleFixtures -update`
// rewrites them; without -update the test fails when a fixture on disk no
// longer matches its entry, so the two cannot drift apart.

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

const (
	csvFile = "manifests/cool-operator.clusterserviceversion.yaml"
	crdFile = "manifests/cool.operators.corp_cooloperators.yaml"
	annFile = "metadata/annotations.yaml"

	// statusRule is the good CSV's permission to write cooloperators/status.
	statusRule = "        - apiGroups:\n          - cool.operators.corp\n          resources:\n          - cooloperators/status\n          verbs:\n          - get\n          - update\n          - patch\n"

	goodAnnotation = `    operatorframework.io/status-source: '{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator"}'`

	// initResource is the good CSV's initialization resource.
	initResource = `    operatorframework.io/initialization-resource: '{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}'`
)

var (
	bridgeDeclared = edit{csvFile, goodAnnotation + "\n", goodAnnotation + "\n    statuscheck.operatorframework.io/bridge: cool-operator/statuscheck-bridge\n"}
	// bridgeContainer reads the status source from the downward API, as
	// generate writes it; olderBridgeContainer reads it from the running
	// CSV, as an older generate wrote it.
	bridgeContainer = edit{csvFile, "                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n",
		"                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n              - name: statuscheck-bridge\n                image: quay.io/statuscheck/statuscheck:v0.1.0\n                args: [bridge]\n" +
			"                env:\n                - name: STATUSCHECK_STATUS_SOURCE\n                  valueFrom:\n                    fieldRef:\n                      fieldPath: metadata.annotations['operatorframework.io/status-source']\n"}
	olderBridgeContainer = edit{csvFile, "                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n",
		"                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n              - name: statuscheck-bridge\n                image: quay.io/statuscheck/statuscheck:v0.1.0\n                args: [bridge]\n"}
	csvGetRule       = "        - apiGroups:\n          - operators.coreos.com\n          resources:\n          - clusterserviceversions\n          verbs:\n          - get\n"
	csvListWatchRule = "        - apiGroups:\n          - operators.coreos.com\n          resources:\n          - clusterserviceversions\n          verbs:\n          - list\n          - watch\n"
	requestAckSpec   = `{` + cool + `,"handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}`
	// protectedEdits make the good bundle's upgrade held on OLM v0 with no
	// violation the protocol search finds: the bridge, under RequestAck
	// with a spec request, and the RBAC it needs for that.
	protectedEdits    = []edit{bridgeDeclared, annotation(requestAckSpec), bridgeContainer, {csvFile, statusRule, statusRule + csvListWatchRule}}
	operatorCondition = `{` + cool + `,"handshake":{"mode":"OperatorCondition"}}`
)

type edit struct {
	file     string
	old, new string
}

type fixture struct {
	rule  string
	pass  bool
	edits []edit
	// add writes files (content "" with a link target creates a symlink).
	add     map[string]string
	links   map[string]string
	remove  []string
	comment string
}

// annotation swaps the good annotation for another value.
func annotation(value string) edit {
	return edit{csvFile, goodAnnotation, "    operatorframework.io/status-source: '" + value + "'"}
}

const cool = `"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator"`

var fixtures = []fixture{
	{rule: "manifest-parse", comment: "an indentation slip in the CSV",
		edits: []edit{{csvFile, "  displayName: Cool Operator\n  description:", "  displayName: Cool Operator\n   description:"}}},
	{rule: "manifest-parse", pass: true, comment: "an extra manifest written as JSON",
		add: map[string]string{"manifests/cool-operator-config.configmap.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cool-operator-config"}, "data": {"logLevel": "info"}}` + "\n"}},

	{rule: "status-source-missing", comment: "no status-source annotation",
		edits: []edit{{csvFile, "    # The operator's own CR carries Upgradeable; OLM reads it there.\n" + goodAnnotation + "\n", ""}}},
	{rule: "status-source-missing", pass: true, comment: "the annotation as a YAML block scalar",
		edits: []edit{{csvFile, goodAnnotation, "    operatorframework.io/status-source: |\n      {\"apiVersion\": \"cool.operators.corp/v1beta1\",\n       \"kind\": \"CoolOperator\",\n       \"name\": \"cool-operator\"}"}}},

	{rule: "status-source-invalid", comment: "a misspelt field",
		edits: []edit{annotation(`{` + cool + `,"condtions":["Upgradeable"]}`)}},
	{rule: "status-source-invalid", pass: true, comment: "every optional field but namespace set",
		edits: []edit{annotation(`{` + cool + `,"conditions":["Upgradeable","Degraded"],"whenAbsent":"Block","handshake":{"mode":"None"}}`)}},

	{rule: "status-source-not-owned", comment: "the CRD listed as required instead of owned",
		edits: []edit{{csvFile, "  customresourcedefinitions:\n    owned:", "  customresourcedefinitions:\n    required:"}}},
	{rule: "status-source-not-owned", pass: true, comment: "owned at another version of the same group and kind",
		edits: []edit{{csvFile, "      version: v1beta1\n      kind: CoolOperator", "      version: v1alpha1\n      kind: CoolOperator"}}},

	{rule: "status-source-crd-missing", comment: "the CRD left out of the bundle",
		remove: []string{crdFile}},
	{rule: "status-source-crd-missing", pass: true, comment: "a second CRD with the same kind in another group",
		add: map[string]string{"manifests/legacy.cool.operators.corp_cooloperators.yaml": legacyCRD}},

	{rule: "status-source-crd-invalid", comment: "the list-map key of conditions neither required nor defaulted",
		edits: []edit{{crdFile, "                  required:\n                  - type\n                  - status\n", "                  required:\n                  - status\n"}}},
	{rule: "status-source-crd-invalid", pass: true, comment: "a CEL rule on status that compiles within the cost budget",
		edits: []edit{{crdFile, "          status:\n            type: object\n", "          status:\n            type: object\n            x-kubernetes-validations:\n            - rule: \"!has(self.conditions) || self.conditions.all(c, c.type != '')\"\n              message: every condition has a type\n"}}},

	{rule: "status-source-version-not-served", comment: "the version is no longer served",
		edits: []edit{{crdFile, "    served: true", "    served: false"}}},
	{rule: "status-source-version-not-served", pass: true, comment: "an older unserved version beside the served one",
		edits: []edit{{crdFile, "  versions:\n  - name: v1beta1", "  versions:\n  - name: v1alpha1\n    served: false\n    storage: false\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n  - name: v1beta1"}}},

	{rule: "status-source-scope-mismatch", comment: "a namespace for a cluster-scoped kind",
		edits: []edit{
			{crdFile, "  scope: Namespaced", "  scope: Cluster"},
			annotation(`{` + cool + `,"namespace":"cool-system"}`),
		}},
	{rule: "status-source-scope-mismatch", pass: true, comment: "a cluster-scoped kind without a namespace (and its /status granted cluster-wide)",
		edits: []edit{
			{crdFile, "  scope: Namespaced", "  scope: Cluster"},
			{csvFile, statusRule, ""},
			{csvFile, "      deployments:\n", "      clusterPermissions:\n      - serviceAccountName: cool-operator\n        rules:\n" + statusRule + "      deployments:\n"},
		}},

	{rule: "status-source-namespace-pinned", comment: "the namespace the bundle was tested in, pinned",
		edits: []edit{annotation(`{` + cool + `,"namespace":"cool-system"}`)}},
	{rule: "status-source-namespace-pinned", pass: true, comment: "the namespace left out, whenAbsent Block",
		edits: []edit{annotation(`{` + cool + `,"whenAbsent":"Block"}`)}},

	{rule: "status-subresource-disabled", comment: "no status subresource",
		edits: []edit{{crdFile, "    subresources:\n      status: {}\n", ""}}},
	{rule: "status-subresource-disabled", pass: true, comment: "a v1beta1 CRD with the top-level spec.subresources",
		remove: []string{crdFile}, add: map[string]string{"manifests/cooloperators.crd.yaml": v1beta1CRD}},

	{rule: "conditions-schema-missing", comment: "status without conditions",
		edits: []edit{{crdFile, conditionsSchema, ""}}},
	{rule: "conditions-schema-missing", pass: true, comment: "conditions described inside a status that also preserves unknown fields",
		edits: []edit{{crdFile, "          status:\n            type: object\n", "          status:\n            type: object\n            x-kubernetes-preserve-unknown-fields: true\n"}}},

	{rule: "conditions-observedgeneration-missing", comment: "no observedGeneration anywhere",
		edits: []edit{
			{crdFile, "                    observedGeneration:\n                      type: integer\n                      format: int64\n                      minimum: 0\n", ""},
			{crdFile, "              observedGeneration:\n                type: integer\n                format: int64\n", ""},
		}},
	{rule: "conditions-observedgeneration-missing", pass: true, comment: "only the condition's observedGeneration (metav1.Condition), no status.observedGeneration",
		edits: []edit{{crdFile, "              observedGeneration:\n                type: integer\n                format: int64\n", ""}}},

	{rule: "conditions-list-type", comment: "an atomic conditions list",
		edits: []edit{{crdFile, "                x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys:\n                - type\n", "                x-kubernetes-list-type: atomic\n"}}},
	{rule: "conditions-list-type", pass: true, comment: "a map list keyed by type, written in flow style",
		edits: []edit{{crdFile, "                x-kubernetes-list-map-keys:\n                - type\n", "                x-kubernetes-list-map-keys: [type]\n"}}},

	{rule: "status-write-rejected", comment: "observedGeneration bounded so that a real value is refused",
		edits: []edit{{crdFile, "                    observedGeneration:\n                      type: integer\n                      format: int64\n                      minimum: 0\n", "                    observedGeneration:\n                      type: integer\n                      format: int64\n                      minimum: 0\n                      maximum: 0\n"}}},
	{rule: "status-write-rejected", pass: true, comment: "a CEL rule on the conditions that a real status meets",
		edits: []edit{{crdFile, "                x-kubernetes-list-type: map\n", "                x-kubernetes-list-type: map\n                x-kubernetes-validations:\n                - rule: self.all(c, c.status in ['True', 'False', 'Unknown'])\n                  message: a condition's status is True, False or Unknown\n"}}},

	{rule: "condition-type-spelling", comment: "Upgradable for Upgradeable",
		edits: []edit{annotation(`{` + cool + `,"conditions":["Upgradable"]}`)}},
	{rule: "condition-type-spelling", pass: true, comment: "another condition beside Upgradeable",
		edits: []edit{annotation(`{` + cool + `,"conditions":["Upgradeable","Degraded"]}`)}},

	{rule: "initialization-resource-mismatch", comment: "the console creates a CR of another name",
		edits: []edit{{csvFile, `"metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}'`, `"metadata": {"name": "cool-operator-sample"}, "spec": {"storageLayer": "PostgreSQL"}}'`}}},
	{rule: "initialization-resource-mismatch", pass: true, comment: "the same CR written at another version, in YAML",
		edits: []edit{{csvFile, `    operatorframework.io/initialization-resource: '{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}'`,
			"    operatorframework.io/initialization-resource: |\n      apiVersion: cool.operators.corp/v1alpha1\n      kind: CoolOperator\n      metadata:\n        name: cool-operator\n"}}},

	{rule: "status-source-example-invalid", comment: "the console's example (the initialization resource, a quoted string: the finding is at the annotation) and the alm-examples sample (a literal block: the finding is at the field) set storage layers the CRD does not allow",
		edits: []edit{{csvFile, `"metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}'`, `"metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "Oracle"}}'`},
			{csvFile, `"spec": {"storageLayer": "PostgreSQL"}}]`, `"spec": {"storageLayer": "DB2"}}]`}}},
	{rule: "status-source-example-invalid", pass: true, comment: "the example only in alm-examples, without an initialization resource (whenAbsent Block: nothing else shows the CR exists)",
		edits: []edit{{csvFile, initResource + "\n", ""}, annotation(`{` + cool + `,"whenAbsent":"Block"}`)}},

	{rule: "alm-examples-invalid", comment: "alm-examples missing its closing bracket (a warning: the status source's example comes from the initialization resource)",
		edits: []edit{{csvFile, `"spec": {"storageLayer": "PostgreSQL"}}]`, `"spec": {"storageLayer": "PostgreSQL"}}`}}},
	{rule: "alm-examples-invalid", pass: true, comment: "alm-examples as indented JSON over several lines",
		edits: []edit{{csvFile, `      [{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}]`,
			"      [\n        {\n          \"apiVersion\": \"cool.operators.corp/v1beta1\",\n          \"kind\": \"CoolOperator\",\n          \"metadata\": {\"name\": \"cool-operator\"},\n          \"spec\": {\"storageLayer\": \"PostgreSQL\"}\n        }\n      ]"}}},

	{rule: "status-source-may-not-exist", comment: "no initialization resource: the name is only alm-examples' sample, and whenAbsent is Allow",
		edits: []edit{{csvFile, initResource + "\n", ""}}},
	{rule: "status-source-may-not-exist", pass: true, comment: "no initialization resource, but the operator creates the CR: it may create the kind and is given the name",
		edits: []edit{{csvFile, initResource + "\n", ""},
			{csvFile, "          - list\n          - watch\n          - update\n", "          - list\n          - watch\n          - create\n          - update\n"},
			{csvFile, "                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n", "                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n                args: [--singleton-name=cool-operator]\n"}}},

	{rule: "status-rbac-install-mode", comment: "a cluster-scoped kind whose /status rule is in permissions, with AllNamespaces supported beside OwnNamespace and SingleNamespace",
		edits: []edit{{crdFile, "  scope: Namespaced", "  scope: Cluster"}, {csvFile, "  - type: AllNamespaces\n    supported: false\n", "  - type: AllNamespaces\n    supported: true\n"}}},
	{rule: "status-rbac-install-mode", pass: true, comment: "the same with AllNamespaces the only install mode: OLM lifts the Roles to ClusterRoles",
		edits: []edit{{crdFile, "  scope: Namespaced", "  scope: Cluster"}, {csvFile, "  - type: OwnNamespace\n    supported: true\n  - type: SingleNamespace\n    supported: true\n  - type: MultiNamespace\n    supported: false\n  - type: AllNamespaces\n    supported: false\n",
			"  - type: OwnNamespace\n    supported: false\n  - type: SingleNamespace\n    supported: false\n  - type: MultiNamespace\n    supported: false\n  - type: AllNamespaces\n    supported: true\n"}}},

	{rule: "status-rbac-missing", comment: "no permission on cooloperators/status",
		edits: []edit{{csvFile, statusRule, ""}}},
	{rule: "status-rbac-missing", pass: true, comment: "the status permission granted through clusterPermissions with */status",
		edits: []edit{
			{csvFile, statusRule, ""},
			{csvFile, "      deployments:\n", "      clusterPermissions:\n      - serviceAccountName: cool-operator\n        rules:\n        - apiGroups:\n          - cool.operators.corp\n          resources:\n          - '*/status'\n          verbs:\n          - patch\n      deployments:\n"},
		}},

	{rule: "handshake-request-not-observable", comment: "an annotation request without an ack path (the seed's unsafe flow)",
		edits: []edit{annotation(`{` + cool + `,"handshake":{"mode":"RequestAck","request":{"annotation":"operatorframework.io/upgrade-request"}}}`)}},
	{rule: "handshake-request-not-observable", pass: true, comment: "an annotation request with the token echoed in status",
		edits: []edit{annotation(`{` + cool + `,"handshake":{"mode":"RequestAck","request":{"annotation":"operatorframework.io/upgrade-request"},"ack":{"statusPath":".status.observedUpgradeRequest"}}}`)}},

	{rule: "handshake-path-missing", comment: "a request path the schema does not define",
		edits: []edit{annotation(`{` + cool + `,"handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeToken"}}}`)}},
	{rule: "handshake-path-missing", pass: true, comment: "a request through a spec field the schema defines",
		edits: []edit{annotation(`{` + cool + `,"handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}`)}},

	{rule: "handshake-request-not-reserved", comment: "a request through a spec field that already means something",
		edits: []edit{{crdFile, "              upgradeRequest:\n", "              serviceAccountName:\n                description: The ServiceAccount the operand runs as.\n                type: string\n              upgradeRequest:\n"},
			annotation(`{` + cool + `,"handshake":{"mode":"RequestAck","request":{"specPath":".spec.serviceAccountName"}}}`)}},
	{rule: "handshake-request-not-reserved", pass: true, comment: "a request field of another name whose description says it is the upgrade request",
		edits: []edit{{crdFile, "              upgradeRequest:\n", "              olmToken:\n                description: The upgrade request OLM writes; nothing else does.\n                type: string\n              upgradeRequest:\n"},
			annotation(`{` + cool + `,"handshake":{"mode":"RequestAck","request":{"specPath":".spec.olmToken"}}}`)}},

	{rule: "bridge-container-missing", comment: "the bridge declared, its container never added",
		edits: []edit{bridgeDeclared}},
	{rule: "bridge-container-missing", pass: true, comment: "what generate --bridge writes: the declaration and the container (the operator's own rule on the CR grants the bridge get and watch)",
		edits: []edit{bridgeDeclared, bridgeContainer}},

	{rule: "bridge-rbac-missing", comment: "a container an older generate wrote, which reads the running CSV, without the permission to",
		edits: []edit{bridgeDeclared, olderBridgeContainer}},
	{rule: "bridge-rbac-missing", pass: true, comment: "the older container's CSV read granted by name through clusterPermissions",
		edits: []edit{bridgeDeclared, olderBridgeContainer,
			{csvFile, "      deployments:\n", "      clusterPermissions:\n      - serviceAccountName: cool-operator\n        rules:\n        - apiGroups: [operators.coreos.com]\n          resources: [clusterserviceversions]\n          resourceNames: [cool-operator.v0.2.0]\n          verbs: [get]\n      deployments:\n"}}},

	{rule: "bridge-rbac-broad", comment: "the get on every CSV an older generate wrote, which a bridge reading the downward API does not need",
		edits: []edit{bridgeDeclared, bridgeContainer, {csvFile, statusRule, statusRule + csvGetRule}}},
	{rule: "bridge-rbac-broad", pass: true, comment: "RequestAck: CSVs listed and watched, and the operator's own rule on the CR (it lists and updates), which is not the bridge's",
		edits: []edit{bridgeDeclared, annotation(requestAckSpec), bridgeContainer, {csvFile, statusRule, statusRule + csvListWatchRule}}},

	{rule: "bridge-operatorcondition-handshake", comment: "the bridge beside an operator that writes the OperatorCondition itself",
		edits: []edit{bridgeDeclared, annotation(operatorCondition), bridgeContainer}},
	{rule: "bridge-operatorcondition-handshake", pass: true, comment: "the bridge with the None handshake written out",
		edits: []edit{bridgeDeclared, annotation(`{` + cool + `,"handshake":{"mode":"None"}}`), bridgeContainer}},

	// The verdict: is the upgrade held on OLM v0, and does the protocol
	// search on the bundle's own configuration find a violation? Its
	// fixtures are judged on the verdict's findings only (TestRuleFixtures).
	{rule: "upgrade-not-held-olm-v0", comment: "RequestAck with a spec request, which holds the upgrade on a lifecycle manager that reads the status source, and nothing that writes the OperatorCondition for OLM v0",
		edits: []edit{annotation(requestAckSpec)}},
	{rule: "upgrade-not-held-olm-v0", pass: true, comment: "what protects the upgrade: the bridge, under a RequestAck handshake with a spec request (no race between OLM's check and the replacement)",
		edits: protectedEdits},

	{rule: "upgrade-while-blocked", comment: "the bridge under handshake None: OLM's check allows, the user changes the spec, OLM replaces the operator",
		edits: []edit{bridgeDeclared, bridgeContainer}},
	{rule: "upgrade-while-blocked", pass: true, comment: "the bridge under RequestAck with a spec request",
		edits: protectedEdits},

	{rule: "unsafe-approval", comment: "the bridge under handshake None: OLM's copy allows while the CR's True is outdated",
		edits: []edit{bridgeDeclared, bridgeContainer}},
	{rule: "unsafe-approval", pass: true, comment: "the bridge under RequestAck with a spec request",
		edits: protectedEdits},

	{rule: "unacknowledged-upgrade", comment: "the bridge under RequestAck with an annotation request and no ack path: nothing shows the operator answered",
		edits: []edit{bridgeDeclared, annotation(`{` + cool + `,"handshake":{"mode":"RequestAck","request":{"annotation":"cool.operators.corp/upgrade-request"}}}`), bridgeContainer, {csvFile, statusRule, statusRule + csvListWatchRule}}},
	{rule: "unacknowledged-upgrade", pass: true, comment: "the bridge under RequestAck with a spec request",
		edits: protectedEdits},

	{rule: "never-upgradeable", comment: "the bridge under handshake None, on a CRD without the status subresource: every status write moves generation, so the bridge never sees a fresh True and the gate never opens (under RequestAck the answer to a spec request counts, so the gate opens)",
		edits: []edit{{crdFile, "    subresources:\n      status: {}\n", ""}, bridgeDeclared, bridgeContainer}},
	{rule: "never-upgradeable", pass: true, comment: "the same with the status subresource",
		edits: protectedEdits},

	{rule: "upgrade-unverified", comment: "the bridge under RequestAck on a CRD whose spec keeps only the request field: the model finds no spec change a user could make, so nothing shows the upgrade is held",
		edits: append([]edit{{crdFile, "              storageLayer:\n                description: Storage backend; changing it starts a migration.\n                type: string\n                enum:\n                - PostgreSQL\n                - MariaDB\n", ""}}, protectedEdits...)},
	{rule: "upgrade-unverified", pass: true, comment: "the same with the spec field",
		edits: protectedEdits},

	{rule: "write-rejected", comment: "the bridge under RequestAck, on a CRD whose CEL rule refuses a spec other than PostgreSQL while Upgradeable is True: the user's change is refused",
		edits: append([]edit{{crdFile, "        description: CoolOperator is the operator's singleton configuration.\n        type: object\n",
			"        description: CoolOperator is the operator's singleton configuration.\n        type: object\n        x-kubernetes-validations:\n        - rule: \"!has(self.status) || !has(self.status.conditions) || !has(self.spec.storageLayer) || self.spec.storageLayer == 'PostgreSQL' || self.status.conditions.all(c, c.type != 'Upgradeable' || c.status != 'True')\"\n          message: Upgradeable may be True only on PostgreSQL\n"}}, protectedEdits...)},
	{rule: "write-rejected", pass: true, comment: "the same without the rule",
		edits: protectedEdits},

	{rule: "manifest-limit", comment: "a YAML alias bomb",
		add: map[string]string{"manifests/bomb.configmap.yaml": aliasBomb}},
	{rule: "manifest-limit", pass: true, comment: "a few honest anchors and aliases",
		add: map[string]string{"manifests/anchors.configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cool-defaults\n  labels: &labels\n    app: cool-operator\n    tier: control-plane\n  annotations:\n    copied-labels: \"true\"\ndata:\n  a: &greeting hello\n  b: *greeting\n"}},

	{rule: "bundle-csv-missing", comment: "no ClusterServiceVersion",
		remove: []string{csvFile}},
	{rule: "bundle-csv-missing", pass: true, comment: "the CSV named without the usual suffix",
		remove: []string{csvFile}, add: map[string]string{"manifests/csv.yaml": "@" + csvFile}},

	{rule: "bundle-multiple-csvs", comment: "a second CSV",
		add: map[string]string{"manifests/cool-operator.v0.1.0.clusterserviceversion.yaml": "@" + csvFile}},
	{rule: "bundle-multiple-csvs", pass: true, comment: "a ConfigMap that quotes a CSV in its data",
		add: map[string]string{"manifests/csv-backup.configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csv-backup\ndata:\n  csv.yaml: |\n    apiVersion: operators.coreos.com/v1alpha1\n    kind: ClusterServiceVersion\n    metadata:\n      name: cool-operator.v0.1.0\n"}},

	{rule: "bundle-unsupported-kind", comment: "a Deployment beside the CSV",
		add: map[string]string{"manifests/cool-webhook.deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cool-webhook\nspec:\n  selector:\n    matchLabels:\n      app: cool-webhook\n  template:\n    metadata:\n      labels:\n        app: cool-webhook\n    spec:\n      containers:\n      - name: webhook\n        image: quay.io/cool-operators-corp/webhook:v0.2.0\n"}},
	{rule: "bundle-unsupported-kind", pass: true, comment: "a PodMonitor, which registry+v1 allows",
		add: map[string]string{"manifests/cool-operator.podmonitor.yaml": "apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata:\n  name: cool-operator\nspec:\n  selector:\n    matchLabels:\n      app: cool-operator\n  podMetricsEndpoints:\n  - port: metrics\n"}},

	{rule: "bundle-multi-document", comment: "a ConfigMap appended to the CRD's file",
		edits: []edit{{crdFile, "                      maxLength: 32768\n", "                      maxLength: 32768\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cool-operator-config\n"}}},
	{rule: "bundle-multi-document", pass: true, comment: "document separators around a single document",
		edits: []edit{
			{crdFile, "apiVersion: apiextensions.k8s.io/v1\n", "---\n# CoolOperator CRD\napiVersion: apiextensions.k8s.io/v1\n"},
			{crdFile, "                      maxLength: 32768\n", "                      maxLength: 32768\n---\n"},
		}},

	{rule: "bundle-metadata-missing", comment: "no metadata directory",
		remove: []string{annFile}},
	{rule: "bundle-metadata-missing", pass: true, comment: "the annotations file under another name",
		remove: []string{annFile}, add: map[string]string{"metadata/annotations.yml": "@" + annFile}},

	{rule: "bundle-metadata-invalid", comment: "no channels annotation",
		edits: []edit{{annFile, "  operators.operatorframework.io.bundle.channels.v1: stable\n", ""}}},
	{rule: "bundle-metadata-invalid", pass: true, comment: "extra annotations beside the required ones",
		edits: []edit{{annFile, "  operators.operatorframework.io.bundle.channel.default.v1: stable\n", "  operators.operatorframework.io.bundle.channel.default.v1: stable\n  operators.operatorframework.io.metrics.builder: operator-sdk-v1.39.0\n  operators.operatorframework.io.test.config.v1: tests/scorecard/\n"}}},

	{rule: "bundle-layout", comment: "a subdirectory inside manifests/",
		add: map[string]string{"manifests/extra/cool-operator-config.configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cool-operator-config\n"}},
	{rule: "bundle-layout", pass: true, comment: "a README beside manifests/, not inside",
		add: map[string]string{"README.md": "# cool-operator bundle\n"}},

	{rule: "bundle-symlink-escape", comment: "the CRD is a symlink to a file outside the bundle",
		remove: []string{crdFile}, links: map[string]string{crdFile: "../../../../good/" + crdFile}},
	{rule: "bundle-symlink-escape", pass: true, comment: "the CRD is a symlink to a file inside the bundle",
		remove: []string{crdFile}, add: map[string]string{"crds/cooloperators.yaml": "@" + crdFile}, links: map[string]string{crdFile: "../crds/cooloperators.yaml"}},
}

const conditionsSchema = `              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys:
                - type
                items:
                  type: object
                  required:
                  - type
                  - status
                  - lastTransitionTime
                  - reason
                  - message
                  properties:
                    type:
                      type: string
                      maxLength: 316
                    status:
                      type: string
                      enum:
                      - "True"
                      - "False"
                      - Unknown
                    observedGeneration:
                      type: integer
                      format: int64
                      minimum: 0
                    lastTransitionTime:
                      type: string
                      format: date-time
                    reason:
                      type: string
                      maxLength: 1024
                    message:
                      type: string
                      maxLength: 32768
`

const legacyCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: cooloperators.legacy.cool.operators.corp
spec:
  group: legacy.cool.operators.corp
  names:
    kind: CoolOperator
    plural: cooloperators
    singular: cooloperator
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// v1beta1CRD is the CoolOperator CRD written as
// apiextensions.k8s.io/v1beta1, without spec.preserveUnknownFields (which
// the apiserver defaults to true).
var v1beta1CRD = crdText("cooloperators-v1beta1.yaml")

// crdText reads a CRD of testdata/crds: the CRDs these tests share with
// internal/conformance, which installs them on a real apiserver.
func crdText(name string) string {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "crds", name))
	if err != nil {
		panic(fmt.Errorf("reading a CRD of testdata/crds: %w", err))
	}
	return string(data)
}

// aliasBomb is the "billion laughs" attack in YAML: nine levels of nine
// aliases expand to 9^9 (387 million) strings from a 1 KB file.
const aliasBomb = `apiVersion: v1
kind: ConfigMap
metadata:
  name: lol
data:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
  i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`
