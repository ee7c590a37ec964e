package report

import (
	"io"
	"strings"

	"github.com/statuscheck/statuscheck/pkg/result"
)

// Width is the column the text output wraps its prose at, so that it
// reads in an 80-column terminal. A finding's own line is not wrapped
// (one line per finding, as compilers and linters print them, for editors
// and grep); what is under it is. A single word wider than Width (a long
// path) stands on a line of its own.
const Width = 80

// Text writes, for a person at a terminal, each bundle's findings, one
// "file:line:col: severity rule: message" line each with the rule's
// remediation under it (the first time the rule appears), then the
// bundle's verdict; a verdict paragraph that several bundles share (OLM
// v1's and "without OLM"'s, which do not depend on much) is said once,
// after the bundles; a summary line last.
func Text(w io.Writer, rep *result.Report) error {
	ew := &errWriter{w: w}
	said := map[string]bool{}
	shared := sharedVerdicts(rep.Bundles)
	blank := false // a blank line is owed before the next block
	for _, b := range rep.Bundles {
		if len(b.Findings) > 0 && blank {
			ew.printf("\n")
		}
		lines(ew, b.Findings, said)
		blank = blank || len(b.Findings) > 0
		if len(b.Protection) == 0 {
			continue
		}
		if blank {
			ew.printf("\n")
		}
		protection(ew, b, shared)
		blank = true
	}
	if len(shared) > 0 {
		ew.printf("\n")
		ew.printf("%s", wrap("Said once for the bundles above that point here:", 0, 0))
		for _, p := range shared {
			verdictEntry(ew, p)
		}
	}
	if blank || len(shared) > 0 {
		ew.printf("\n")
	}
	ew.printf("%s", wrap(summary(rep), 0, 2))
	return ew.err
}

// Lines writes findings one per line, each rule's remediation under its
// first finding, without a summary.
func Lines(w io.Writer, findings []result.Finding) error {
	ew := &errWriter{w: w}
	lines(ew, findings, map[string]bool{})
	return ew.err
}

func lines(ew *errWriter, findings []result.Finding, said map[string]bool) {
	for _, f := range findings {
		ew.printf("%s: %s %s: %s\n", position(f), f.Severity, f.Rule, f.Message)
		if f.Remediation != "" && !said[f.Rule] {
			said[f.Rule] = true
			ew.printf("%s", wrap("to fix: "+f.Remediation, 4, 4))
		}
	}
}

// Note writes a note of a command about a file ("statuscheck: FILE: note:
// ..."), its text wrapped under it.
func Note(w io.Writer, file, note string) error {
	ew := &errWriter{w: w}
	ew.printf("statuscheck: %s: note:\n", file)
	ew.printf("%s", wrap(note, 4, 4))
	return ew.err
}

// managerNames are the lifecycle managers as the text output names them.
var managerNames = map[string]string{result.ManagerOLMv0: "OLM v0", result.ManagerOLMv1: "OLM v1", result.ManagerNone: "without OLM"}

// sharedVerdicts are the verdict entries said once for several bundles:
// for each lifecycle manager but OLM v0 (whose answer is the bundle's
// own), the answer most bundles give, when at least two give it. A
// bundle whose answer differs has it under its own verdict.
func sharedVerdicts(bundles []result.Bundle) []result.Protection {
	var out []result.Protection
	for _, m := range []string{result.ManagerOLMv1, result.ManagerNone} {
		var best result.Protection
		most := 1
		counts := map[result.Protection]int{}
		for _, b := range bundles {
			for _, p := range b.Protection {
				if p.Manager != m {
					continue
				}
				counts[p]++
				if counts[p] > most {
					best, most = p, counts[p]
				}
			}
		}
		if most > 1 {
			out = append(out, best)
		}
	}
	return out
}

