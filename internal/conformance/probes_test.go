package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/internal/kubetest"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// Two of validate's probes decide a finding or an advice on the
// apiserver's code run in-process (pkg/apiserver); here their decisions
// are held to the real server, on the CRDs of testdata/crds, which
// pkg/validate's tests of the same decisions read too.

const (
	goodCSV = "testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml"
	// scaledCRD is the good CRD with a scale subresource whose
	// specReplicasPath is .spec.replicas (an integer, at least 1).
	scaledCRD = "cooloperators-scaled.yaml"
)

// goodBundleWith writes the good bundle to a new directory with its CRD
// replaced by a file of testdata/crds ("" keeps the good one) and its
// CSV's text edited: each pair of csvEdits is an old text, found exactly
// once, and the new text that replaces it.
func goodBundleWith(t *testing.T, crdName string, csvEdits ...[2]string) string {
	t.Helper()
	root := testutil.RepoRoot()
	good := filepath.Join(root, "testdata", "bundles", "good")
	dir := t.TempDir()
	err := filepath.WalkDir(good, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch p {
		case filepath.Join(root, goodCRD):
			if crdName != "" {
				if data, err = os.ReadFile(filepath.Join(root, "testdata", "crds", crdName)); err != nil {
					return err
				}
			}
		case filepath.Join(root, goodCSV):
			text := string(data)
			for _, e := range csvEdits {
				if n := strings.Count(text, e[0]); n != 1 {
					return fmt.Errorf("the CSV holds %q %d times, not once", e[0], n)
				}
				text = strings.Replace(text, e[0], e[1], 1)
			}
			data = []byte(text)
		}
		rel, err := filepath.Rel(good, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	require.NoError(t, err)
	return dir
}

// post creates an object of the fixture's kind from body, sent as it is,
// in a namespace of its own, and reads it back. The dynamic client would
// decode the body and encode it again, and Go's encoding/json writes a
// float64 3 as 3: only a body sent as it is shows what the server does
// with the text 3.0.
func (sc *serverCase) post(body []byte) (*unstructured.Unstructured, error) {
	srv := kubetest.Get(sc.t)
	ns := kubetest.Namespace("examples")
	ctx := context.Background()
	client, err := rest.UnversionedRESTClientFor(dynamic.ConfigFor(srv.Config))
	if err != nil {
		return nil, fmt.Errorf("a client of the test apiserver: %w", err)
	}
	answer := client.Post().
		AbsPath("/apis", sc.gvr.Group, sc.gvr.Version, "namespaces", ns, sc.gvr.Resource).
		SetHeader("Content-Type", "application/json").
		Body(body).Do(ctx)
	if err := answer.Error(); err != nil {
		return nil, err // the server's Status, as the dynamic client reads it
	}
	out, err := answer.Raw()
	if err != nil {
		return nil, err
	}
	created := &unstructured.Unstructured{}
	if err := created.UnmarshalJSON(out); err != nil {
		return nil, fmt.Errorf("reading the created object: %w", err)
	}
	return srv.Dynamic.Resource(sc.gvr).Namespace(ns).Get(ctx, created.GetName(), metav1.GetOptions{})
}

// TestScaledExampleOnTheServer holds status-source-example-invalid to a
// real apiserver on a kind whose version has a scale subresource, whose
// replicas the server reads as an int64 only. The console creates an
// example as JSON.stringify(JSON.parse(annotation)) writes it, so 3.0 and
// 1e1 arrive as 3 and 10, and statuscheck decodes the examples so
// (bundle.StatusSourceExamples). Each example it decodes, the
// initialization resource and the alm-examples entry, is encoded again as
// the bytes the console sends and created on the server: the server
// creates it exactly where validate reports no
// status-source-example-invalid. The initialization resource's own text,
// sent as it is, shows what the console's round trip changes: the server
// refuses a literal 3.0 or 1e1 at the scale subresource's replicas, and
// so does pkg/apiserver given the body as the server decodes it.
func TestScaledExampleOnTheServer(t *testing.T) {
	const initSpec, almSpec = `"spec": {"storageLayer": "PostgreSQL"}}'`, `"spec": {"storageLayer": "PostgreSQL"}}]`
	tests := []struct {
		name string
		// replicas is spec.replicas as the annotations write it.
		replicas string
		// sent is spec.replicas as the console sends it.
		sent string
		// accepted: the server creates the example the console sends.
		accepted bool
		// refusal is in the server's refusal of the example the console
		// sends.
		refusal string
		// rawRefusal is in the server's refusal of the initialization
		// resource's text sent as it is; "" where the server creates it.
		rawRefusal string
	}{
		{name: "a whole number", replicas: "3", sent: "3", accepted: true},
		{name: "a whole number written with a fraction", replicas: "3.0", sent: "3", accepted: true,
			rawRefusal: `.spec.replicas: Invalid value: 0: .spec.replicas accessor error: 3 is of the type float64, expected int64`},
		{name: "a whole number written with an exponent", replicas: "1e1", sent: "10", accepted: true,
			rawRefusal: `.spec.replicas: Invalid value: 0: .spec.replicas accessor error: 10 is of the type float64, expected int64`},
		{name: "a fraction", replicas: "3.5", sent: "3.5",
			refusal:    `spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number"`,
			rawRefusal: `spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			withReplicas := func(spec string) [2]string {
				return [2]string{spec, strings.Replace(spec, `"PostgreSQL"}`, `"PostgreSQL", "replicas": `+tt.replicas+`}`, 1)}
			}
			dir := goodBundleWith(t, scaledCRD, withReplicas(initSpec), withReplicas(almSpec))
			sc, findings := installFixture(t, dir)
			require.NoError(t, sc.refused)
			found, _ := has(findings, "status-source-example-invalid")
			for _, f := range findings.Findings {
				if f.Rule == "status-source-example-invalid" {
					assert.Contains(t, f.Message, tt.refusal, "validate's words are the server's")
				}
			}

			csv := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Annotations: sc.csv}}
			examples := bundle.StatusSourceExamples(csv, sc.src)
			require.Len(t, examples, 2, "the initialization resource and the alm-examples entry")
			for _, e := range examples {
				body, err := json.Marshal(jsonobj.MergePatch(e.Object, map[string]interface{}{"apiVersion": sc.api}))
				require.NoError(t, err)
				assert.Contains(t, string(body), `"replicas":`+tt.sent, "%s: the console's text", e.Describe())
				obj, err := sc.post(body)
				t.Logf("%s as the console sends it, %s: %v", e.Describe(), body, err)
				assert.Equal(t, !found, err == nil, "%s: validate reports status-source-example-invalid: %v; the server's answer to %s: %v", e.Describe(), found, body, err)
				assert.Equal(t, tt.accepted, err == nil, "%s: the server's answer to %s: %v", e.Describe(), body, err)
				if err != nil {
					assert.Contains(t, err.Error(), tt.refusal)
					continue
				}
				want, err := strconv.ParseInt(tt.sent, 10, 64)
				require.NoError(t, err)
				got, ok, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
				require.NoError(t, err)
				assert.True(t, ok)
				assert.Equal(t, want, got, "%s: the replicas the server stored", e.Describe())
			}

			// The initialization resource's text, as it is.
			raw := sc.csv[v1alpha1.InitializationResourceKey]
			require.Contains(t, raw, `"replicas": `+tt.replicas+`}`)
			const av = `"apiVersion": "cool.operators.corp/v1beta1"`
			require.Equal(t, 1, strings.Count(raw, av))
			_, err := sc.post([]byte(strings.Replace(raw, av, `"apiVersion": "`+sc.api+`"`, 1)))
			t.Logf("the initialization resource as it is, %s: %v", raw, err)
			if tt.rawRefusal == "" {
				assert.NoError(t, err, "the text as it is: %s", raw)
			} else if assert.Error(t, err, "the text as it is: %s", raw) {
				assert.Contains(t, err.Error(), tt.rawRefusal)
			}
			// pkg/apiserver, given the body as the server decodes it
			// (util/json: an integer is an int64, any other number a
			// float64), answers as the server does.
			var asDecoded map[string]interface{}
			require.NoError(t, utiljson.Unmarshal([]byte(raw), &asDecoded))
			c := sc.loaded.FindCRD(sc.src.GroupVersion().Group, sc.src.Kind)
			res, err := apiserver.NewResource(c.V1, sc.version)
			require.NoError(t, err)
			_, rf := res.Create(asDecoded, func() time.Time { return time.Unix(0, 0) })
			t.Logf("pkg/apiserver's answer to the same: %v", rf)
			if tt.rawRefusal == "" {
				assert.Nil(t, rf)
			} else if assert.NotNil(t, rf) {
				assert.Contains(t, rf.Error(), tt.rawRefusal)
			}
		})
	}
}

// requestOutcome is what a real server does with an update that writes
// OLM's token at .spec.upgradeRequest.
type requestOutcome string

const (
	requestKept    requestOutcome = "kept"
	requestDropped requestOutcome = "dropped"
	requestRefused requestOutcome = "refused"
)

// TestRequestFieldOnTheServer holds the verdict's advice on OLM's request
// field to a real apiserver. The verdict's RequestAck command names
// .spec.upgradeRequest, and asks for a CRD change ("which does not keep
// it today") unless validate's probe finds the field kept both by the
// create path's pruning and by an update, which the schema's validation
// may refuse where the pruning keeps the field. For each CRD of
// pkg/validate's TestVerdictAsksForTheRequestFieldOnlyWhereItIsPruned
// (files of testdata/crds), the good bundle with that CRD is validated
// and the CRD installed (a v1beta1 one as a cluster before 1.22 stored
// it); the console's example is created, updated with OLM's token at
// .spec.upgradeRequest (a string, as validate's probe writes it) and read
// back: the token is there exactly where the verdict asks for no change,
// and the update is refused or the token dropped exactly where it asks.
func TestRequestFieldOnTheServer(t *testing.T) {
	tests := []struct {
		name string
		// crd is a file of testdata/crds; "" is the good bundle's CRD.
		crd string
		// server is what the server does with the update.
		server requestOutcome
		// refusal is in the server's refusal.
		refusal string
	}{
		{name: "v1, the field declared", server: requestKept},
		{name: "v1, no such field", crd: "cooloperators-no-request-field.yaml", server: requestDropped},
		{name: "v1, unknown fields kept but one property at most", crd: "cooloperators-no-request-field-one-property.yaml", server: requestRefused,
			refusal: "spec: Too many: 2: must have at most 1 item"},
		{name: "v1beta1, preserveUnknownFields not set (defaulted to true)", crd: "cooloperators-v1beta1.yaml", server: requestKept},
		{name: "v1beta1, preserveUnknownFields true", crd: "cooloperators-v1beta1-preserve-unknown-fields-true.yaml", server: requestKept},
		{name: "v1beta1, preserveUnknownFields false", crd: "cooloperators-v1beta1-preserve-unknown-fields-false.yaml", server: requestDropped},
	}

	// Every CRD of testdata/crds is installed here or in
	// TestScaledExampleOnTheServer.
	files, err := filepath.Glob(filepath.Join(testutil.RepoRoot(), "testdata", "crds", "*.yaml"))
	require.NoError(t, err)
	var onDisk, installed []string
	for _, f := range files {
		onDisk = append(onDisk, filepath.Base(f))
	}
	installed = append(installed, scaledCRD)
	for _, tt := range tests {
		if tt.crd != "" {
			installed = append(installed, tt.crd)
		}
	}
	sort.Strings(installed)
	assert.Equal(t, onDisk, installed)

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc, findings := installFixture(t, goodBundleWith(t, tt.crd))
			require.NoError(t, sc.refused)
			var advice []string
			for _, p := range findings.Protection {
				if p.Manager == result.ManagerOLMv0 {
					advice = append(advice, p.Remedy)
				}
			}
			for _, f := range findings.Findings {
				if f.Rule == "upgrade-not-held-olm-v0" {
					advice = append(advice, f.Message)
				}
			}
			require.NotEmpty(t, advice)
			asks := strings.Contains(advice[0], "which does not keep it today")
			for _, a := range advice {
				require.Contains(t, a, "--request-spec-path .spec.upgradeRequest", "the command names the field")
				require.Equal(t, asks, strings.Contains(a, "which does not keep it today"), "every advice says the same: %q", advice)
			}

			ctx := context.Background()
			obj, err := sc.create(sc.example())
			require.NoError(t, err)
			next := obj.DeepCopy()
			require.NoError(t, unstructured.SetNestedField(next.Object, "1", "spec", "upgradeRequest"))
			outcome, evidence := requestKept, ""
			if _, err := sc.res.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
				outcome, evidence = requestRefused, err.Error()
				assert.Contains(t, evidence, tt.refusal)
			} else {
				got, err := sc.res.Get(ctx, obj.GetName(), metav1.GetOptions{})
				require.NoError(t, err)
				v, found, _ := unstructured.NestedString(got.Object, "spec", "upgradeRequest")
				if !found || v != "1" {
					outcome = requestDropped
				}
				evidence = fmt.Sprintf("spec after the update: %v", got.Object["spec"])
			}
			t.Logf("asks: %v; %s: %s", asks, outcome, evidence)
			assert.Equal(t, !asks, outcome == requestKept, "the verdict asks for the field: %v; the server: %s (%s)", asks, outcome, evidence)
			assert.Equal(t, tt.server, outcome, evidence)
		})
	}
}
