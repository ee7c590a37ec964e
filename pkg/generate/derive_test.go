package generate

import (
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/crd"
)

func csvWith(annotations map[string]string, owned ...operatorsv1alpha1.CRDDescription) *operatorsv1alpha1.ClusterServiceVersion {
	return &operatorsv1alpha1.ClusterServiceVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "op.v1", Annotations: annotations},
		Spec:       operatorsv1alpha1.ClusterServiceVersionSpec{CustomResourceDefinitions: operatorsv1alpha1.CustomResourceDefinitions{Owned: owned}},
	}
}

var (
	hco      = operatorsv1alpha1.CRDDescription{Name: "hyperconvergeds.hco.kubevirt.io", Version: "v1beta1", Kind: "HyperConverged"}
	kubevirt = operatorsv1alpha1.CRDDescription{Name: "kubevirts.kubevirt.io", Version: "v1", Kind: "KubeVirt"}
	hcoEx    = `[{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","metadata":{"name":"kubevirt-hyperconverged","namespace":"kubevirt-hyperconverged"}}]`
)

func TestDerive(t *testing.T) {
	tests := []struct {
		name   string
		csv    *operatorsv1alpha1.ClusterServiceVersion
		values Values
		want   string
		from   string
		err    string
		cands  int
	}{
		{name: "from the initialization resource",
			csv:  csvWith(map[string]string{v1alpha1.InitializationResourceKey: `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","metadata":{"name":"kubevirt-hyperconverged","namespace":"kubevirt-hyperconverged"}}`}, hco, kubevirt),
			want: `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"kubevirt-hyperconverged"}`, from: "the initialization resource"},
		{name: "an initialization resource written in YAML",
			csv:  csvWith(map[string]string{v1alpha1.InitializationResourceKey: "apiVersion: hco.kubevirt.io/v1beta1\nkind: HyperConverged\nmetadata:\n  name: hc\n"}, hco),
			want: `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"hc"}`},
		{name: "an initialization resource that is not owned is passed over",
			csv:    csvWith(map[string]string{v1alpha1.InitializationResourceKey: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`, "alm-examples": hcoEx}, hco),
			values: Values{Name: strp("kubevirt-hyperconverged")},
			want:   `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"kubevirt-hyperconverged"}`, from: "the only owned CRD and its alm-examples entry"},
		// Issue 27, item 9: alm-examples' sample is not taken on its own.
		{name: "the only owned CRD and alm-examples: the sample's name is offered as --name",
			csv: csvWith(map[string]string{"alm-examples": hcoEx}, hco),
			err: `the only name at hand for the HyperConverged CR is "kubevirt-hyperconverged", alm-examples' sample for the console`, cands: 1},
		{name: "the only owned CRD and alm-examples, the sample's name accepted with --name",
			csv: csvWith(map[string]string{"alm-examples": hcoEx}, hco), values: Values{Name: strp("kubevirt-hyperconverged")},
			want: `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"kubevirt-hyperconverged"}`, from: "the only owned CRD and its alm-examples entry"},
		{name: "the only owned CRD without an example needs a name",
			csv: csvWith(nil, hco), err: "no initialization resource or alm-examples entry names the HyperConverged CR; pass --name", cands: 1},
		{name: "the only owned CRD with --name",
			csv: csvWith(nil, hco), values: Values{Name: strp("hc")},
			want: `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"hc"}`},
		{name: "several owned kinds are ambiguous",
			csv: csvWith(map[string]string{"alm-examples": hcoEx}, hco, kubevirt), err: "the CSV owns 2 kinds", cands: 2},
		{name: "several owned kinds, one chosen by --kind",
			csv: csvWith(map[string]string{"alm-examples": hcoEx}, hco, kubevirt), values: Values{Kind: strp("HyperConverged"), Name: strp("kubevirt-hyperconverged")},
			want: `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"kubevirt-hyperconverged"}`},
		{name: "nothing owned",
			csv: csvWith(nil), err: "the CSV owns no CRD"},
		{name: "everything from flags",
			csv:    csvWith(nil),
			values: Values{APIVersion: strp("a.io/v1"), Kind: strp("K"), Name: strp("n"), Conditions: []string{"Upgradeable", "Ready"}, WhenAbsent: strp("Block"), Handshake: strp("RequestAck"), RequestAnnotation: strp("a.io/req"), AckStatusPath: strp(".status.ack")},
			want:   `{"apiVersion":"a.io/v1","kind":"K","name":"n","conditions":["Upgradeable","Ready"],"whenAbsent":"Block","handshake":{"mode":"RequestAck","request":{"annotation":"a.io/req"},"ack":{"statusPath":".status.ack"}}}`, from: "the command line"},
		{name: "an existing annotation is kept and amended",
			csv:    csvWith(map[string]string{v1alpha1.AnnotationKey: `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"hc","whenAbsent":"Block"}`}, hco),
			values: Values{Handshake: strp("RequestAck"), RequestSpecPath: strp(".spec.upgradeRequest")},
			want:   `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"hc","whenAbsent":"Block","handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}`, from: "the existing annotation"},
		{name: "--handshake None drops a lock",
			csv:    csvWith(map[string]string{v1alpha1.AnnotationKey: `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"hc","handshake":{"mode":"RequestAck","request":{"specPath":".spec.r"}}}`}, hco),
			values: Values{Handshake: strp("None")},
			want:   `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"hc"}`},
		{name: "another kind on the command line starts afresh",
			csv:    csvWith(map[string]string{v1alpha1.AnnotationKey: `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"hc","whenAbsent":"Block"}`, "alm-examples": `[{"apiVersion":"kubevirt.io/v1","kind":"KubeVirt","metadata":{"name":"kv"}}]`}, hco, kubevirt),
			values: Values{Kind: strp("KubeVirt"), Name: strp("kv")},
			want:   `{"apiVersion":"kubevirt.io/v1","kind":"KubeVirt","name":"kv"}`},
		{name: "an invalid existing annotation is replaced",
			csv:    csvWith(map[string]string{v1alpha1.AnnotationKey: `{"kind":"HyperConverged","nmae":"x"}`, "alm-examples": hcoEx}, hco),
			values: Values{Name: strp("kubevirt-hyperconverged")},
			want:   `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"kubevirt-hyperconverged"}`},
		// Issue 11, item 6: a namespace is pinned only when asked for.
		{name: "--namespace pins the namespace",
			csv:    csvWith(map[string]string{"alm-examples": hcoEx}, hco),
			values: Values{Namespace: strp("openshift-cnv"), Name: strp("kubevirt-hyperconverged")},
			want:   `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"kubevirt-hyperconverged","namespace":"openshift-cnv"}`},
		{name: "two examples of the kind need --name",
			csv: csvWith(map[string]string{"alm-examples": `[{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","metadata":{"name":"a"}},{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","metadata":{"name":"b"}}]`}, hco),
			err: "alm-examples has 2 HyperConverged examples; pass --name", cands: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Derive(tt.csv, nil, tt.values)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				var amb *AmbiguousError
				require.ErrorAs(t, err, &amb)
				assert.Len(t, amb.Candidates, tt.cands, "candidates: %v", amb.Candidates)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.Source.Marshal())
			if tt.values.Namespace == nil && strings.Contains(tt.csv.Annotations["alm-examples"]+tt.csv.Annotations[v1alpha1.InitializationResourceKey], `"namespace"`) && !strings.Contains(tt.csv.Annotations[v1alpha1.AnnotationKey], "HyperConverged") {
				assert.Contains(t, strings.Join(d.Notes, "\n"), "the annotation leaves the namespace out", "the namespace left out is said")
			}
			if tt.from != "" {
				assert.Equal(t, tt.from, d.From)
			}
			_, problems := contract.Parse(d.Source.Marshal())
			assert.Empty(t, problems)
		})
	}
}

