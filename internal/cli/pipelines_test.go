package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	scorecard "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/pkg/validate"
)

// buildValidator builds the operator-sdk wrapper once per test binary.
var validatorBin string

func sdkValidator(t *testing.T) string {
	t.Helper()
	if validatorBin != "" {
		return validatorBin
	}
	dir, err := os.MkdirTemp("", "statuscheck-sdk")
	require.NoError(t, err)
	bin := filepath.Join(dir, "statuscheck-sdk-validator")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/statuscheck-sdk-validator")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	validatorBin = bin
	return bin
}

// runAsOperatorSDK runs the wrapper the way operator-sdk's
// RunExternalValidators does: the bundle root as the only argument, stdout
// decoded strictly into one ManifestResult, a non-zero exit an error.
func runAsOperatorSDK(t *testing.T, bundleRoot string, env ...string) apierrors.ManifestResult {
	t.Helper()
	cmd := exec.Command(sdkValidator(t), bundleRoot)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	dec := json.NewDecoder(stdout)
	dec.DisallowUnknownFields()
	var mr apierrors.ManifestResult
	require.NoError(t, dec.Decode(&mr))
	require.NoError(t, cmd.Wait(), "the validator must exit 0 when it could validate: %s", stderr.String())
	return mr
}

func TestOperatorSDKExternalValidator(t *testing.T) {
	mr := runAsOperatorSDK(t, "testdata/bundles/protected")
	assert.Equal(t, "cool-operator.v0.2.0", mr.Name)
	assert.Empty(t, mr.Errors)
	assert.Empty(t, mr.Warnings)

	mr = runAsOperatorSDK(t, "testdata/bundles/rules/status-rbac-missing/fail")
	var rbac []apierrors.Error
	for _, e := range mr.Errors {
		if e.Type == "statuscheck/status-rbac-missing" {
			rbac = append(rbac, e)
		} else {
			assert.True(t, validate.VerdictRule(strings.TrimPrefix(string(e.Type), "statuscheck/")), "only the verdict's errors besides: %s", e.Type)
		}
	}
	require.Len(t, rbac, 1)
	assert.Equal(t, apierrors.Level(apierrors.LevelError), rbac[0].Level)
	assert.Contains(t, rbac[0].Error(), "cooloperators/status")
	assert.Contains(t, rbac[0].BadValue, "cool-operator.clusterserviceversion.yaml:39:7")

	// A warning that puts the gate in doubt: OLM v0's verdict is "no", and
	// statuscheck exits 1 on it; operator-sdk reads the ManifestResult, so
	// the verdict is its error.
	mr = runAsOperatorSDK(t, protectedWithWarning(t))
	require.Len(t, mr.Errors, 1)
	assert.Equal(t, apierrors.ErrorType("statuscheck/"+validate.RuleNotHeldOLMv0), mr.Errors[0].Type)
	assert.Contains(t, mr.Errors[0].Detail, "the gate may not hold as declared: conditions-list-type")
	require.Len(t, mr.Warnings, 1)
	assert.Equal(t, apierrors.Level(apierrors.LevelWarn), mr.Warnings[0].Level)

	mr = runAsOperatorSDK(t, "testdata/bundles/rules/status-source-missing/fail")
	assert.Empty(t, mr.Errors, "info is left out")
	mr = runAsOperatorSDK(t, "testdata/bundles/rules/status-source-missing/fail", "STATUSCHECK_ARGS=--require-status-source")
	require.Len(t, mr.Errors, 1, "STATUSCHECK_ARGS passes flags")

	cmd := exec.Command(sdkValidator(t), filepath.Join(t.TempDir(), "gone"))
	out, err := cmd.Output()
	assert.Error(t, err, "it fails when it cannot validate")
	assert.Empty(t, out)
}

func TestScorecardOutput(t *testing.T) {
	for _, tt := range []struct {
		bundle string
		state  scorecard.State
	}{
		{"testdata/bundles/protected", scorecard.PassState},
		{"testdata/bundles/good", scorecard.FailState},
		{"testdata/bundles/rules/status-subresource-disabled/fail", scorecard.FailState},
		// A warning that puts the gate in doubt: OLM v0's verdict is "no"
		// and statuscheck exits 1 on it in text.
		{protectedWithWarning(t), scorecard.FailState},
	} {
		code, stdout, _ := run(t, "validate", "-o", "scorecard", tt.bundle)
		assert.Equal(t, 0, code, "a scorecard test reports through its output")
		dec := json.NewDecoder(strings.NewReader(stdout))
		dec.DisallowUnknownFields()
		var st scorecard.TestStatus
		require.NoError(t, dec.Decode(&st))
		require.Len(t, st.Results, 1)
		r := st.Results[0]
		assert.Equal(t, tt.state, r.State, tt.bundle)
		assert.Equal(t, "statuscheck-status-source", r.Name)
		assert.NotEmpty(t, r.Log)
		if tt.state == scorecard.FailState {
			assert.NotEmpty(t, r.Errors)
			assert.NotEmpty(t, r.Suggestions)
		}
	}
	code, stdout, _ := run(t, "validate", "-o", "scorecard", "--fail-on", "warning", protectedWithWarning(t))
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, `"state": "fail"`)
}

