package validate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// The findings on a CSV's examples point at the field inside the example's
// JSON when the annotation is a literal block scalar, as operator-sdk
// writes alm-examples, and at the annotation otherwise.

const (
	// goodALMExamples is the good CSV's alm-examples line.
	goodALMExamples = `      [{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}]`
	// sdkALMExamples is alm-examples as operator-sdk writes it, with a
	// storage layer the CRD does not allow, on lines 7 to 18.
	sdkALMExamples = "      [\n" +
		"        {\n" +
		"          \"apiVersion\": \"cool.operators.corp/v1beta1\",\n" +
		"          \"kind\": \"CoolOperator\",\n" +
		"          \"metadata\": {\n" +
		"            \"name\": \"cool-operator\"\n" +
		"          },\n" +
		"          \"spec\": {\n" +
		"            \"storageLayer\": \"Oracle\"\n" +
		"          }\n" +
		"        }\n" +
		"      ]"
)

var (
	// sdkExample makes operator-sdk's alm-examples the status source's
	// only example (whenAbsent Block: nothing else need show the CR exists).
	sdkExample = []edit{{csvFile, goodALMExamples, sdkALMExamples}, {csvFile, initResource + "\n", ""}, annotation(`{` + cool + `,"whenAbsent":"Block"}`)}
	// storageRequired makes the CRD require spec.storageLayer.
	storageRequired = edit{crdFile, "          spec:\n            type: object\n            properties:\n",
		"          spec:\n            type: object\n            required:\n            - storageLayer\n            properties:\n"}
)

// where is a finding's place: line, column, field, and the text the file
// holds there.
type where struct {
	line, col int
	field     string
	text      string
}

