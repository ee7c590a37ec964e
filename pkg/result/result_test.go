package result

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSeverity(t *testing.T) {
	for _, s := range Severities() {
		got, err := ParseSeverity(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, got)
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var back Severity
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, s, back)
	}
	_, err := ParseSeverity("fatal")
	assert.Error(t, err)
	assert.True(t, Error > Warning && Warning > Info)
	var s Severity
	assert.Error(t, json.Unmarshal([]byte(`"bad"`), &s))
}

func TestExitCode(t *testing.T) {
	f := func(s Severity) Finding { return Finding{Rule: "r", Severity: s, File: "f"} }
	tests := []struct {
		name    string
		bundles []Bundle
		failOn  Severity
		want    int
	}{
		{name: "nothing", bundles: []Bundle{{}}, failOn: Error, want: ExitOK},
		{name: "an error", bundles: []Bundle{{Findings: []Finding{f(Error)}}}, failOn: Error, want: ExitFindings},
		{name: "a warning under fail-on error", bundles: []Bundle{{Findings: []Finding{f(Warning)}}}, failOn: Error, want: ExitOK},
		{name: "a warning under fail-on warning", bundles: []Bundle{{Findings: []Finding{f(Warning)}}}, failOn: Warning, want: ExitFindings},
		{name: "info under fail-on info", bundles: []Bundle{{Findings: []Finding{f(Info)}}}, failOn: Info, want: ExitFindings},
		{name: "a read error beats findings", bundles: []Bundle{{Findings: []Finding{f(Error)}}, {Errors: []string{"reading x: permission denied"}}}, failOn: Error, want: ExitFailure},
		{name: "a read error with nothing else", bundles: []Bundle{{Errors: []string{"x"}}}, failOn: Info, want: ExitFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Bundles: tt.bundles}
			assert.Equal(t, tt.want, r.ExitCode(tt.failOn))
		})
	}
}

func TestSortAndCounts(t *testing.T) {
	b := Bundle{Findings: []Finding{
		{Rule: "b", File: "y", Line: 1, Severity: Info},
		{Rule: "a", File: "x", Line: 9, Column: 2, Severity: Error},
		{Rule: "a", File: "x", Line: 9, Column: 1, Severity: Warning},
		{Rule: "c", File: "x", Line: 2, Severity: Error},
	}}
	b.Sort()
	var order []string
	for _, f := range b.Findings {
		order = append(order, f.Rule+f.File)
	}
	assert.Equal(t, []string{"cx", "ax", "ax", "by"}, order)
	assert.Equal(t, 1, b.Findings[1].Column)
	r := &Report{Bundles: []Bundle{b}}
	assert.Equal(t, Counts{Error: 2, Warning: 1, Info: 1}, r.Counts())
}
