package validate

import (
	"fmt"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// RuleNotHeldOLMv0 is the rule of the verdict for OLM v0: the formats a
// pipeline reads instead of the exit code (JUnit, SARIF, scorecard,
// operator-sdk's ManifestResult) carry a "no" under it, whatever finding
// it comes from.
const RuleNotHeldOLMv0 = "upgrade-not-held-olm-v0"

// Rule is one check: stable data plus the function that finds it.
type Rule struct {
	// ID is stable, kebab-case, and never reused for another meaning.
	ID string
	// Severity is the default severity of its findings.
	Severity result.Severity
	// Summary says when it fires, in one sentence.
	Summary string
	// Remediation says how to fix it.
	Remediation string
	// Check finds the rule's issues.
	Check func(*Context) []Issue
	// Verdict marks the rules that judge whether the upgrade is held
	// (upgrade-not-held-olm-v0 and the bounded protocol search's
	// violations, protocolRules): the bundle's configuration as a whole on
	// a lifecycle manager, not one field of a manifest.
	Verdict bool
}

// Rules is the registry, in the order the first draft of the contract (SPEC.md section 6) listed the rules,
// then the verdict (upgrade-not-held-olm-v0 and the protocol search's
// violations, whose data is simulate's), followed by the bundle-format
// rules. It is built here, explicitly; there is no other place rules come
// from.
func Rules() []Rule {
	rules := []Rule{
		{
			ID:          bundle.CodeParse,
			Severity:    result.Error,
			Summary:     "A manifest is not valid YAML or JSON, is not a Kubernetes object, or does not decode into its type.",
			Remediation: "Fix the syntax at the reported line (run `yq . FILE` to see the parser's view); every manifest needs apiVersion and kind.",
			Check:       problems(bundle.CodeParse),
		},
		{
			ID:          "status-source-missing",
			Severity:    result.Info,
			Summary:     "The CSV declares no status source: the operator's upgrade readiness lives only in whatever it writes to its OperatorCondition (an error under --require-status-source).",
			Remediation: "Run `statuscheck generate -w --bridge IMAGE BUNDLE` to write the operatorframework.io/status-source annotation and the bridge that carries the CR's condition to OLM v0, which does not read the annotation itself.",
			Check:       checkMissing,
		},
		{
			ID:          "status-source-invalid",
			Severity:    result.Error,
			Summary:     "The status-source annotation is not a JSON object, lacks a required field, has an unknown field or a value out of range.",
			Remediation: `Write one JSON object: {"apiVersion":"GROUP/VERSION","kind":"KIND","name":"NAME"} plus the optional namespace, conditions, whenAbsent and handshake fields (docs/contract.md, "The CSV annotation").`,
			Check:       checkInvalid,
		},
		{
			ID:          "status-source-not-owned",
			Severity:    result.Error,
			Summary:     "The status source's kind is not among the CSV's spec.customresourcedefinitions.owned.",
			Remediation: "Add the CRD to spec.customresourcedefinitions.owned, or point the status source at a kind the operator owns.",
			Check:       checkNotOwned,
		},
		{
			ID:          "status-source-crd-missing",
			Severity:    result.Error,
			Summary:     "No CRD in the bundle defines the status source's group and kind.",
			Remediation: "Ship the CRD in the bundle's manifests/ (operator-sdk: `make bundle`), or fix apiVersion/kind in the annotation.",
			Check:       checkCRDMissing,
		},
		{
			ID:          "status-source-crd-invalid",
			Severity:    result.Error,
			Summary:     "The apiserver would refuse the status source's CRD (its own CRD validation: a schema that is not structural, list-map keys neither required nor defaulted, CEL rules that do not compile or cost too much, ...): nothing it defines can be read.",
			Remediation: "Fix each field the apiserver names (`kubectl apply --dry-run=server -f CRD` shows the same errors); controller-gen writes structural schemas.",
			Check:       checkCRDInvalid,
		},
		{
			ID:          "status-source-version-not-served",
			Severity:    result.Error,
			Summary:     "The CRD does not have, or does not serve, the status source's version.",
			Remediation: "Use a version the CRD serves in the annotation's apiVersion, or set served: true on that version.",
			Check:       checkVersionNotServed,
		},
		{
			ID:          "status-source-scope-mismatch",
			Severity:    result.Error,
			Summary:     "The annotation gives a namespace for a cluster-scoped kind.",
			Remediation: "Drop namespace for a cluster-scoped kind; leave it empty for a namespaced kind that lives in the operator's namespace.",
			Check:       checkScope,
		},
		{
			ID:          "status-source-namespace-pinned",
			Severity:    result.Warning,
			Summary:     "A namespaced status source names a namespace: installed in another namespace, the gate reads a CR that does not exist (and with whenAbsent: Allow is silently off).",
			Remediation: "Leave namespace out of the annotation: empty means the namespace the operator is installed in (`statuscheck generate` leaves it out unless --namespace is given).",
			Check:       checkNamespacePinned,
		},
		{
			ID:          "status-subresource-disabled",
			Severity:    result.Error,
			Summary:     "The CRD version has no status subresource, so a status write bumps metadata.generation and observedGeneration can never catch up.",
			Remediation: "Enable the status subresource (kubebuilder: // +kubebuilder:subresource:status; v1: versions[].subresources.status: {}; v1beta1: spec.subresources.status: {}).",
			Check:       checkSubresource,
		},
		{
			ID:          "conditions-schema-missing",
			Severity:    result.Error,
			Summary:     "A status write of status.conditions comes back without them: the apiserver prunes them (a warning when it keeps any value there, unknown fields being preserved: unverifiable).",
			Remediation: "Add status.conditions as a list of metav1.Condition (kubebuilder: Conditions []metav1.Condition `json:\"conditions,omitempty\"`).",
			Check:       checkConditionsSchema,
		},
		{
			ID:          "conditions-observedgeneration-missing",
			Severity:    result.Error,
			Summary:     "A status write comes back with neither the condition's observedGeneration nor status.observedGeneration (the apiserver prunes both), so an outdated condition cannot be told from a fresh one; also when only status.observedGeneration is kept, since OLM's gate compares the condition's own observedGeneration and would never open, which stops every upgrade (info with the bridge declared, which applies the strict policy and reads status.observedGeneration); a warning when the condition's observedGeneration is kept only because the CRD keeps every unknown field (spec.preserveUnknownFields, which a v1beta1 CRD defaults to true), which cannot be verified.",
			Remediation: "Use metav1.Condition, which has observedGeneration, and set it on every status write (status.observedGeneration alone satisfies only the strict policy).",
			Check:       checkObservedGeneration,
		},
		{
			ID:          "conditions-list-type",
			Severity:    result.Warning,
			Summary:     "The apiserver accepts two conditions of one type in one status (status.conditions is described, but not as x-kubernetes-list-type: map keyed by type; where it is not described at all, conditions-schema-missing is reported instead), and OLM reads only the first.",
			Remediation: "Mark the field // +listType=map and // +listMapKey=type (x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [type]).",
			Check:       checkListType,
		},
		{
			ID:          "status-write-rejected",
			Severity:    result.Error,
			Summary:     "The apiserver refuses the status write the gate depends on (each gated condition as metav1.Condition, True and then False, with observedGeneration), by the CRD's schema or CEL rules: the operator could never report Upgradeable.",
			Remediation: "Describe status.conditions as a list of metav1.Condition (kubebuilder: Conditions []metav1.Condition) and loosen any bound or x-kubernetes-validations rule that refuses a real condition.",
			Check:       checkStatusWriteRejected,
		},
		{
			ID:          "condition-type-spelling",
			Severity:    result.Warning,
			Summary:     "A condition type is a near miss of Upgradeable (Upgradable, upgradeable, ...), which OLM would never read.",
			Remediation: "Spell the condition type Upgradeable, exactly as OLM reads it.",
			Check:       checkSpelling,
		},
		{
			ID:          "initialization-resource-mismatch",
			Severity:    result.Warning,
			Summary:     "operatorframework.io/initialization-resource names another kind, name or namespace than the status source.",
			Remediation: "Make the status source the CR the console creates at install time, or update the initialization resource to match.",
			Check:       checkInitResource,
		},
		{
			ID:          "status-source-example-invalid",
			Severity:    result.Error,
			Summary:     "The apiserver refuses to create an example CR of the status source's kind (the CSV's initialization resource or any alm-examples entry of that kind; one finding per refused example), which is how the console creates the CR OLM must read.",
			Remediation: "Make the example valid for the CRD: the apiserver's message names the field.",
			Check:       checkExampleInvalid,
		},
		{
			ID:          "alm-examples-invalid",
			Severity:    result.Error,
			Summary:     "The CSV's alm-examples is not a JSON list of objects, as OLM's console and operator-sdk's validator parse it, so the console offers no example to create; an error when the status source's example would come from it (no initialization resource of its kind), a warning otherwise.",
			Remediation: "Make alm-examples one JSON array of CRs, [{\"apiVersion\": ..., \"kind\": ..., \"metadata\": {\"name\": ...}, \"spec\": {...}}]; the message names the line and column of the value where the JSON breaks.",
			Check:       checkALMExamples,
		},
		{
			ID:          "status-source-may-not-exist",
			Severity:    result.Warning,
			Summary:     "With whenAbsent Allow, the status source names a CR that nothing in the bundle shows is ever created (no initialization resource; no deployment of the operator that may create the kind and is given the name), such as an alm-examples sample: if that CR never exists, the gate never blocks.",
			Remediation: "Name the CR the operator or the console really creates: declare it as operatorframework.io/initialization-resource, or have the operator create it and set whenAbsent: Block (`statuscheck generate -w --when-absent Block`), which holds upgrades until it exists.",
			Check:       checkMayNotExist,
		},
		{
			ID:          "status-rbac-install-mode",
			Severity:    result.Error,
			Summary:     "The operator's permission to write the status source's <plural>/status is only in the install strategy's permissions, which OLM v0 makes Roles in the install and target namespaces and ClusterRoles only under AllNamespaces (docs/contract.md, \"Where the operator may write its CR\"), and an install mode the CSV supports leaves the status source out of reach: a cluster-scoped kind under OwnNamespace, SingleNamespace or MultiNamespace (an error), or a pinned namespace that only OwnNamespace can target (a warning).",
			Remediation: "Move the rule granting <plural>/status to clusterPermissions, or support only the install modes under which it reaches the CR (for a cluster-scoped kind, AllNamespaces); for a pinned namespace, leave the namespace out of the annotation.",
			Check:       checkInstallModeRBAC,
		},
		{
			ID:          "status-rbac-missing",
			Severity:    result.Error,
			Summary:     "No permission in the CSV's install strategy lets the operator update or patch <plural>/status of the status source's group.",
			Remediation: "Add a rule with apiGroups [GROUP], resources [PLURAL/status], verbs [get, update, patch] (kubebuilder: // +kubebuilder:rbac:groups=GROUP,resources=PLURAL/status,verbs=get;update;patch); clusterPermissions for a cluster-scoped kind.",
			Check:       checkRBAC,
		},
		{
			ID:          "handshake-request-not-observable",
			Severity:    result.Error,
			Summary:     "A RequestAck handshake requests through an annotation but has no ack.statusPath: an annotation does not bump generation, so nothing shows the operator saw the request.",
			Remediation: `Add "ack": {"statusPath": ".status.observedUpgradeRequest"} and have the operator echo the token it answered there, or request through a spec field (specPath).`,
			Check:       checkRequestObservable,
		},
		{
			ID:          "handshake-path-missing",
			Severity:    result.Error,
			Summary:     "The apiserver prunes (or refuses) a token written at the handshake's specPath or statusPath, or the schema types the field as neither integer nor string (the token's two types, decided from the schema), so the request or its acknowledgement never arrives.",
			Remediation: "Add a field of its own to the CRD's schema, a string or integer the operator reserves for the handshake (for the request: upgradeRequest in spec; for the acknowledgement: observedUpgradeRequest in status), and regenerate the CRD; never point the path at a field that already means something, which OLM's token would overwrite.",
			Check:       checkHandshakePaths,
		},
		{
			ID:          "handshake-request-not-reserved",
			Severity:    result.Error,
			Summary:     "A RequestAck handshake requests through a spec field that nothing shows is reserved for OLM's request: OLM overwrites it with its token, so a field that already means something (.spec.serviceAccountName, .spec.replicas) would be clobbered. A spec field counts as reserved when it is named upgradeRequest or the CRD schema's description of it says \"upgrade request\".",
			Remediation: "Add a field of its own to the CRD's spec schema, `upgradeRequest` (a string; kubebuilder: UpgradeRequest string `json:\"upgradeRequest,omitempty\"` with a doc comment saying it is OLM's upgrade request), which the operator only reads to answer, and point --request-spec-path at .spec.upgradeRequest.",
			Check:       checkRequestReserved,
		},
		{
			ID:          "bridge-container-missing",
			Severity:    result.Error,
			Summary:     "The CSV declares the bridge (annotation statuscheck.operatorframework.io/bridge: DEPLOYMENT/CONTAINER) but the install strategy has no such deployment or container, the container does not run `statuscheck bridge` (its command and args, with the image's entrypoint /usr/local/bin/statuscheck, do not make bridge the subcommand), its image is not an image reference (or is the IMAGE placeholder of a suggested command), the value does not parse, or there is no status-source annotation for the bridge to read.",
			Remediation: "Run `statuscheck generate --bridge IMAGE -w BUNDLE`, which adds the container, its RBAC and the declaration together; or fix the declaration to name the container that runs `statuscheck bridge`.",
			Check:       checkBridgeContainer,
		},
		{
			ID:          "bridge-rbac-missing",
			Severity:    result.Error,
			Summary:     "The declared bridge's service account lacks a permission the bridge needs: get, watch (patch under RequestAck) on the status source, by name; list and watch on CSVs under RequestAck; get on the running CSV when its container does not set STATUSCHECK_STATUS_SOURCE from the downward API; create on tokenreviews and subjectaccessreviews with --metrics-secure. OLM grants the OperatorCondition itself.",
			Remediation: "Run `statuscheck generate --bridge IMAGE -w BUNDLE`, which adds the missing rules to the deployment's service account, by name; clusterPermissions for a cluster-scoped kind or a pinned namespace, unless AllNamespaces is the only install mode (OLM then makes permissions ClusterRoles).",
			Check:       checkBridgeRBAC,
		},
		{
			ID:          "bridge-rbac-broad",
			Severity:    result.Warning,
			Summary:     "A rule of the declared bridge's service account grants the bridge more than it needs, as older `generate --bridge` wrote it: its verbs on the status source (only get, watch, patch) without resourceNames, or through clusterPermissions where a Role in the operator's namespace would do; or get on every CSV when the bridge reads the status source from the downward API and no CSV (no RequestAck). Rules with other verbs are the operator's and never reported.",
			Remediation: "Add resourceNames: [NAME] to the rule (the status source's name), move it from clusterPermissions to permissions for a namespaced kind in the operator's namespace, and drop the CSV rule unless the operator itself reads CSVs; `statuscheck generate --bridge` writes the narrow rules.",
			Check:       checkBridgeRBACBroad,
		},
		{
			ID:          "bridge-operatorcondition-handshake",
			Severity:    result.Error,
			Summary:     "The CSV declares the bridge and a status source with the OperatorCondition handshake, in which the operator writes the OperatorCondition's Upgradeable entry itself: the two writers overwrite each other and OLM reads whichever wrote last.",
			Remediation: "Use handshake None or RequestAck with the bridge (the operator then writes only its CR), or drop the bridge (its container and the statuscheck.operatorframework.io/bridge annotation) and keep the OperatorCondition handshake.",
			Check:       checkBridgeOneWriter,
		},
		{
			ID:          RuleNotHeldOLMv0,
			Severity:    result.Error,
			Summary:     "The CSV declares a status source, but on OLM v0, which gates a CSV's replacement on its OperatorCondition only and does not read the annotation, nothing writes the OperatorCondition from the CR: no bridge is declared and the handshake is not OperatorCondition, so OLM replaces the operator whatever the CR says. In JUnit, SARIF, scorecard and operator-sdk's output, OLM v0's verdict of no for any other reason (a status source that cannot work as declared, or warnings that put the gate in doubt) is reported under this rule too, with the verdict's reason.",
			Remediation: "Declare what carries the CR's condition to OLM: `statuscheck generate -w --bridge IMAGE BUNDLE` adds statuscheck bridge as a sidecar, or the operator writes its OperatorCondition itself (operator-lib's conditions) and `statuscheck generate -w --handshake OperatorCondition BUNDLE` declares it. For the verdict's other reasons, fix the findings it names.",
			Check:       checkNotHeldOLMv0,
			Verdict:     true,
		},
		{
			ID:          "upgrade-unverified",
			Severity:    result.Warning,
			Summary:     "Something writes the OperatorCondition from the CR (the bridge, or the operator), but the bounded protocol search could not model the bundle's configuration (no spec field a user could change, a CR the CRD refuses to create from the example), so nothing shows that OLM v0 holds the upgrade; the verdict says it is not held.",
			Remediation: "Read the search's reason in the message; `statuscheck simulate --explore --bundle BUNDLE` shows it in full. An example CR the CRD accepts (operatorframework.io/initialization-resource or alm-examples) and a spec field the CRD keeps let the model run.",
			Check:       checkUnverified,
			Verdict:     true,
		},
	}
	rules = append(rules, protocolRules()...)
	return append(rules, []Rule{
		{
			ID:       bundle.CodeLimit,
			Severity: result.Error,
			Summary: fmt.Sprintf("A manifest exceeds a documented limit (%d MiB, %d documents, %d levels of nesting, %d alias-expanded nodes) and was not read.",
				manifest.DefaultLimits.MaxFileSize>>20, manifest.DefaultLimits.MaxDocuments, manifest.DefaultLimits.MaxDepth, manifest.DefaultLimits.MaxAliasNodes),
			Remediation: "Split or shrink the manifest; no real bundle comes near these limits (etcd refuses objects over about 1.5 MiB).",
			Check:       problems(bundle.CodeLimit),
		},
		{
			ID:          bundle.CodeCSVMissing,
			Severity:    result.Error,
			Summary:     "The bundle has no ClusterServiceVersion (or no manifests at all).",
			Remediation: "Point statuscheck at a bundle root (manifests/ and metadata/) or its manifests directory, which holds exactly one CSV.",
			Check:       problems(bundle.CodeCSVMissing),
		},
		{
			ID:          bundle.CodeMultipleCSVs,
			Severity:    result.Error,
			Summary:     "The bundle holds more than one ClusterServiceVersion; a bundle is one operator version.",
			Remediation: "Keep one CSV per bundle; move other versions to their own bundle directories.",
			Check:       problems(bundle.CodeMultipleCSVs),
		},
		{
			ID:          bundle.CodeUnsupportedKind,
			Severity:    result.Error,
			Summary:     "A manifest has a kind operator-registry does not allow in a registry+v1 bundle (Deployment, Namespace, ...).",
			Remediation: "Move the object into the CSV (deployments, permissions) or out of the bundle; see operator-registry's supported resources.",
			Check:       problems(bundle.CodeUnsupportedKind),
		},
		{
			ID:          bundle.CodeMultiDocument,
			Severity:    result.Error,
			Summary:     "A manifest file holds more than one YAML document; OLM reads only the first.",
			Remediation: "Put every object in a file of its own.",
			Check:       problems(bundle.CodeMultiDocument),
		},
		{
			ID:          bundle.CodeMetadataMissing,
			Severity:    result.Warning,
			Summary:     "The bundle root has no metadata/annotations.yaml (fine for the old package-manifest layout, fatal for a bundle image).",
			Remediation: "Run `operator-sdk generate bundle` or `opm alpha bundle generate` to write metadata/annotations.yaml.",
			Check:       problems(bundle.CodeMetadataMissing),
		},
		{
			ID:          bundle.CodeMetadataInvalid,
			Severity:    result.Error,
			Summary:     "metadata/annotations.yaml lacks a required key or has a wrong value, by operator-registry's rules.",
			Remediation: "Set mediatype registry+v1, manifests manifests/, metadata metadata/, and non-empty package and channels annotations.",
			Check:       problems(bundle.CodeMetadataInvalid),
		},
		{
			ID:          bundle.CodeLayout,
			Severity:    result.Error,
			Summary:     "The manifests directory holds a subdirectory, a hidden file or a special file, which the bundle loaders reject.",
			Remediation: "Keep only manifest files directly in manifests/.",
			Check:       problems(bundle.CodeLayout),
		},
		{
			ID:          bundle.CodeSymlink,
			Severity:    result.Error,
			Summary:     "A symlink in the bundle points outside it (or nowhere); statuscheck does not follow it and a bundle image cannot carry it.",
			Remediation: "Replace the symlink with the file itself.",
			Check:       problems(bundle.CodeSymlink),
		},
	}...)
}

// problems returns a check that reports the loader's problems of one code.
func problems(code string) func(*Context) []Issue {
	return func(ctx *Context) []Issue {
		var out []Issue
		for _, p := range ctx.Bundle.Problems {
			if p.Code == code {
				out = append(out, Issue{Pos: p.Pos, Field: p.Field, Message: p.Message})
			}
		}
		return out
	}
}