func TestSARIF(t *testing.T) {
	code, stdout, _ := run(t, append([]string{"validate", "-o", "sarif"}, failFixtures(t)...)...)
	assert.Equal(t, 1, code)
	var log struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID                   string                 `json:"id"`
						ShortDescription     struct{ Text string }  `json:"shortDescription"`
						DefaultConfiguration struct{ Level string } `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string                `json:"ruleId"`
				RuleIndex int                   `json:"ruleIndex"`
				Level     string                `json:"level"`
				Message   struct{ Text string } `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI       string `json:"uri"`
							URIBaseID string `json:"uriBaseId"`
						} `json:"artifactLocation"`
						Region *struct {
							StartLine   int `json:"startLine"`
							StartColumn int `json:"startColumn"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &log))
	assert.Equal(t, "2.1.0", log.Version)
	assert.Contains(t, log.Schema, "sarif-2.1.0")
	require.Len(t, log.Runs, 1)
	run0 := log.Runs[0]
	assert.Equal(t, "statuscheck", run0.Tool.Driver.Name)
	require.Len(t, run0.Tool.Driver.Rules, len(validate.Rules()))
	for _, r := range run0.Tool.Driver.Rules {
		assert.NotEmpty(t, r.ShortDescription.Text)
		assert.Contains(t, []string{"error", "warning", "note"}, r.DefaultConfiguration.Level)
	}
	require.NotEmpty(t, run0.Results)
	for _, r := range run0.Results {
		require.Less(t, r.RuleIndex, len(run0.Tool.Driver.Rules))
		assert.Equal(t, r.RuleID, run0.Tool.Driver.Rules[r.RuleIndex].ID)
		assert.NotEmpty(t, r.Message.Text)
		require.Len(t, r.Locations, 1)
		loc := r.Locations[0].PhysicalLocation
		assert.True(t, strings.HasPrefix(loc.ArtifactLocation.URI, "testdata/bundles/rules/"), "repo-relative URI: %s", loc.ArtifactLocation.URI)
		assert.Equal(t, "%SRCROOT%", loc.ArtifactLocation.URIBaseID)
		if loc.Region != nil {
			assert.GreaterOrEqual(t, loc.Region.StartLine, 1)
		}
	}
}

func TestJUnit(t *testing.T) {
	bundles := []string{"testdata/bundles/protected", "testdata/bundles/rules/status-rbac-missing/fail", protectedWithWarning(t)}
	code, stdout, _ := run(t, append([]string{"validate", "-o", "junit"}, bundles...)...)
	assert.Equal(t, 1, code)
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Type string `xml:"type,attr"`
					Text string `xml:",chardata"`
				} `xml:"failure"`
				SystemOut string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(stdout), &suites))
	n := len(validate.Rules())
	assert.Equal(t, 3*n, suites.Tests, "one testcase per rule per bundle")
	assert.Equal(t, 4, suites.Failures, "only the errors and the verdicts fail at --fail-on error: status-rbac-missing, and the verdict's upgrade-not-held-olm-v0 and upgrade-while-blocked on the same bundle; on the bundle with a warning that puts the gate in doubt, OLM v0's verdict (upgrade-not-held-olm-v0)")
	require.Len(t, suites.Suites, 3)
	for _, s := range suites.Suites {
		assert.Len(t, s.Cases, n)
	}
	rbac := suites.Suites[1]
	for _, c := range rbac.Cases {
		if c.Name == "status-rbac-missing" {
			require.NotNil(t, c.Failure)
			assert.Contains(t, c.Failure.Text, "cooloperators/status")
		} else if !validate.VerdictRule(c.Name) {
			assert.Nil(t, c.Failure)
		}
	}
	for _, c := range suites.Suites[2].Cases {
		switch c.Name {
		case "conditions-list-type":
			assert.Nil(t, c.Failure, "a warning is reported, not failed")
			assert.Contains(t, c.SystemOut, "conditions-list-type")
		case validate.RuleNotHeldOLMv0:
			require.NotNil(t, c.Failure, "OLM v0's verdict is no, and the exit code 1")
			assert.Contains(t, c.Failure.Text, "the gate may not hold as declared: conditions-list-type")
		default:
			assert.Nil(t, c.Failure, c.Name)
		}
	}
}

func TestCatalog(t *testing.T) {
	code, stdout, stderr := run(t, "validate", "-o", "json", "testdata/catalog")
	assert.Equal(t, 1, code, stderr)
	var rep struct {
		Bundles []struct {
			Path     string `json:"path"`
			Name     string `json:"name"`
			Findings []struct {
				Rule string `json:"rule"`
				File string `json:"file"`
				Line int    `json:"line"`
			} `json:"findings"`
		} `json:"bundles"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Len(t, rep.Bundles, 2, "other.v1 carries no manifests")
	assert.Equal(t, "cool-operator.v0.2.0", rep.Bundles[0].Name)
	// The good bundle's CSV: only the verdict's findings (nothing holds
	// its upgrade on OLM v0), each in the embedded CSV.
	for _, f := range rep.Bundles[0].Findings {
		assert.True(t, validate.VerdictRule(f.Rule), f.Rule)
		assert.Equal(t, "testdata/catalog/cool-operator/catalog.json[cool-operator.v0.2.0].olm.bundle.object[1]", f.File)
	}
	assert.Equal(t, "cool-operator.v0.3.0", rep.Bundles[1].Name)
	require.Len(t, rep.Bundles[1].Findings, 1)
	f := rep.Bundles[1].Findings[0]
	assert.Equal(t, "status-source-invalid", f.Rule)
	assert.Equal(t, "testdata/catalog/cool-operator/catalog.json[cool-operator.v0.3.0].olm.bundle.object[1]", f.File)
	assert.Equal(t, 11, f.Line, "the line inside the embedded CSV")

	code, stdout, _ = run(t, "validate", "testdata/catalog/cool-operator/catalog.json")
	assert.Equal(t, 1, code, "a catalog file works too")
	assert.Contains(t, stdout, "2 bundles checked: ")
	assert.Contains(t, stdout, "error status-source-invalid:")
}

