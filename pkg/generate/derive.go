package generate

import (
	"fmt"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/crd"
)

// Values are what the user asked for on the command line; nil (or a nil
// slice) means the flag was not given.
type Values struct {
	APIVersion, Kind, Name, Namespace *string
	Conditions                        []string
	WhenAbsent                        *string
	Handshake                         *string
	RequestSpecPath                   *string
	RequestAnnotation                 *string
	AckStatusPath                     *string
}

func (v Values) identityGiven() bool {
	return v.APIVersion != nil || v.Kind != nil || v.Name != nil || v.Namespace != nil
}

// AmbiguousError says the status source cannot be derived, and what it
// could be.
type AmbiguousError struct {
	Reason     string
	Candidates []string
}

func (e *AmbiguousError) Error() string {
	msg := e.Reason
	if len(e.Candidates) > 0 {
		msg += "; candidates:\n  " + strings.Join(e.Candidates, "\n  ")
	}
	return msg
}

// Derivation is a status source and where its parts came from.
type Derivation struct {
	Source *v1alpha1.StatusSource
	// From says where the CR's identity came from, for the user.
	From string
	// Notes are things the user should know about the derivation.
	Notes []string
}

func findCRD(crds []*crd.CRD, group, kind string) *crd.CRD {
	for _, c := range crds {
		if c.Group() == group && c.Kind() == kind {
			return c
		}
	}
	return nil
}

// Derive works out the status source for a CSV. Flags win; what they leave
// open comes from the CSV's current annotation when it is valid, else from
// operatorframework.io/initialization-resource when that names an owned CR,
// else from the only owned CRD and its alm-examples entry. When that still
// leaves the CR unknown, the error lists the candidates.
func Derive(csv *operatorsv1alpha1.ClusterServiceVersion, crds []*crd.CRD, v Values) (*Derivation, error) {
	d := &Derivation{Source: &v1alpha1.StatusSource{}}
	src := d.Source
	if raw, ok := csv.Annotations[v1alpha1.AnnotationKey]; ok {
		if cur, problems := contract.Parse(raw); cur != nil && len(problems) == 0 {
			*src = *cur
			d.From = "the existing annotation"
		} else if len(problems) > 0 {
			d.Notes = append(d.Notes, fmt.Sprintf("the existing annotation is not valid (%s); it is replaced, not amended", problems[0]))
		}
	}
	// Flags naming another kind start from scratch: the old name,
	// namespace and handshake belong to the old kind.
	if d.From != "" && (v.Kind != nil && *v.Kind != src.Kind ||
		v.APIVersion != nil && groupOf(*v.APIVersion) != src.GroupVersion().Group) {
		*src = v1alpha1.StatusSource{}
		d.From = ""
	}
	if d.From == "" {
		if err := deriveIdentity(csv, crds, v, d); err != nil {
			return nil, err
		}
	}
	set := func(dst *string, val *string) {
		if val != nil {
			*dst = *val
		}
	}
	set(&src.APIVersion, v.APIVersion)
	set(&src.Kind, v.Kind)
	set(&src.Name, v.Name)
	set(&src.Namespace, v.Namespace)
	if v.Conditions != nil {
		src.Conditions = v.Conditions
		if len(v.Conditions) == 1 && v.Conditions[0] == contract.ConditionUpgradeable {
			src.Conditions = nil // the default, left implicit
		}
	}
	if v.WhenAbsent != nil {
		src.WhenAbsent = v1alpha1.WhenAbsent(*v.WhenAbsent)
		if src.WhenAbsent == v1alpha1.WhenAbsentAllow {
			src.WhenAbsent = "" // the default
		}
	}
	applyHandshake(src, v)
	if c := findCRD(crds, src.GroupVersion().Group, src.Kind); c != nil && !c.Namespaced() && v.Namespace == nil {
		src.Namespace = ""
	}
	if src.APIVersion == "" || src.Kind == "" || src.Name == "" {
		return nil, missing(csv, crds, src)
	}
	if d.From == "" {
		d.From = "the command line"
	}
	return d, nil
}

func groupOf(apiVersion string) string { return schema.FromAPIVersionAndKind(apiVersion, "").Group }

func applyHandshake(src *v1alpha1.StatusSource, v Values) {
	if v.Handshake == nil && v.RequestSpecPath == nil && v.RequestAnnotation == nil && v.AckStatusPath == nil {
		return
	}
	h := src.Handshake
	if h == nil {
		h = &v1alpha1.Handshake{Mode: v1alpha1.HandshakeNone}
	}
	switch {
	case v.Handshake != nil:
		h.Mode = v1alpha1.HandshakeMode(*v.Handshake)
		if h.Mode != v1alpha1.HandshakeRequestAck {
			h.Request, h.Ack = nil, nil
		}
	default:
		// --request-spec-path, --request-annotation and --ack-status-path
		// only make sense in a RequestAck handshake: they imply it.
		h.Mode = v1alpha1.HandshakeRequestAck
	}
	if v.RequestSpecPath != nil || v.RequestAnnotation != nil {
		h.Request = &v1alpha1.HandshakeRequest{}
		if v.RequestSpecPath != nil {
			h.Request.SpecPath = *v.RequestSpecPath
		}
		if v.RequestAnnotation != nil {
			h.Request.Annotation = *v.RequestAnnotation
		}
	}
	if v.AckStatusPath != nil {
		h.Ack = &v1alpha1.HandshakeAck{StatusPath: *v.AckStatusPath}
	}
	src.Handshake = h
	if h.Mode == v1alpha1.HandshakeNone && h.Request == nil && h.Ack == nil && v.Handshake != nil {
		src.Handshake = nil // {"mode":"None"} is the default
	}
}