func TestExampleFindingsPointAtTheField(t *testing.T) {
	const almField = "metadata.annotations[alm-examples]"
	const initField = "metadata.annotations[operatorframework.io/initialization-resource]"
	tests := []struct {
		name  string
		dir   string // a fixture of the table, or else the good bundle with edits
		edits []edit
		crlf  bool // the CSV's lines end in CRLF
		rule  string
		want  []where
	}{
		{name: "the rule's fixture: the initialization resource quoted, a sample in a literal block",
			dir:  fixtureDir(fixture{rule: "status-source-example-invalid"}),
			rule: "status-source-example-invalid",
			want: []where{
				{line: 7, col: 142, field: almField + "[0].spec.storageLayer", text: `"DB2"}}]`},
				{line: 9, col: 51, field: initField, text: `'{"apiVersion"`},
			}},
		{name: "alm-examples as operator-sdk writes it",
			edits: sdkExample, rule: "status-source-example-invalid",
			want: []where{{line: 15, col: 29, field: almField + "[0].spec.storageLayer", text: `"Oracle"`}}},
		{name: "the same with CRLF line ends",
			edits: sdkExample, crlf: true, rule: "status-source-example-invalid",
			want: []where{{line: 15, col: 29, field: almField + "[0].spec.storageLayer", text: `"Oracle"`}}},
		{name: "a required field the example lacks: the object that lacks it",
			edits: slices.Concat(sdkExample, []edit{storageRequired, {csvFile, "            \"storageLayer\": \"Oracle\"\n", "            \"size\": 3\n"}}),
			rule:  "status-source-example-invalid",
			want:  []where{{line: 14, col: 19, field: almField + "[0].spec", text: "{\n"}}},
		{name: "a key with a dot beside the keys the refusal's path may join: above it",
			// The apiserver names the refused "tier.gold" spec.tier.gold,
			// as it would name gold of spec.tier ("fine").
			edits: slices.Concat(sdkExample, []edit{
				{csvFile, "            \"storageLayer\": \"Oracle\"\n", "            \"storageLayer\": \"PostgreSQL\",\n            \"tier\": {\"gold\": \"fine\"},\n            \"tier.gold\": \"bad\"\n"},
				{crdFile, "          spec:\n            type: object\n            properties:\n",
					"          spec:\n            type: object\n            properties:\n              tier:\n                type: object\n                properties:\n                  gold:\n                    type: string\n              tier.gold:\n                type: string\n                enum:\n                - fine\n"}}),
			rule: "status-source-example-invalid",
			want: []where{{line: 14, col: 19, field: almField + "[0].spec", text: "{\n"}}},
		{name: "folded: at the annotation",
			edits: slices.Concat(sdkExample, []edit{{csvFile, "    alm-examples: |-\n", "    alm-examples: >-\n"}}),
			rule:  "status-source-example-invalid",
			want:  []where{{line: 6, col: 19, field: almField, text: ">-"}}},
		{name: "the initialization resource in a literal block names another CR",
			edits: []edit{{csvFile, initResource, "    operatorframework.io/initialization-resource: |-\n      {\n" +
				"        \"apiVersion\": \"cool.operators.corp/v1beta1\",\n        \"kind\": \"CoolOperator\",\n" +
				"        \"metadata\": {\"name\": \"cool-operator-sample\"},\n        \"spec\": {\"storageLayer\": \"PostgreSQL\"}\n      }"}},
			rule: "initialization-resource-mismatch",
			want: []where{{line: 13, col: 30, field: initField + ".metadata.name", text: `"cool-operator-sample"`}}},
		{name: "the initialization resource quoted: at the annotation",
			edits: []edit{{csvFile, `"metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}'`, `"metadata": {"name": "cool-operator-sample"}, "spec": {"storageLayer": "PostgreSQL"}}'`}},
			rule:  "initialization-resource-mismatch",
			want:  []where{{line: 9, col: 51, field: initField, text: `'{"apiVersion"`}}},
		{name: "alm-examples whose JSON breaks: where it breaks",
			edits: []edit{{csvFile, `"spec": {"storageLayer": "PostgreSQL"}}]`, `"spec": {"storageLayer": "PostgreSQL"},}]`}},
			rule:  "alm-examples-invalid",
			want:  []where{{line: 7, col: 156, field: almField, text: "}]"}}},
		{name: "alm-examples not closed: its last character",
			edits: []edit{{csvFile, goodALMExamples, strings.TrimSuffix(sdkALMExamples, "\n      ]")}},
			rule:  "alm-examples-invalid",
			want:  []where{{line: 17, col: 9, field: almField, text: "}\n"}}},
		{name: "an entry of alm-examples that is not an object",
			edits: []edit{{csvFile, goodALMExamples, "      [\n        {\"kind\": \"CoolOperator\"},\n        \"cool-operator\"\n      ]"}},
			rule:  "alm-examples-invalid",
			want:  []where{{line: 9, col: 9, field: almField + "[1]", text: `"cool-operator"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir
			if dir == "" {
				dir = t.TempDir()
				materialize(t, fixture{rule: tt.rule, edits: tt.edits}, dir)
			}
			if tt.crlf {
				p := filepath.Join(dir, csvFile)
				data, err := os.ReadFile(p)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(p, []byte(strings.ReplaceAll(string(data), "\n", "\r\n")), 0o644))
			}
			res := Path(dir, Options{}, bundle.Options{})
			require.Empty(t, res.Errors)
			var got []where
			for i, f := range ofRule(res.Findings, tt.rule) {
				require.Equal(t, filepath.Join(dir, csvFile), f.File)
				data, err := os.ReadFile(f.File)
				require.NoError(t, err)
				w := where{line: f.Line, col: f.Column, field: f.Field}
				if i < len(tt.want) {
					off := manifest.NewOffsets(data).Offset(f.Line, f.Column)
					w.text = strings.ReplaceAll(string(data[off:min(off+len(tt.want[i].text)+strings.Count(tt.want[i].text, "\n"), len(data))]), "\r\n", "\n")
					w.text = w.text[:min(len(w.text), len(tt.want[i].text))]
				}
				got = append(got, w)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestInitResourceField: the field an initialization-resource-mismatch
// finding points at is the first that differs from the status source, in
// the order kind, group, name, namespace, and only when the JSON holds
// there the value the reference was read with: YAML, or keys in another
// case (which ParseObjectRef reads too), give no field, and the finding
// stays on the annotation.
func TestInitResourceField(t *testing.T) {
	src := &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool", Namespace: "ns"}
	for _, tc := range []struct {
		name string
		raw  string
		want string // the path; "" for none
	}{
		{name: "kind differs", raw: `{"apiVersion":"cool.operators.corp/v1beta1","kind":"Other","metadata":{"name":"x","namespace":"y"}}`, want: "kind"},
		{name: "group differs before name", raw: `{"apiVersion":"other.corp/v1beta1","kind":"CoolOperator","metadata":{"name":"x"}}`, want: "apiVersion"},
		{name: "the core group", raw: `{"apiVersion":"v1","kind":"CoolOperator","metadata":{"name":"cool","namespace":"ns"}}`, want: "apiVersion"},
		{name: "name differs", raw: `{"apiVersion":"cool.operators.corp/v1","kind":"CoolOperator","metadata":{"name":"x","namespace":"ns"}}`, want: "metadata.name"},
		{name: "namespace differs", raw: `{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","metadata":{"name":"cool","namespace":"other"}}`, want: "metadata.namespace"},
		{name: "namespace absent", raw: `{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","metadata":{"name":"cool"}}`, want: "metadata.namespace"},
		{name: "a key in another case", raw: `{"apiVersion":"cool.operators.corp/v1beta1","Kind":"Other","metadata":{"name":"cool"}}`},
		{name: "YAML, not JSON", raw: "apiVersion: cool.operators.corp/v1beta1\nkind: Other\nmetadata:\n  name: cool\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ir, err := contract.ParseObjectRef(tc.raw)
			require.NoError(t, err)
			got := initResourceField(tc.raw, ir, src)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			assert.Equal(t, tc.want, got.String())
		})
	}
}
