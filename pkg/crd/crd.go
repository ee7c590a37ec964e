// Package crd gives one view of a CustomResourceDefinition whether it was
// written as apiextensions.k8s.io/v1 or v1beta1, and keeps, for every fact it
// reports, the path of the field in the file it came from.
//
// A v1beta1 CRD is defaulted and converted to v1 with apiextensions-apiserver's
// own scheme, so spec.version, spec.subresources and spec.validation move into
// spec.versions[] exactly as the apiserver moves them.
package crd

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/manifest/typed"
)

// Kind is the kind of a CustomResourceDefinition.
const Kind = "CustomResourceDefinition"

// scheme knows apiextensions.k8s.io with its defaulting and conversion;
// built on first use, by the first v1beta1 CRD (a v1 CRD never needs it,
// nor does a command that reads no CRD).
var scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextinstall.Install(s)
	return s
})

// CRD is a decoded CustomResourceDefinition.
type CRD struct {
	// Doc is the document the CRD was read from.
	Doc *manifest.Document
	// APIVersion is the apiVersion it was written in.
	APIVersion string
	// V1 is the CRD as apiextensions.k8s.io/v1 (converted when written as
	// v1beta1).
	V1 *apiextv1.CustomResourceDefinition
	// V1beta1 is the CRD as written, when it was written as v1beta1.
	V1beta1 *apiextv1beta1.CustomResourceDefinition
}

// Decode decodes a CRD document of either API version.
func Decode(doc *manifest.Document) (*CRD, error) {
	obj := doc.Object()
	apiVersion, _ := obj["apiVersion"].(string)
	c := &CRD{Doc: doc, APIVersion: apiVersion}
	switch apiVersion {
	case apiextv1.SchemeGroupVersion.String():
		c.V1 = &apiextv1.CustomResourceDefinition{}
		if err := typed.Decode(doc, c.V1); err != nil {
			return nil, err
		}
	case apiextv1beta1.SchemeGroupVersion.String():
		c.V1beta1 = &apiextv1beta1.CustomResourceDefinition{}
		if err := typed.Decode(doc, c.V1beta1); err != nil {
			return nil, err
		}
		defaulted := c.V1beta1.DeepCopy()
		s := scheme()
		s.Default(defaulted)
		internal := &apiext.CustomResourceDefinition{}
		if err := s.Convert(defaulted, internal, nil); err != nil {
			return nil, fmt.Errorf("converting v1beta1 CustomResourceDefinition: %w", err)
		}
		c.V1 = &apiextv1.CustomResourceDefinition{}
		if err := s.Convert(internal, c.V1, nil); err != nil {
			return nil, fmt.Errorf("converting v1beta1 CustomResourceDefinition to v1: %w", err)
		}
	default:
		return nil, fmt.Errorf("unsupported CustomResourceDefinition apiVersion %q (want apiextensions.k8s.io/v1 or v1beta1)", apiVersion)
	}
	return c, nil
}