func deriveIdentity(csv *operatorsv1alpha1.ClusterServiceVersion, crds []*crd.CRD, v Values, d *Derivation) error {
	src := d.Source
	owned := bundle.OwnedKinds(csv)
	isOwned := func(group, kind string) bool {
		for _, o := range owned {
			if o.Group == group && o.Kind == kind {
				return true
			}
		}
		return false
	}
	if !v.identityGiven() || v.Kind == nil && v.APIVersion == nil {
		if raw, ok := csv.Annotations[v1alpha1.InitializationResourceKey]; ok {
			if e, err := contract.ParseObjectRef(raw); err == nil && e.Kind != "" && isOwned(e.Group, e.Kind) {
				src.APIVersion, src.Kind, src.Name = e.APIVersion(), e.Kind, e.Name
				d.From = "the initialization resource"
				d.unpinned(e.Namespace, "the initialization resource", v)
				return nil
			}
		}
	}
	// Which kind: the flags', else the only owned one.
	var group, kind string
	switch {
	case v.Kind != nil:
		kind = *v.Kind
		if v.APIVersion != nil {
			// A kind the CSV does not own is refused the same way with or
			// without --api-version: OLM never gives the operator's CR of
			// another operator's kind to this one (status-source-not-owned).
			group = groupOf(*v.APIVersion)
			if len(owned) > 0 && !isOwned(group, kind) {
				return notOwned(csv, crds, kind+" in group "+group, owned)
			}
		} else {
			for _, o := range owned {
				if o.Kind == kind {
					group = o.Group
				}
			}
			if group == "" {
				return notOwned(csv, crds, kind, owned)
			}
		}
	case v.APIVersion != nil:
		group = groupOf(*v.APIVersion)
		var kinds []bundle.OwnedKind
		for _, o := range owned {
			if o.Group == group {
				kinds = append(kinds, o)
			}
		}
		if len(kinds) != 1 {
			return &AmbiguousError{Reason: fmt.Sprintf("--api-version %s matches %d owned kinds; pass --kind", *v.APIVersion, len(kinds)), Candidates: describeOwned(csv, crds, kinds)}
		}
		kind = kinds[0].Kind
	case len(owned) == 1:
		group, kind = owned[0].Group, owned[0].Kind
	case len(owned) == 0:
		return &AmbiguousError{Reason: "the CSV owns no CRD and has no initialization resource, so there is no status source to derive; pass --api-version, --kind and --name"}
	default:
		return &AmbiguousError{Reason: fmt.Sprintf("the CSV owns %d kinds and no initialization resource names one of them; pass --kind (and --name)", len(owned)), Candidates: describeOwned(csv, crds, owned)}
	}
	src.Kind = kind
	// The version and name: from the kind's alm-examples entry.
	var examples []contract.ObjectRef
	for _, e := range bundle.ExampleRefs(csv) {
		if e.Kind == kind && (group == "" || e.Group == group) {
			examples = append(examples, e)
		}
	}
	version := ""
	for _, o := range owned {
		if o.Group == group && o.Kind == kind {
			version = storedVersion(crds, o)
			break
		}
	}
	d.From = "the only owned CRD"
	if v.Kind != nil || v.APIVersion != nil {
		d.From = "the command line"
	}
	switch {
	case len(examples) == 1:
		e := examples[0]
		if v.Name == nil && e.Name != "" && !initializes(csv, e) {
			// Issue 27, item 9: a sample's name is not a derivation. The
			// gate reads exactly the CR it names, and with whenAbsent Allow
			// a CR that never exists is a gate that never blocks.
			return &AmbiguousError{Reason: fmt.Sprintf("the only name at hand for the %s CR is %q, alm-examples' sample for the console, which nothing shows the operator or the console creates (no initialization resource names it); the gate reads exactly the CR it is given, and one that never exists never blocks an upgrade; pass --name with the name of the CR the operator keeps (this one, if it is that)", kind, e.Name),
				Candidates: []string{fmt.Sprintf("--name %s (alm-examples: %s %s)", e.Name, e.APIVersion(), e.Kind)}}
		}
		group, version = e.Group, e.Version
		src.Name = e.Name
		d.From += " and its alm-examples entry"
		d.unpinned(e.Namespace, "its alm-examples sample", v)
	case len(examples) > 1 && v.Name == nil:
		var names []string
		for _, e := range examples {
			names = append(names, fmt.Sprintf("--name %s (alm-examples: %s %s)", e.Name, e.APIVersion(), e.Kind))
		}
		return &AmbiguousError{Reason: fmt.Sprintf("alm-examples has %d %s examples; pass --name", len(examples), kind), Candidates: names}
	}
	if group != "" && version != "" {
		src.APIVersion = group + "/" + version
	}
	return nil
}

