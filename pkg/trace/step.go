// Package trace reads and writes what simulate replays: native StatusTraces
// (api/v1alpha1's StatusTrace, streamed step by step), streams of
// snapshots of the status-source CR (kubectl get -w -o json|yaml) and
// Kubernetes audit logs, which are diffed into steps. The differ is also
// what statuscheck record feeds a watch with (Observer), and the writer
// is shared by the recorder and simulate --explore's counterexamples.
//
// Nothing here judges a step: a Step is an event with a position, and
// package simulate decides what it means.
package trace

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/strict"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/manifest/typed"
)

// Step is one event of a trace, as the core consumes it.
type Step struct {
	Actor  v1alpha1.Actor
	Verb   v1alpha1.Verb
	Target v1alpha1.Target
	// Value is the merge patch of an update, the object of a create, the
	// status of an updateStatus (nil for OLM's OperatorCondition sync), a
	// delete's options ({propagationPolicy: Orphan|Background|Foreground})
	// or a request's token ({token: "..."}).
	Value map[string]interface{}
	// Expect is a check's expected verdict under the primary policy.
	Expect v1alpha1.Verdict
	// File and Line locate the step in its input.
	File string
	Line int
	// Recorded is the generation the apiserver reported after the step,
	// when the input recorded it (snapshots, audit events, record).
	Recorded *int64
	// Who is the recorded user name or field manager, if any.
	Who string
	// ResourceVersion and Time are what the cluster said of the write,
	// when it was recorded (statuscheck record).
	ResourceVersion string
	Time            string
	// Observed marks the last step inferred from one recorded observation:
	// in Continuous mode the gate is evaluated there, once per change the
	// recording saw.
	Observed bool
}

// Action describes a step in a few words ("update", "updateStatus OperatorCondition").
func (s Step) Action() string {
	a := string(s.Verb)
	if s.Target == v1alpha1.TargetOperatorCondition {
		a += " OperatorCondition"
	}
	return a
}

// Wire is the step as a StatusTrace writes it.
func (s Step) Wire() v1alpha1.Step {
	w := v1alpha1.Step{Actor: s.Actor, Target: s.Target, Generation: s.Recorded, ResourceVersion: s.ResourceVersion, Time: s.Time, Who: s.Who}
	value := s.Value
	switch s.Verb {
	case v1alpha1.VerbUpdate:
		if value == nil {
			value = v1alpha1.Object{}
		}
		w.Update = value
	case v1alpha1.VerbCreate:
		if value == nil {
			value = v1alpha1.Object{}
		}
		w.Create = value
	case v1alpha1.VerbUpdateStatus:
		w.UpdateStatus = &value
	case v1alpha1.VerbCheck:
		w.Check = &v1alpha1.CheckOptions{Expect: s.Expect}
	case v1alpha1.VerbUpgrade:
		w.Upgrade = &v1alpha1.UpgradeOptions{}
	case v1alpha1.VerbRequest:
		w.Request = &v1alpha1.RequestOptions{}
		if tok, ok := value["token"]; ok {
			w.Request.Token = v1alpha1.Token(fmt.Sprint(tok))
		}
		if p, ok := value["patch"].(map[string]interface{}); ok {
			w.Request.Patch = p
		}
	case v1alpha1.VerbDelete:
		w.Delete = &v1alpha1.DeleteOptions{}
		if p, ok := value["propagationPolicy"].(string); ok {
			w.Delete.PropagationPolicy = metav1.DeletionPropagation(p)
		}
	}
	return w
}

