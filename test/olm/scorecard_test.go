package olm

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	scorecard "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// TestScorecardRecipe runs the statuscheck image as docs/examples/
// scorecard-config.yaml tells operator-sdk scorecard to: its entrypoint,
// the bundle mounted read-only at /bundle, the image's own non-root user
// and a read-only root; stdout is a scorecard v1alpha3 TestStatus, pass
// on the good bundle and fail on one whose RBAC cannot read the status
// source.
func TestScorecardRecipe(t *testing.T) {
	img := image(t)
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "examples", "scorecard-config.yaml"))
	require.NoError(t, err)
	var cfg scorecard.Configuration
	require.NoError(t, yaml.UnmarshalStrict(raw, &cfg))
	require.NotEmpty(t, cfg.Stages)
	require.NotEmpty(t, cfg.Stages[0].Tests)
	entrypoint, err := json.Marshal(cfg.Stages[0].Tests[0].Entrypoint)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, bundle string
		want         scorecard.State
	}{
		{name: "the protected bundle", bundle: "testdata/bundles/protected", want: scorecard.PassState},
		// Its status source passes every rule, but nothing holds its
		// upgrade on OLM v0 (issue 27, item 1).
		{name: "the good bundle", bundle: "testdata/bundles/good", want: scorecard.FailState},
		{name: "a bundle whose RBAC cannot read the status source", bundle: "testdata/bundles/rules/status-rbac-missing/fail", want: scorecard.FailState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("podman", "run", "--rm", "--pull", "never", "--read-only", "--network", "none",
				"--entrypoint", string(entrypoint), "-v", filepath.Join(testutil.RepoRoot(), tc.bundle)+":/bundle:ro", img)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run() // the exit code follows the findings; the TestStatus is what scorecard reads
			var status scorecard.TestStatus
			dec := json.NewDecoder(&stdout)
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&status), "a scorecard TestStatus on stdout; stderr: %s", stderr.String())
			require.NotEmpty(t, status.Results)
			for _, r := range status.Results {
				assert.NotEmpty(t, r.Name)
				assert.Equal(t, tc.want, r.State, "%+v", r)
			}
		})
	}
}
