package apiserver

import (
	"encoding/json"

	apiextinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// Values is the part of a version's schema where the apiserver looks at a
// string value only twice: its own schema's checks, each on that value
// alone (type, enum, pattern, length, format), and equality with the
// value at the same place in another object or another item of the same
// list. Two writes whose strings at such places are alike in both ways
// (each valid by its own schema, the same pattern of equal and different
// values place by place) get the same answer, with the values moved along:
// the apiserver copies values from place to place (the status strategy
// keeps the old status or spec, merging a patch), never makes one from
// another. simulate.Memo reuses answers so.
//
// Where the claim comes from, in the apiextensions-apiserver v0.36 and
// kube-openapi this module builds with:
//   - validation: kube-openapi's validate.SchemaValidator runs a leaf's
//     type, format, string and enum validators on the leaf's value alone;
//     ratcheting (validation.ratchetingValueValidator, cel/common
//     CorrelatedObject) compares old and new by equality, correlating map
//     list items by their keys' values;
//   - the strategy (pkg/registry/customresource: PrepareForUpdate,
//     Validate/ValidateUpdate): generation moves on
//     apiequality.Semantic.DeepEqual of everything but metadata, which for
//     decoded JSON is equality of values; list-type map and set checks
//     (structurallisttype.ValidateListSetsAndMaps) compare keys and items
//     by equality;
//   - decoding: pruning and null dropping look at keys and nulls, not at
//     strings; defaulting writes a default where a value is absent, so a
//     place under a default is left out.
//
// Left out, so that nothing else can look at a value: the whole version
// when it has a scale subresource (ValidateScaleSpec/Status read values at
// its paths), no structural schema, or spec.preserveUnknownFields;
// metadata, apiVersion and kind (ObjectMeta and type validation read
// them); everything under a CEL rule (a rule reads its node's subtree,
// self and oldSelf, and may compare, measure or parse any value there:
// pkg/apiserver/schema/cel Validator evaluates a node's rules on that
// node's value), allOf/anyOf/oneOf/not, x-kubernetes-embedded-resource,
// x-kubernetes-int-or-string or a non-empty default; places with no
// schema (kept unknown fields); values that are not strings. Outside the
// rules' subtrees a value still decides whether CEL runs at all
// (customresourceStrategy skips it after a blocking error), but only by
// its validity, which the memo's question keeps.
type Values struct {
	props      map[string]*Values
	items      *Values
	additional *Values
	leaf       bool
	// check is the leaf's own schema's validator (nil: a string is all it
	// asks for), built as the apiserver builds one; format is the format
	// of a leaf that asks for nothing else.
	check  *validate.SchemaValidator
	format string
}

// Values is the version's places of such string values; nil when there
// are none or the version is left out as a whole. It is built on the
// first call (a validator for each checked leaf), which validate never
// makes.
func (r *Resource) Values() *Values {
	r.valuesOnce.Do(func() {
		if r.structural != nil && !r.PreserveUnknownFields {
			// NewResource converted the whole schema and built its
			// validators, so no leaf's can fail; if one did, the version
			// would only be left out (the memo would be slower, not wrong).
			if v, err := buildValues(r.Schema, r.scale); err == nil {
				r.values = v
			}
		}
	})
	return r.values
}

// Child is the node of an object's property key (nil: not such a place).
func (v *Values) Child(key string) *Values {
	if v == nil {
		return nil
	}
	if c, ok := v.props[key]; ok {
		return c
	}
	return v.additional
}

// Item is the node of a list's items.
func (v *Values) Item() *Values {
	if v == nil {
		return nil
	}
	return v.items
}

// Leaf says the node is a string's place.
func (v *Values) Leaf() bool { return v != nil && v.leaf }

// Valid runs the leaf's own schema's validation on s: the apiserver's
// kube-openapi validator on the schema as the apiserver converts it (its
// stripping of formats it does not support), with its format registry
// (apiextensions-apiserver validation.NewSchemaValidatorFromOpenAPI; with
// no old value to ratchet against, ratcheting validation is this).
func (v *Values) Valid(s string) bool {
	switch {
	case v.format != "":
		// What the validator would do: its formatValidator applies to a
		// string when the registry knows the format, and FormatOf asks the
		// registry (kube-openapi validate/formats.go, values.go); its
		// type validator takes any string, and nothing else applies.
		return strfmt.Default.Validates(v.format, s)
	case v.check != nil:
		return v.check.Validate(s).IsValid()
	}
	return true
}

// Checked says Valid checks something (it is not always true).
func (v *Values) Checked() bool { return v.check != nil || v.format != "" }

// FormatOnly says Valid checks only a format, which costs no more than
// remembering its answer would.
func (v *Values) FormatOnly() bool { return v.format != "" }

func buildValues(s *apiextv1.JSONSchemaProps, scale bool) (*Values, error) {
	if s == nil || scale {
		return nil, nil
	}
	root, err := valuesOf(s)
	if err != nil || root == nil {
		return nil, err
	}
	for _, k := range []string{"metadata", "apiVersion", "kind"} {
		delete(root.props, k)
	}
	root.additional = nil
	if len(root.props) == 0 {
		return nil, nil
	}
	return root, nil
}

// valuesOf is the node of schema s, nil where nothing under it is such a
// place.
func valuesOf(s *apiextv1.JSONSchemaProps) (*Values, error) {
	if ruled(s) || s.XEmbeddedResource || s.XIntOrString || !emptyDefault(s.Default) {
		return nil, nil
	}
	switch s.Type {
	case "string":
		leaf := &Values{leaf: true}
		if s.Format != "" || len(s.Enum) > 0 || s.Pattern != "" || s.MaxLength != nil || s.MinLength != nil {
			own := s.DeepCopy()
			own.Description = ""
			internal := &apiextinternal.JSONSchemaProps{}
			if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(own, internal, nil); err != nil {
				return nil, err
			}
			_, openapi, err := apiservervalidation.NewSchemaValidator(internal)
			if err != nil {
				return nil, err
			}
			switch {
			case len(openapi.Enum) > 0 || openapi.Pattern != "" || openapi.MaxLength != nil || openapi.MinLength != nil:
				leaf.check = validate.NewSchemaValidator(openapi, nil, "", strfmt.Default)
			case openapi.Format != "" && strfmt.Default.ContainsName(openapi.Format):
				leaf.format = openapi.Format
			}
		}
		return leaf, nil
	case "object":
		n := &Values{}
		for k := range s.Properties {
			p := s.Properties[k]
			c, err := valuesOf(&p)
			if err != nil {
				return nil, err
			}
			if c != nil {
				if n.props == nil {
					n.props = map[string]*Values{}
				}
				n.props[k] = c
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			c, err := valuesOf(s.AdditionalProperties.Schema)
			if err != nil {
				return nil, err
			}
			n.additional = c
		}
		if n.props == nil && n.additional == nil {
			return nil, nil
		}
		return n, nil
	case "array":
		if s.Items == nil || s.Items.Schema == nil {
			return nil, nil
		}
		c, err := valuesOf(s.Items.Schema)
		if err != nil || c == nil {
			return nil, err
		}
		return &Values{items: c}, nil
	}
	return nil, nil
}

// emptyDefault: no default, or an empty object or list, which holds no
// value.
func emptyDefault(d *apiextv1.JSON) bool {
	if d == nil || len(d.Raw) == 0 {
		return true
	}
	var v interface{}
	if err := json.Unmarshal(d.Raw, &v); err != nil {
		return false
	}
	switch v := v.(type) {
	case map[string]interface{}:
		return len(v) == 0
	case []interface{}:
		return len(v) == 0
	}
	return false
}
