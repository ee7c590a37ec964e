package generate

import (
	"os"
	"path/filepath"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var nhc = operatorsv1alpha1.CRDDescription{Name: "nodehealthchecks.remediation.medik8s.io", Version: "v1alpha1", Kind: "NodeHealthCheck"}

// TestItem9GenerateDoesNotTakeASampleName is issue 27, item 9: with no
// initialization resource and no --name, the only name at hand is
// alm-examples' sample for the console. generate does not write it as the
// status source: it exits 2 (an AmbiguousError) and offers it as a
// ready-made --name, which accepts it.
func TestItem9GenerateDoesNotTakeASampleName(t *testing.T) {
	csv := csvWith(map[string]string{"alm-examples": `[{"apiVersion":"remediation.medik8s.io/v1alpha1","kind":"NodeHealthCheck","metadata":{"name":"nodehealthcheck-sample"},"spec":{}}]`},
		nhc)
	_, err := Derive(csv, nil, Values{})
	var amb *AmbiguousError
	require.ErrorAs(t, err, &amb)
	assert.Contains(t, amb.Reason, `"nodehealthcheck-sample", alm-examples' sample for the console`)
	assert.Equal(t, []string{"--name nodehealthcheck-sample (alm-examples: remediation.medik8s.io/v1alpha1 NodeHealthCheck)"}, amb.Candidates)

	_, err = Derive(csv, nil, Values{Kind: strp("NodeHealthCheck")})
	require.ErrorAs(t, err, &amb, "--kind names the kind, not the CR")

	d, err := Derive(csv, nil, Values{Name: strp("nodehealthcheck-sample")})
	require.NoError(t, err)
	assert.Equal(t, `{"apiVersion":"remediation.medik8s.io/v1alpha1","kind":"NodeHealthCheck","name":"nodehealthcheck-sample"}`, d.Source.Marshal())
}

// TestItem10GenerateNamesTheInvalidALMExamples is issue 27, item 10: an
// alm-examples that is not JSON is named, with the JSON error, instead of
// "no alm-examples entry names the CR".
func TestItem10GenerateNamesTheInvalidALMExamples(t *testing.T) {
	csv := csvWith(map[string]string{"alm-examples": `[{"apiVersion":"remediation.medik8s.io/v1alpha1","kind":"NodeHealthCheck","metadata":{"name":"nodehealthcheck-sample"}`}, nhc)
	_, err := Derive(csv, nil, Values{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the CSV's alm-examples, where its example would be, is not valid JSON: unexpected end of JSON input (at the end of the value: a bracket, brace or string is not closed); fix alm-examples, or pass --name")
	assert.NotContains(t, err.Error(), "no initialization resource or alm-examples entry names")

	// Through Run, on a file: the error names the file too.
	file := filepath.Join(t.TempDir(), "nhc.clusterserviceversion.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: nhc.v0.12.0
  annotations:
    alm-examples: '[{"apiVersion": "remediation.medik8s.io/v1alpha1", "kind": "NodeHealthCheck",'
spec:
  customresourcedefinitions:
    owned:
    - {name: nodehealthchecks.remediation.medik8s.io, version: v1alpha1, kind: NodeHealthCheck}
`), 0o644))
	_, err = Run(file, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), file+": no initialization resource names the NodeHealthCheck CR, and the CSV's alm-examples, where its example would be, is not valid JSON")
}