func TestPreCommitHooks(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, ".pre-commit-hooks.yaml"))
	require.NoError(t, err)
	var hooks []struct {
		ID            string   `json:"id"`
		Name          string   `json:"name"`
		Description   string   `json:"description"`
		Entry         string   `json:"entry"`
		Language      string   `json:"language"`
		Files         string   `json:"files"`
		PassFilenames *bool    `json:"pass_filenames"`
		Args          []string `json:"args"`
	}
	require.NoError(t, yaml.UnmarshalStrict(data, &hooks))
	ids := map[string]string{}
	for _, h := range hooks {
		ids[h.ID] = h.Entry
		assert.Equal(t, "golang", h.Language)
		assert.True(t, strings.HasPrefix(h.Entry, "statuscheck "), h.Entry)
	}
	require.Contains(t, ids, "statuscheck-validate")
	require.Contains(t, ids, "statuscheck-generate-check")
	// The entries work as pre-commit runs them: the entry, then the files.
	args := append(strings.Fields(ids["statuscheck-generate-check"])[1:], missingCSV, "testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml")
	code, stdout, _ := run(t, args...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, missingCSV+": the status-source annotation is not up to date")
	assert.NotContains(t, stdout, "good/manifests")
	args = append(strings.Fields(ids["statuscheck-validate"])[1:], "testdata/bundles/protected")
	code, _, _ = run(t, args...)
	assert.Equal(t, 0, code)
}

// TestMachineOutputWhenNothingWasRead is issue 11, item 9: a path that
// cannot be read is a failed execution in SARIF and one error, not passes,
// in JUnit; a file outside the repository is not named relative to it.
func TestMachineOutputWhenNothingWasRead(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	code, stdout, _ := run(t, "validate", "-o", "sarif", missing)
	assert.Equal(t, 2, code)
	var log struct {
		Runs []struct {
			Invocations []struct {
				ExecutionSuccessful        bool `json:"executionSuccessful"`
				ToolExecutionNotifications []struct {
					Level   string                `json:"level"`
					Message struct{ Text string } `json:"message"`
				} `json:"toolExecutionNotifications"`
			} `json:"invocations"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &log))
	require.Len(t, log.Runs[0].Invocations, 1)
	inv := log.Runs[0].Invocations[0]
	assert.False(t, inv.ExecutionSuccessful)
	require.Len(t, inv.ToolExecutionNotifications, 1)
	assert.Contains(t, inv.ToolExecutionNotifications[0].Message.Text, "gone")

	code, stdout, _ = run(t, "validate", "-o", "junit", missing)
	assert.Equal(t, 2, code)
	var suites struct {
		Tests  int `xml:"tests,attr"`
		Errors int `xml:"errors,attr"`
		Suites []struct {
			Cases []struct {
				Name  string    `xml:"name,attr"`
				Error *struct{} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(stdout), &suites))
	assert.Equal(t, 1, suites.Tests, "one errored testcase, no passing rule")
	assert.Equal(t, 1, suites.Errors)

	// A bundle outside the repository: an absolute file URI, no base.
	outside := copyTree(t, "testdata/bundles/rules/status-rbac-missing/fail")
	_, stdout, _ = run(t, "validate", "-o", "sarif", outside)
	var out struct {
		Runs []struct {
			Results []struct {
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI       string `json:"uri"`
							URIBaseID string `json:"uriBaseId"`
						} `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.NotEmpty(t, out.Runs[0].Results)
	loc := out.Runs[0].Results[0].Locations[0].PhysicalLocation.ArtifactLocation
	assert.True(t, strings.HasPrefix(loc.URI, "file:///"), loc.URI)
	assert.Empty(t, loc.URIBaseID)
}
