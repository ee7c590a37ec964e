package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// TestVerdictAsksForTheRequestFieldOnlyWhereItIsPruned: the verdict's
// RequestAck command says the CRD needs .spec.upgradeRequest only where the
// apiserver prunes a token written there, which is where
// handshake-path-missing fires once the command is followed. A v1beta1 CRD
// that does not set spec.preserveUnknownFields keeps every unknown field
// (the trial's keda-1.5.0): the command works as the CRD stands, and the
// verdict must not ask for the field; the same CRD with
// preserveUnknownFields false prunes it, and the verdict asks.
func TestVerdictAsksForTheRequestFieldOnlyWhereItIsPruned(t *testing.T) {
	tests := []struct {
		name string
		// crd is the bundle's CRD: a file of testdata/crds, which
		// internal/conformance's TestRequestFieldOnTheServer installs on a
		// real apiserver; "" for the good bundle's.
		crd string
		// wiring is what else the CSV declares.
		wiring []edit
		// pruned: a token at .spec.upgradeRequest does not come back, so
		// the verdict asks for the field and handshake-path-missing fires
		// on the command it gives.
		pruned bool
	}{
		{name: "v1, the field declared"},
		{name: "v1, no such field", crd: "cooloperators-no-request-field.yaml", pruned: true},
		// Kept by the pruning, refused by the schema's validation: the
		// update a request is, not the pruning alone, decides.
		{name: "v1, unknown fields kept but one property at most", crd: "cooloperators-no-request-field-one-property.yaml", pruned: true},
		{name: "v1beta1, preserveUnknownFields not set (defaulted to true)", crd: "cooloperators-v1beta1.yaml"},
		{name: "v1beta1, preserveUnknownFields true", crd: "cooloperators-v1beta1-preserve-unknown-fields-true.yaml"},
		{name: "v1beta1, preserveUnknownFields false", crd: "cooloperators-v1beta1-preserve-unknown-fields-false.yaml", pruned: true},
		{name: "v1beta1 with the bridge under None (the trial's keda)", crd: "cooloperators-v1beta1.yaml", wiring: []edit{bridgeDeclared, bridgeContainer}},
		{name: "v1beta1 pruning, with the bridge under None", crd: "cooloperators-v1beta1-preserve-unknown-fields-false.yaml", wiring: []edit{bridgeDeclared, bridgeContainer}, pruned: true},
	}
	withCRD := func(name string, edits ...edit) fixture {
		f := fixture{edits: edits}
		if name != "" {
			f.add = map[string]string{crdFile: crdText(name)}
		}
		return f
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := withCRD(tt.crd, tt.wiring...)
			dir := t.TempDir()
			materialize(t, f, dir)
			res := Path(dir, Options{}, bundle.Options{})
			require.Empty(t, res.Errors)
			var advice []string
			for _, p := range res.Protection {
				if p.Manager == result.ManagerOLMv0 {
					advice = append(advice, p.Remedy)
				}
			}
			for _, fd := range ofRule(res.Findings, "upgrade-not-held-olm-v0") {
				advice = append(advice, fd.Message)
			}
			require.NotEmpty(t, advice)
			for _, a := range advice {
				assert.Contains(t, a, "--request-spec-path .spec.upgradeRequest "+dir, "the command names the field")
				if tt.pruned {
					assert.Contains(t, a, "RequestAck needs a CRD change: add upgradeRequest")
					assert.Contains(t, a, "which does not keep it today")
				} else {
					assert.NotContains(t, a, "CRD change")
					assert.NotContains(t, a, "prunes")
				}
			}

			// The rules on the command followed: the request at
			// .spec.upgradeRequest is pruned exactly where the verdict
			// said so.
			_, findings := edited(t, withCRD(tt.crd, annotation(requestAckSpec)))
			assert.Equal(t, tt.pruned, len(ofRule(findings, "handshake-path-missing")) > 0, "handshake-path-missing: %+v", ofRule(findings, "handshake-path-missing"))
		})
	}
}
