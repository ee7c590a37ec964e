package bundle

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// FuzzLoad puts arbitrary bytes into a bundle beside the good CSV and
// loads it: nothing may panic, every problem must name a file inside the
// bundle, and the good CSV must still be found unless the fuzzed file is a
// second CSV.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {group: a.io, names: {kind: A}, versions: [{name: v1, served: true}]}\n",
		"apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nspec: {group: a.io, version: v1, subresources: {status: {}}}\n",
		"kind: ClusterServiceVersion\napiVersion: operators.coreos.com/v1alpha1\nmetadata: {name: two}\n",
		"{\"apiVersion\": \"v1\", \"kind\": \"Secret\"}", "\x00\x01", "a: &a [*a]", "---\n---\n", "- 1\n- 2\n",
	} {
		f.Add([]byte(s))
	}
	csv, err := os.ReadFile(filepath.Join(good, csvName))
	if err != nil {
		f.Fatal(err)
	}
	lim := manifest.Limits{MaxFileSize: 1 << 16, MaxDocuments: 50, MaxDepth: 64, MaxAliasNodes: 10_000}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		m := filepath.Join(dir, "manifests")
		if err := os.MkdirAll(m, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(m, "a.clusterserviceversion.yaml"), csv, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(m, "fuzzed.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Load(dir, Options{Limits: &lim})
		if err != nil {
			t.Fatalf("load failed: %v", err)
		}
		for _, p := range b.Problems {
			if !strings.HasPrefix(p.Pos.File, dir) {
				t.Fatalf("problem without a file in the bundle: %+v", p)
			}
			if p.Message == "" {
				t.Fatalf("problem without a message: %+v", p)
			}
		}
		if b.CSV() == nil {
			t.Fatalf("the good CSV was lost")
		}
	})
}

// FuzzExamples: alm-examples and the initialization resource decode as
// the console sends them to the apiserver (JSON.parse, JSON.stringify),
// and as the apiserver decodes the body, whatever the annotation holds:
// Examples never panics; a JSON value keeps every number's value as a
// double, as JSON.parse reads it; and a whole number the console writes
// as an integer, and which fits one, is an int64, never a float64, which
// the apiserver's int64-only reads refuse.
func FuzzExamples(f *testing.F) {
	for _, s := range []string{
		`[{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"x"},"spec":{"replicas":3,"ratio":0.5,"big":9223372036854775808,"whole":3.0,"e":1e1,"huge":1e21,"neg":-0.0}}]`,
		"- apiVersion: a.io/v1\n  kind: A\n  spec: {replicas: 3}\n", `[]`, `{}`, `[1]`, "", "[{\"a\": 1e3}]", "- a: 0x10\n", `[{"a": 9007199254740993}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		csv := &operatorsv1alpha1.ClusterServiceVersion{}
		csv.Annotations = map[string]string{"alm-examples": raw}
		got := Examples(csv)
		var wholeFloat func(v interface{}) bool
		wholeFloat = func(v interface{}) bool {
			switch v := v.(type) {
			case map[string]interface{}:
				for _, e := range v {
					if wholeFloat(e) {
						return true
					}
				}
			case []interface{}:
				for _, e := range v {
					if wholeFloat(e) {
						return true
					}
				}
			case float64:
				return v == math.Trunc(v) && v >= -(1<<63) && v < 1<<63
			}
			return false
		}
		for _, o := range got {
			if wholeFloat(o) {
				t.Fatalf("Examples(%q) keeps a whole number a float64: %#v", raw, o)
			}
		}
		if !json.Valid([]byte(raw)) || got == nil {
			return
		}
		var parsed []interface{}
		if json.Unmarshal([]byte(raw), &parsed) != nil {
			return
		}
		var asDoubles func(v interface{}) interface{}
		asDoubles = func(v interface{}) interface{} {
			switch v := v.(type) {
			case map[string]interface{}:
				out := map[string]interface{}{}
				for k, e := range v {
					out[k] = asDoubles(e)
				}
				return out
			case []interface{}:
				out := []interface{}{}
				for _, e := range v {
					out = append(out, asDoubles(e))
				}
				return out
			case int64:
				return float64(v)
			}
			return v
		}
		var gotDoubles []interface{}
		for _, o := range got {
			gotDoubles = append(gotDoubles, asDoubles(o))
		}
		if !reflect.DeepEqual(asDoubles(parsed), asDoubles(gotDoubles)) {
			t.Fatalf("Examples(%q) = %#v, JSON.parse reads %#v", raw, gotDoubles, parsed)
		}
	})
}