// initializes says whether the CSV's initialization resource is the CR e
// (then its name is the one the console creates, not a sample).
func initializes(csv *operatorsv1alpha1.ClusterServiceVersion, e contract.ObjectRef) bool {
	raw, ok := csv.Annotations[v1alpha1.InitializationResourceKey]
	if !ok {
		return false
	}
	ir, err := contract.ParseObjectRef(raw)
	return err == nil && ir.Kind == e.Kind && ir.Group == e.Group && ir.Name == e.Name
}

// unpinned notes a namespace a derivation leaves out: the annotation's
// namespace, when set, is where the gate looks wherever the operator is
// installed, so generate only writes one when --namespace asks for it.
func (d *Derivation) unpinned(ns, where string, v Values) {
	if ns == "" || v.Namespace != nil {
		return
	}
	d.Notes = append(d.Notes, fmt.Sprintf("%s is in namespace %q; the annotation leaves the namespace out, so the gate reads the CR in the namespace the operator is installed in, which is %q when the operator is installed there (pinning it with --namespace would make the gate read a CR that does not exist wherever else it is installed: status-source-namespace-pinned)", where, ns, ns))
}

// notOwned is the error for --kind naming no owned kind (with or without
// --api-version): with the owned kind it probably means.
func notOwned(csv *operatorsv1alpha1.ClusterServiceVersion, crds []*crd.CRD, kind string, owned []bundle.OwnedKind) error {
	reason := fmt.Sprintf("--kind %s is not an owned kind of the CSV (status-source-not-owned: add its CRD to spec.customresourcedefinitions.owned, or pick one it owns)", kind)
	for _, o := range owned {
		if strings.EqualFold(o.Kind, kind) {
			reason += fmt.Sprintf("; did you mean %s?", o.Kind)
			break
		}
	}
	if len(owned) == 0 {
		reason += " (it owns none); pass --api-version too"
	}
	return &AmbiguousError{Reason: reason, Candidates: describeOwned(csv, crds, owned)}
}

// storedVersion is the version Derive takes for owned kind o when no
// alm-examples entry gives one: its CRD's storage version, else the first
// version the CSV lists for it.
func storedVersion(crds []*crd.CRD, o bundle.OwnedKind) string {
	if c := findCRD(crds, o.Group, o.Kind); c != nil {
		for _, ver := range c.Versions() {
			if ver.Storage {
				return ver.Name
			}
		}
	}
	return o.Versions[0]
}

// describeOwned lists a command line for each owned kind, with the
// version and name Derive would take: the kind's alm-examples entry's,
// else its stored version (a CSV often lists a deprecated version
// first).
func describeOwned(csv *operatorsv1alpha1.ClusterServiceVersion, crds []*crd.CRD, kinds []bundle.OwnedKind) []string {
	examples := bundle.ExampleRefs(csv)
	var out []string
	for _, o := range kinds {
		version, name := storedVersion(crds, o), ""
		for _, e := range examples {
			if e.Kind == o.Kind && e.Group == o.Group && e.Name != "" {
				version, name = e.Version, e.Name
				break
			}
		}
		line := fmt.Sprintf("--kind %s --api-version %s/%s", o.Kind, o.Group, version)
		if name != "" {
			line += " --name " + name
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

func missing(csv *operatorsv1alpha1.ClusterServiceVersion, crds []*crd.CRD, src *v1alpha1.StatusSource) error {
	var need []string
	if src.APIVersion == "" {
		need = append(need, "--api-version")
	}
	if src.Kind == "" {
		need = append(need, "--kind")
	}
	if src.Name == "" {
		need = append(need, "--name")
	}
	reason := fmt.Sprintf("cannot derive the status source's %s; pass %s", strings.Join(need, ", "), strings.Join(need, " and "))
	if src.Kind != "" && src.Name == "" {
		reason = fmt.Sprintf("no initialization resource or alm-examples entry names the %s CR; pass --name", src.Kind)
		if err := bundle.ExamplesError(csv); err != nil {
			// Issue 27, item 10: not a missing entry, an unreadable list.
			reason = fmt.Sprintf("no initialization resource names the %s CR, and the CSV's alm-examples, where its example would be, is %v; fix alm-examples, or pass --name", src.Kind, err)
		}
	}
	return &AmbiguousError{Reason: reason, Candidates: describeOwned(csv, crds, bundle.OwnedKinds(csv))}
}
