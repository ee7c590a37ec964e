package testutil

import (
	"regexp"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// internalText are the forms that do not belong in what statuscheck
// prints for its users (rule texts, --help, finding messages): issue and
// pull-request numbers, source paths and files, Go identifiers of a
// package (pkg.Name), test names and numbered document sections. A
// Kubernetes field path (.spec.foo, metadata.generation), a placeholder
// (.spec.FIELD), a kind (OperatorCondition) or an API group
// (operators.coreos.com) is none of them. A pattern's group "hit" is
// what it reports, when it has one.
var internalText = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bissues? #?[0-9]+`),
	regexp.MustCompile(`(?i)\b(PRs?|pull requests?) #?[0-9]+`),
	regexp.MustCompile(`(?:^|[^&\w])(?P<hit>#[0-9]+)\b`),
	regexp.MustCompile(`\b(pkg|internal|cmd)/[\w./-]*`),
	regexp.MustCompile(`\b[\w-]+\.go\b`),
	regexp.MustCompile(`\bTest[A-Z]\w*`),
	regexp.MustCompile(`(?i)\bsection [0-9]+`),
	// pkg.Exported or pkg.Func(): not after a dot, slash or word
	// character (a field path, a domain), and with a lower-case letter
	// in the name (.spec.FIELD is a placeholder).
	regexp.MustCompile(`(?:^|[^\w./-])(?P<hit>[a-z][a-z0-9]*\.[A-Z][a-z]\w*(\(\))?)`),
}

// upstreamText are the Go identifiers an operator author types in their
// own operator, which a remediation may name.
var upstreamText = map[string]bool{
	"metav1.Condition":        true,
	"meta.SetStatusCondition": true,
}

// InternalText returns what in text names statuscheck's internals or
// its history (internalText), nil when nothing does.
func InternalText(text string) []string {
	var out []string
	for _, re := range internalText {
		g := re.SubexpIndex("hit")
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			hit := m[0]
			if g >= 0 {
				hit = m[g]
			}
			if !upstreamText[hit] {
				out = append(out, hit)
			}
		}
	}
	return out
}

// PlainHelp fails t where the help of c or a command under it (its short
// and long text, examples and flag usages) names internals or history
// (InternalText).
func PlainHelp(t testing.TB, c *cobra.Command) {
	t.Helper()
	check := func(where, text string) {
		t.Helper()
		if hits := InternalText(text); hits != nil {
			t.Errorf("%s names internals or history %q:\n%s", where, hits, text)
		}
	}
	name := c.CommandPath()
	check(name+": Short", c.Short)
	check(name+": Long", c.Long)
	check(name+": Example", c.Example)
	visit := func(f *pflag.Flag) { check(name+" --"+f.Name, f.Usage) }
	c.LocalFlags().VisitAll(visit)
	c.PersistentFlags().VisitAll(visit)
	for _, sub := range c.Commands() {
		PlainHelp(t, sub)
	}
}