// DecodeAll decodes the CRD documents among docs, skipping the others.
func DecodeAll(docs []*manifest.Document) ([]*CRD, error) {
	var out []*CRD
	for _, d := range docs {
		if k, _ := d.Object()["kind"].(string); k != Kind {
			continue
		}
		c, err := Decode(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Pos(), err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Group is spec.group.
func (c *CRD) Group() string { return c.V1.Spec.Group }

// Kind is spec.names.kind.
func (c *CRD) Kind() string { return c.V1.Spec.Names.Kind }

// Plural is spec.names.plural.
func (c *CRD) Plural() string { return c.V1.Spec.Names.Plural }

// Namespaced reports whether the scope is Namespaced.
func (c *CRD) Namespaced() bool { return c.V1.Spec.Scope != apiextv1.ClusterScoped }

// Name is metadata.name.
func (c *CRD) Name() string { return c.V1.Name }

// Version is one version of the CRD with the source paths of its parts.
type Version struct {
	Name    string
	Served  bool
	Storage bool
	// StatusSubresource reports whether /status is a subresource.
	StatusSubresource bool
	// Schema is the version's openAPIV3Schema, nil when there is none.
	Schema *apiextv1.JSONSchemaProps
	// Path is where the version is declared in the source.
	Path manifest.Path
	// SubresourcesPath is where the subresources apply from (or would be
	// written): spec.versions[i].subresources, or spec.subresources in a
	// v1beta1 CRD that uses the top-level field.
	SubresourcesPath manifest.Path
	// SchemaPath is where the openAPIV3Schema is (or would be) in the source.
	SchemaPath manifest.Path
}

// Versions lists the versions in declaration order.
func (c *CRD) Versions() []Version {
	out := make([]Version, 0, len(c.V1.Spec.Versions))
	for i, v := range c.V1.Spec.Versions {
		ver := Version{
			Name:              v.Name,
			Served:            v.Served,
			Storage:           v.Storage,
			StatusSubresource: v.Subresources != nil && v.Subresources.Status != nil,
		}
		if v.Schema != nil {
			ver.Schema = v.Schema.OpenAPIV3Schema
		}
		ver.Path, ver.SubresourcesPath, ver.SchemaPath = c.sourcePaths(i)
		out = append(out, ver)
	}
	return out
}

// Version returns the named version, or nil.
func (c *CRD) Version(name string) *Version {
	for _, v := range c.Versions() {
		if v.Name == name {
			return &v
		}
	}
	return nil
}

func (c *CRD) sourcePaths(i int) (ver, sub, schema manifest.Path) {
	spec := manifest.NewPath("spec")
	if c.V1beta1 == nil {
		ver = spec.Child("versions").Index(i)
		return ver, ver.Child("subresources"), ver.Child("schema", "openAPIV3Schema")
	}
	in := c.V1beta1.Spec
	if len(in.Versions) == 0 {
		ver = spec.Child("version")
	} else {
		ver = spec.Child("versions").Index(i)
	}
	switch {
	case i < len(in.Versions) && in.Versions[i].Subresources != nil:
		sub = ver.Child("subresources")
	default:
		sub = spec.Child("subresources")
	}
	switch {
	case i < len(in.Versions) && in.Versions[i].Schema != nil:
		schema = ver.Child("schema", "openAPIV3Schema")
	default:
		schema = spec.Child("validation", "openAPIV3Schema")
	}
	return ver, sub, schema
}

// TypeAt reads the schema's type of a field path of the version's objects
// (["spec", "upgradeRequest"]): "int-or-string" for
// x-kubernetes-int-or-string, "" where the schema leaves the value untyped
// (no schema, x-kubernetes-preserve-unknown-fields, additionalProperties:
// true). declared is false when the schema has no such field, which the
// apiserver prunes.
func (v *Version) TypeAt(path []string) (typ string, declared bool) {
	s := v.Schema
	if s == nil {
		return "", true
	}
	for _, f := range path {
		if p, ok := s.Properties[f]; ok {
			s = &p
			continue
		}
		switch ap := s.AdditionalProperties; {
		case ap != nil && ap.Schema != nil:
			s = ap.Schema
			continue
		case ap != nil && ap.Allows, s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
			return "", true
		}
		return "", false
	}
	if s.XIntOrString {
		return "int-or-string", true
	}
	return s.Type, true
}

// ReservedRequestName is the name of the spec field statuscheck suggests
// for OLM's RequestAck request, and one of the two ways a field is known
// to be reserved for it (RequestReserved).
const ReservedRequestName = "upgradeRequest"

// RequestReserved reports whether a spec field (["spec", "upgradeRequest"])
// is one the operator reserves for OLM's RequestAck request, which OLM
// overwrites with its token: its name is upgradeRequest, or the schema's
// description of it says "upgrade request" (any case; kubebuilder copies a
// Go field's doc comment there). Any other field may already mean
// something (a ServiceAccount's name, a replica count) that OLM's token
// would overwrite; the schema cannot say more.
func (v *Version) RequestReserved(path []string) bool {
	if len(path) == 0 {
		return false
	}
	if path[len(path)-1] == ReservedRequestName {
		return true
	}
	s := v.Schema
	for _, f := range path {
		if s == nil {
			return false
		}
		p, ok := s.Properties[f]
		if !ok {
			return false
		}
		s = &p
	}
	d := strings.ToLower(s.Description)
	return strings.Contains(d, "upgrade request") || strings.Contains(d, strings.ToLower(ReservedRequestName))
}

// TokenTypeError is a handshake token field the schema types as neither
// integer nor string.
type TokenTypeError struct {
	// Field is the handshake's field ("request.specPath", "ack.statusPath"),
	// Path its value (".spec.upgradeRequest") and Type the schema's type.
	Field, Path, Type string
	// Schema is the field path in the object the schema describes.
	Schema []string
}

func (e *TokenTypeError) Error() string {
	return fmt.Sprintf("the schema types %s (handshake.%s) as %s; the handshake's token is an increasing count, written as an integer or a string", e.Path, e.Field, e.Type)
}

// JoinTokenTypeErrors is HandshakeTokens' errors as one error, nil for
// none.
func JoinTokenTypeErrors(typeErrs []*TokenTypeError) error {
	errs := make([]error, len(typeErrs))
	for i, e := range typeErrs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// HandshakeTokens decides the JSON type of src's RequestAck token from the
// version's schema (docs/contract.md section 6): integer where the schema
// says integer, string where it says string or int-or-string, leaves the
// field untyped or does not declare it (the probes report a pruned field);
// an annotation request is a string. Any other type is a *TokenTypeError,
// one per field; its side stays a string.
func (v *Version) HandshakeTokens(src *v1alpha1.StatusSource) (contract.Tokens, []*TokenTypeError) {
	t := contract.Tokens{Request: contract.TokenString, Ack: contract.TokenString}
	var errs []*TokenTypeError
	decide := func(field, p string) contract.TokenType {
		path := v1alpha1.FieldPath(p)
		switch typ, _ := v.TypeAt(path); typ {
		case "integer":
			return contract.TokenInteger
		case "string", "int-or-string", "":
			return contract.TokenString
		default:
			errs = append(errs, &TokenTypeError{Field: field, Path: p, Type: typ, Schema: path})
			return contract.TokenString
		}
	}
	if r := src.Request(); r != nil && r.SpecPath != "" {
		t.Request = decide("request.specPath", r.SpecPath)
	}
	if src.AckPath() != nil {
		t.Ack = decide("ack.statusPath", src.Handshake.Ack.StatusPath)
	}
	return t, errs
}

// ServedVersion is the version of a kind as an apiserver serves it, read
// from its OpenAPI v3 discovery document (/openapi/v3/apis/GROUP/VERSION,
// doc): the component schema whose x-kubernetes-group-version-kind names
// gvk, decoded as the CRD's openAPIV3Schema it was published from, so
// that TypeAt and HandshakeTokens decide on it as they do on a CRD. Only
// Name, Served and Schema are set.
func ServedVersion(doc []byte, gvk schema.GroupVersionKind) (*Version, error) {
	var d struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("reading the OpenAPI v3 document of %s: %w", gvk.GroupVersion(), err)
	}
	for name, raw := range d.Components.Schemas {
		var kinds struct {
			GVK []struct{ Group, Version, Kind string } `json:"x-kubernetes-group-version-kind"`
		}
		if err := json.Unmarshal(raw, &kinds); err != nil {
			return nil, fmt.Errorf("reading component %s of the OpenAPI v3 document of %s: %w", name, gvk.GroupVersion(), err)
		}
		for _, k := range kinds.GVK {
			if k.Group != gvk.Group || k.Version != gvk.Version || k.Kind != gvk.Kind {
				continue
			}
			s := &apiextv1.JSONSchemaProps{}
			if err := json.Unmarshal(raw, s); err != nil {
				return nil, fmt.Errorf("reading the schema of %s (component %s): %w", gvk, name, err)
			}
			return &Version{Name: gvk.Version, Served: true, Schema: s}, nil
		}
	}
	return nil, fmt.Errorf("the OpenAPI v3 document of %s has no schema for kind %s", gvk.GroupVersion(), gvk.Kind)
}
