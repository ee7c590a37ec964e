package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
)

// The writer marshals api/v1alpha1's types into the layout a person reads
// and a killed writer cannot break: the header one field per line, each
// step one line ("- {actor: user, update: {...}}"), written in one Write.
// A line is a YAML flow mapping: the format's own keys bare, Kubernetes
// objects as compact JSON (which is YAML), the format's small option
// structs (tagged trace:"flow") as flow mappings, and a string bare when it
// is a plain word YAML reads back as the same string.

// Header is what a StatusTrace says before its steps.
type Header struct {
	Name, Comment     string
	Source            *v1alpha1.StatusSource
	StatusSubresource bool
	// Recorded marks a trace recorded from a cluster (statuscheck record).
	Recorded bool
	// Bridge marks a trace of the bridge's protocol (StatusTrace.Bridge).
	Bridge bool
	// Initial is the CR at the start (nil: not created yet);
	// OperatorCondition the one the gate reads, if given.
	Initial, OperatorCondition map[string]interface{}
}

// Wire is the header as api/v1alpha1's StatusTrace (without steps).
func (h Header) Wire() v1alpha1.StatusTrace {
	sub := h.StatusSubresource
	t := v1alpha1.StatusTrace{APIVersion: v1alpha1.GroupVersion, Kind: v1alpha1.TraceKind,
		Metadata: v1alpha1.TraceMeta{Name: h.Name}, StatusSubresource: &sub, Recorded: h.Recorded, Bridge: h.Bridge,
		Initial: h.Initial, OperatorCondition: h.OperatorCondition}
	if h.Source != nil {
		t.StatusSource = json.RawMessage(h.Source.Marshal())
	}
	return t
}

// YAML renders the header, comment lines first, up to and including
// "steps:".
func (h Header) YAML() string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(h.Comment), "\n") {
		fmt.Fprintf(&b, "# %s\n", line)
	}
	w := h.Wire()
	v := reflect.ValueOf(w)
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		name, omit := jsonField(f)
		if name == "steps" || (omit && v.Field(i).IsZero()) {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", name, flowValue(f, v.Field(i)))
	}
	b.WriteString("steps:\n")
	return b.String()
}

// StepLine renders a step as one line of a StatusTrace's steps list
// ("- {actor: ..., ...}\n"), with what was recorded of it.
func StepLine(st Step) string { return "- " + flow(reflect.ValueOf(st.Wire())) + "\n" }

// StepJSON renders a step as JSON, as the trace format holds it.
func StepJSON(st Step) json.RawMessage {
	return json.RawMessage(jsonobj.Compact(st.Wire()))
}

// Write renders a whole StatusTrace: the header, then one line per step.
func Write(h Header, steps []Step) []byte {
	var b bytes.Buffer
	b.WriteString(h.YAML())
	for _, st := range steps {
		b.WriteString(StepLine(st))
	}
	return b.Bytes()
}

// flow renders a struct as a flow mapping, fields in declaration order.
func flow(v reflect.Value) string {
	var parts []string
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		name, omit := jsonField(f)
		if name == "" || (omit && v.Field(i).IsZero()) {
			continue
		}
		parts = append(parts, name+": "+flowValue(f, v.Field(i)))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func flowValue(f reflect.StructField, v reflect.Value) string {
	switch f.Tag.Get("trace") {
	case "plain": // a constant of the format, written as it reads
		return v.String()
	case "flow":
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		return flow(v)
	}
	if v.Kind() == reflect.String && word(v.String()) {
		return v.String()
	}
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	return jsonobj.Compact(v.Interface())
}

var wordRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

// word: a string YAML reads back unquoted as the same string (letters and
// digits, and none of YAML 1.1's booleans or null).
func word(s string) bool {
	if !wordRE.MatchString(s) {
		return false
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}

func jsonField(f reflect.StructField) (name string, omitEmpty bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "-" || !f.IsExported() {
		return "", false
	}
	return name, strings.Contains(opts, "omitempty")
}