// TestCandidatesNameTheVersionDeriveTakes: a CSV often lists a kind's
// deprecated version first (cert-manager 1.4.0 owns Certificate at
// v1alpha2, v1alpha3, v1beta1 and v1); the candidate lines give the
// version Derive would take: the kind's alm-examples entry's, else its
// CRD's storage version.
func TestCandidatesNameTheVersionDeriveTakes(t *testing.T) {
	owned := []operatorsv1alpha1.CRDDescription{
		{Name: "certificates.cert-manager.io", Version: "v1alpha2", Kind: "Certificate"},
		{Name: "certificates.cert-manager.io", Version: "v1", Kind: "Certificate"},
		{Name: "issuers.cert-manager.io", Version: "v1alpha2", Kind: "Issuer"},
		{Name: "issuers.cert-manager.io", Version: "v1", Kind: "Issuer"},
		{Name: "orders.acme.cert-manager.io", Version: "v1alpha2", Kind: "Order"},
	}
	certificates := &crd.CRD{V1: &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{
		Group: "cert-manager.io", Names: apiextv1.CustomResourceDefinitionNames{Kind: "Certificate", Plural: "certificates"},
		Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1alpha2", Served: true}, {Name: "v1", Served: true, Storage: true}},
	}}}
	csv := csvWith(map[string]string{"alm-examples": `[{"apiVersion":"cert-manager.io/v1","kind":"Issuer","metadata":{"name":"selfsigned"}}]`}, owned...)
	tests := []struct {
		name string
		crds []*crd.CRD
		want []string
	}{
		{name: "the storage version of the CRD in the bundle, else the first listed; an example's version and name", crds: []*crd.CRD{certificates},
			want: []string{"--kind Certificate --api-version cert-manager.io/v1", "--kind Issuer --api-version cert-manager.io/v1 --name selfsigned", "--kind Order --api-version acme.cert-manager.io/v1alpha2"}},
		{name: "no CRD at hand: the first listed", crds: nil,
			want: []string{"--kind Certificate --api-version cert-manager.io/v1alpha2", "--kind Issuer --api-version cert-manager.io/v1 --name selfsigned", "--kind Order --api-version acme.cert-manager.io/v1alpha2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Derive(csv, tt.crds, Values{})
			var amb *AmbiguousError
			require.ErrorAs(t, err, &amb)
			assert.Equal(t, tt.want, amb.Candidates)
		})
	}
}