// FromWire is a decoded StatusTrace step as the core consumes it, checked
// for what the format requires: an actor, exactly one verb the actor may
// take, and values in range. present lists the verbs the step names (a
// verb given as null, as in "check:", is present but nil in w).
func FromWire(w v1alpha1.Step, present []v1alpha1.Verb, file string, line int) (Step, error) {
	fail := func(format string, args ...interface{}) (Step, error) {
		return Step{}, &TraceError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	st := Step{Actor: w.Actor, Target: w.Target, File: file, Line: line, Recorded: w.Generation, ResourceVersion: w.ResourceVersion, Time: w.Time, Who: w.Who}
	if w.Generation != nil && w.Target != v1alpha1.TargetOperatorCondition {
		st.Observed = true // a change of the CR the recording saw
	}
	switch w.Actor {
	case v1alpha1.ActorUser, v1alpha1.ActorOperator, v1alpha1.ActorOLM, v1alpha1.ActorAdmin, v1alpha1.ActorBridge:
	case "":
		return fail("a step needs an actor")
	default:
		return fail("unknown actor %q (want user, operator, olm, admin or bridge)", w.Actor)
	}
	switch w.Target {
	case v1alpha1.TargetOperatorCondition:
	case v1alpha1.TargetSource, v1alpha1.TargetSourceName:
		st.Target = v1alpha1.TargetSource
	default:
		return fail("unknown target %q (want OperatorCondition, or none for the status source)", w.Target)
	}
	switch len(present) {
	case 0:
		return fail("a step needs a verb (update, updateStatus, request, check, upgrade, create or delete)")
	case 1:
	default:
		var names []string
		for _, v := range present {
			names = append(names, string(v))
		}
		return fail("one verb per step, not %s", strings.Join(names, " and "))
	}
	st.Verb = present[0]
	if !v1alpha1.Allowed(st.Actor, st.Verb, st.Target) {
		return fail("%s cannot %s %s", st.Actor, st.Verb, map[bool]string{true: "the OperatorCondition", false: "the status source"}[st.Target == v1alpha1.TargetOperatorCondition])
	}
	switch st.Verb {
	case v1alpha1.VerbUpdate:
		if w.Update == nil {
			return fail("update needs an object")
		}
		st.Value = w.Update
	case v1alpha1.VerbCreate:
		if w.Create == nil {
			return fail("create needs an object")
		}
		st.Value = w.Create
	case v1alpha1.VerbUpdateStatus:
		if w.UpdateStatus != nil {
			st.Value = *w.UpdateStatus
		}
	case v1alpha1.VerbCheck:
		if w.Check != nil {
			switch w.Check.Expect {
			case "", v1alpha1.Allow, v1alpha1.Block:
				st.Expect = w.Check.Expect
			default:
				return fail("expect must be Allow or Block, not %q", w.Check.Expect)
			}
		}
	case v1alpha1.VerbRequest:
		switch {
		case w.Request == nil:
		case w.Request.Patch != nil && w.Request.Token != "":
			return fail("a request takes a token (OLM's) or a patch (the bridge's), not both")
		case w.Request.Patch != nil:
			if w.Actor != v1alpha1.ActorBridge {
				return fail("only the bridge's request is a patch; OLM's writes a token")
			}
			st.Value = map[string]interface{}{"patch": w.Request.Patch}
		case w.Request.Token != "":
			st.Value = map[string]interface{}{"token": string(w.Request.Token)}
		}
	case v1alpha1.VerbDelete:
		if w.Delete != nil && w.Delete.PropagationPolicy != "" {
			switch p := w.Delete.PropagationPolicy; p {
			case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
				st.Value = map[string]interface{}{"propagationPolicy": string(p)}
			default:
				return fail("propagationPolicy must be Orphan, Background or Foreground, not %q", p)
			}
		}
	}
	if p := stepValueProblem(st); p != "" {
		return fail("%s", p)
	}
	return st, nil
}

// decodeStep reads one step of a StatusTrace from its YAML node: strictly
// into api/v1alpha1's Step (exact field names, nothing unknown or given
// twice), then checked by FromWire.
// lineOffset is added to the node's line (a chunk of steps is parsed on
// its own).
func decodeStep(doc *manifest.Document, lineOffset int) (Step, error) {
	file, line := doc.File, doc.Node.Line+lineOffset
	m, ok := doc.Value.(map[string]interface{})
	if !ok {
		return Step{}, &TraceError{File: file, Line: line, Msg: "a step is a mapping like {actor: user, update: {...}}"}
	}
	var w v1alpha1.Step
	if errs := typed.DecodeStrict(doc, &w); len(errs) > 0 {
		return Step{}, stepError(doc, errs[0], lineOffset)
	}
	var present []v1alpha1.Verb
	for _, v := range v1alpha1.Verbs() {
		if _, ok := m[string(v)]; ok {
			present = append(present, v)
		}
	}
	return FromWire(w, present, file, line)
}

// stepError words a strict decoding error of a step.
func stepError(doc *manifest.Document, e typed.FieldError, lineOffset int) error {
	line := e.Pos.Line + lineOffset
	msg := ""
	switch {
	case e.Kind == strict.Unknown && e.Parent() == "":
		msg = fmt.Sprintf("unknown step field %q", e.Field())
		if e.Suggestion != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
		}
		msg += " (verbs: update, updateStatus, request, check, upgrade, create, delete)"
	case e.Kind == strict.Unknown:
		msg = fmt.Sprintf("unknown %s field %q", e.Parent(), e.Field())
		if e.Suggestion != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
		}
		if len(e.Known) > 0 {
			msg += fmt.Sprintf(" (want %s)", strings.Join(e.Known, " or "))
		}
	case e.Kind == strict.Duplicate:
		msg = fmt.Sprintf("%s is given twice", e.Path)
	case e.Kind == strict.Type:
		msg = typeMessage(e)
	default:
		msg = e.Err.Error()
	}
	return &TraceError{File: doc.File, Line: line, Msg: msg}
}