// protection writes a bundle's verdict: a heading naming the bundle, then
// each lifecycle manager's answer with its reason and remedy under it; an
// answer in shared only names itself.
func protection(ew *errWriter, b result.Bundle, shared []result.Protection) {
	name := b.Path
	if b.Name != "" {
		name = b.Name + " (" + b.Path + ")"
	}
	const question = "is the upgrade held while the status source says wait?"
	if len(name)+2+len(question) <= Width {
		ew.printf("%s: %s\n", name, question)
	} else {
		ew.printf("%s", wrap(name+":", 0, 2))
		ew.printf("  %s\n", question)
	}
	for _, p := range b.Protection {
		if isShared(p, shared) {
			ew.printf("  %s: %s (said once, below)\n", managerNames[p.Manager], yesNo(p.Held))
			continue
		}
		verdictEntry(ew, p)
	}
}

func isShared(p result.Protection, shared []result.Protection) bool {
	for _, q := range shared {
		if q == p {
			return true
		}
	}
	return false
}

func yesNo(held bool) string {
	if held {
		return "yes"
	}
	return "no"
}

// verdictEntry writes one manager's answer: "  OLM v0: no", the reason
// and "to hold it: ..." under it.
func verdictEntry(ew *errWriter, p result.Protection) {
	ew.printf("  %s: %s\n", managerNames[p.Manager], yesNo(p.Held))
	ew.printf("%s", wrap(p.Reason, 4, 4))
	if p.Remedy != "" {
		ew.printf("%s", wrap("to hold it: "+p.Remedy, 4, 4))
	}
}

// wrap breaks text at spaces into lines of at most Width columns, the
// first indented by first, the others by rest, each ending in a newline.
// A span in backquotes (a command to run) is kept whole when it fits on a
// line; a longer one is broken with a shell line continuation (" \"), so
// that it still pastes.
func wrap(text string, first, rest int) string {
	var b strings.Builder
	line, indent := "", first
	flush := func() {
		b.WriteString(strings.Repeat(" ", indent))
		b.WriteString(line)
		b.WriteString("\n")
		line, indent = "", rest
	}
	add := func(word string) {
		switch {
		case line == "":
			line = word
		case indent+len(line)+1+len(word) <= Width:
			line += " " + word
		default:
			flush()
			line = word
		}
	}
	for _, tok := range tokens(text) {
		if !strings.Contains(tok, " ") {
			add(tok)
			continue
		}
		// A quoted command: whole if it fits where it is or on a line
		// of its own, else broken with continuations.
		if line != "" && indent+len(line)+1+len(tok) <= Width {
			line += " " + tok
			continue
		}
		if line != "" {
			flush()
		}
		if rest+len(tok) <= Width {
			line = tok
			continue
		}
		for _, word := range strings.Fields(tok) {
			if line != "" && indent+len(line)+1+len(word)+2 > Width {
				line += " \\"
				flush()
				indent = rest + 2
				line = word
				continue
			}
			if line == "" {
				line = word
			} else {
				line += " " + word
			}
		}
		flush()
	}
	if line != "" || b.Len() == 0 {
		flush()
	}
	return b.String()
}

// tokens splits text into words, a span in backquotes being one token
// (with its spaces); an unclosed backquote ends nothing.
func tokens(text string) []string {
	var out []string
	for text != "" {
		text = strings.TrimLeft(text, " \n\t")
		if text == "" {
			break
		}
		if text[0] == '`' {
			if j := strings.IndexByte(text[1:], '`'); j >= 0 {
				end := j + 2
				// Keep what sticks to the closing quote (a comma, a
				// closing parenthesis) with it.
				for end < len(text) && text[end] != ' ' {
					end++
				}
				out = append(out, text[:end])
				text = text[end:]
				continue
			}
		}
		j := strings.IndexAny(text, " \n\t")
		if j < 0 {
			j = len(text)
		}
		// A word may open a quoted span mid-way ("(`--handshake"): keep
		// the span whole from there.
		if k := strings.IndexByte(text[:j], '`'); k > 0 {
			if m := strings.IndexByte(text[k+1:], '`'); m >= 0 {
				end := k + 1 + m + 1
				for end < len(text) && text[end] != ' ' {
					end++
				}
				out = append(out, text[:end])
				text = text[end:]
				continue
			}
		}
		out = append(out, text[:j])
		text = text[j:]
	}
	return out
}

// wrapAfter wraps text after a label ("note:      "), the lines under it
// indented by rest.
func wrapAfter(label, text string, rest int) string {
	return label + wrap(text, len(label), rest)[len(label):]
}