// typeMessage words a mistyped field of a step or a header.
func typeMessage(e typed.FieldError) string {
	switch e.Path {
	case "update", "create":
		return fmt.Sprintf("%s needs an object", e.Path)
	case "updateStatus":
		return "updateStatus needs the new status as an object"
	case "check":
		return "check takes {} or {expect: Allow|Block}"
	case "delete":
		return "delete takes {} or {propagationPolicy: Orphan|Background|Foreground}"
	case "request":
		return "request takes {} or {token: TOKEN}"
	case "generation":
		return fmt.Sprintf("generation must be an integer, not a %s", e.Got)
	}
	if e.Got == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s must be a %s, not a %s", e.Path, wantWord(e.Want), e.Got)
}

func wantWord(goType string) string {
	switch {
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "*v1alpha1."), strings.HasPrefix(goType, "v1alpha1.Trace"):
		return "mapping"
	case strings.HasPrefix(goType, "[]"):
		return "list"
	case goType == "bool", goType == "*bool":
		return "boolean (true or false)"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "*int"):
		return "integer"
	}
	return "string"
}

// headerError words a strict decoding error of a StatusTrace's header.
func headerError(file string, e typed.FieldError) error {
	switch e.Kind {
	case strict.Unknown:
		msg := fmt.Sprintf("unknown StatusTrace field %q", e.Path)
		if e.Suggestion != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
		}
		known := append([]string(nil), e.Known...)
		sort.Strings(known)
		return &TraceError{File: file, Line: e.Pos.Line, Msg: msg + "; known fields: " + strings.Join(known, ", ")}
	case strict.Duplicate:
		return &TraceError{File: file, Line: e.Pos.Line, Msg: fmt.Sprintf("%s is given twice", e.Path)}
	case strict.Type:
		switch e.Path {
		case "recorded":
			return &TraceError{File: file, Line: e.Pos.Line, Msg: "recorded must be true or false"}
		case "statusSubresource":
			return &TraceError{File: file, Line: e.Pos.Line, Msg: "statusSubresource must be true or false"}
		case "initial":
			return &TraceError{File: file, Line: e.Pos.Line, Msg: "initial must be an object (the CR as first observed) or null"}
		case "operatorCondition":
			return &TraceError{File: file, Line: e.Pos.Line, Msg: "operatorCondition must be an object"}
		}
		return &TraceError{File: file, Line: e.Pos.Line, Msg: typeMessage(e)}
	}
	return &TraceError{File: file, Line: e.Pos.Line, Msg: e.Err.Error()}
}
