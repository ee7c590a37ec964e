package validate

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/explore"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// The schema rules are decided by the apiserver's own code (package
// apiserver), not by reading the schema: the status-source CRD goes
// through the CRD registry's create, and three probes go through the
// custom resource's: the status write the gate depends on, the handshake
// request, and the example CR the console creates. What the apiserver
// refuses, prunes or keeps decides the findings; the schema is only read
// to point at the line a finding is about.

// probeTime is the lastTransitionTime of the probes' conditions.
const probeTime = "2024-01-01T00:00:00Z"

// probeResults is what the apiserver did with the probes.
type probeResults struct {
	// crd is the apiserver's refusal of the status-source CRD.
	crd *apiserver.Refusal
	// serveErr is set when the version cannot be served (the CRD is
	// refused): the probes did not run.
	serveErr error

	// statusRefused is the refusal of the status write, with the
	// condition status it carried.
	statusRefused       *apiserver.Refusal
	statusRefusedStatus string
	// conditionsKept: the conditions came back from the write.
	conditionsKept bool
	// anyConditions: a value for status.conditions that is not a list of
	// conditions was accepted and kept: the schema constrains nothing.
	anyConditions bool
	// conditionPruned are the fields of the first gated condition that
	// the gate reads (type, status, observedGeneration) and the status
	// write did not keep: the schema does not describe them, so the
	// apiserver prunes them (set only when the conditions are kept).
	conditionPruned []string
	// statusOGKept: status.observedGeneration survives the status write
	// (the condition's own, conditionOGKept).
	statusOGKept bool
	// anyConditionOG: a condition's observedGeneration that is an object
	// was accepted and kept: the schema does not describe it, it
	// survives only because unknown fields are kept (the CRD's
	// spec.preserveUnknownFields, which a v1beta1 CRD defaults to true, or
	// x-kubernetes-preserve-unknown-fields on the conditions).
	anyConditionOG bool
	// ogKeptOnlyByCRD: with spec.preserveUnknownFields false (as every
	// apiextensions.k8s.io/v1 CRD created today has it), the apiserver
	// prunes the condition's observedGeneration: only the CRD-wide
	// preservation keeps it.
	ogKeptOnlyByCRD bool
	// duplicatesAccepted: two conditions of one type were accepted.
	duplicatesAccepted bool
	// ackKept: the echoed token at ack.statusPath came back.
	ackKept bool
	// requestRefused is the refusal of the handshake request; requestKept
	// says whether the token came back.
	requestRefused *apiserver.Refusal
	requestKept    bool
	// reservedKept: a token written at .spec.upgradeRequest
	// (crd.ReservedRequestName, the field the verdict's RequestAck command
	// names when the handshake names none the CRD keeps) comes back, as
	// probe 2 would find it once the command is followed: the pruning
	// keeps it (the schema declares it, or the CRD keeps unknown fields
	// there, a v1beta1 CRD's defaulted spec.preserveUnknownFields among
	// them) and the schema's validation accepts it.
	reservedKept bool
	// exampleRefused is the refusal of the example CR's create.
	exampleRefused *apiserver.Refusal
	// exampleKey is the CSV annotation the example came from, and
	// exampleIndex its place in alm-examples (-1: the initialization
	// resource).
	exampleKey   string
	exampleIndex int
	// othersRefused are the refusals of the other examples of the kind
	// (every one the console offers is probed).
	othersRefused []exampleRefusal
	// tokens are the handshake token's types decided from the schema
	// (crd.Version.HandshakeTokens); tokenErrs the fields typed neither
	// integer nor string, which are not probed.
	tokens    contract.Tokens
	tokenErrs []*crd.TokenTypeError
}

// conditionOGKept: the first gated condition's own observedGeneration
// survives the status write (the conditions are kept, and it is not
// among what the write pruned).
func (r *probeResults) conditionOGKept() bool {
	return r.conditionsKept && !slices.Contains(r.conditionPruned, "observedGeneration")
}

type exampleRefusal struct {
	example bundle.Example
	refusal *apiserver.Refusal
}

// ProbeCache keeps the probes' results per CRD version, status source and
// example: a catalog repeats one CRD in many bundles, and a Resource
// compiles its CEL programs once. It is safe for concurrent use; the zero
// value is ready. Pass one in Options to share it across bundles.
type ProbeCache struct {
	mu      sync.Mutex
	results map[string]*probeEntry
	// searches are the protocol searches' results, by the probes' key
	// and what writes the OperatorCondition: the search reads nothing
	// else of a bundle it can model (source.FromLoaded, which is asked
	// first).
	searches map[string]*explore.Result
}

func (c *ProbeCache) getSearch(key string) (*explore.Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.searches[key]
	return r, ok
}

func (c *ProbeCache) putSearch(key string, r *explore.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.searches == nil || len(c.searches) >= maxProbeCache {
		c.searches = map[string]*explore.Result{}
	}
	c.searches[key] = r
}

const maxProbeCache = 256

// probeEntry is one key's probes: done closes when r is set. Callers of
// the key while they run wait for them instead of running them again
// (validate starts a bundle's probes while it is still loading it; a run
// of many bundles may probe one CRD from two at once).
type probeEntry struct {
	done chan struct{}
	r    *probeResults
}

// do returns the probes' results for key: run's, run once however many
// callers ask at once, and recalled after. A run that panics leaves no
// result: a caller that waited for it runs the probes itself.
func (c *ProbeCache) do(key string, run func() *probeResults) *probeResults {
	e, fresh := c.start(key)
	if fresh {
		c.fill(key, e, run)
	} else if <-e.done; e.r == nil {
		return run()
	}
	return e.r
}

// start returns key's entry, and whether it is new: its caller then
// fills it. A full cache starts again, keeping
// only the entries still running (their callers are waiting).
func (c *ProbeCache) start(key string) (e *probeEntry, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.results[key]; ok {
		return e, false
	}
	if c.results == nil {
		c.results = map[string]*probeEntry{}
	}
	if len(c.results) >= maxProbeCache {
		running := map[string]*probeEntry{}
		for k, e := range c.results {
			select {
			case <-e.done:
			default:
				running[k] = e
			}
		}
		c.results = running
	}
	e = &probeEntry{done: make(chan struct{})}
	c.results[key] = e
	return e, true
}

// fill sets key's new entry to run's results and closes it (when run
// panics, the entry goes, so that the probes run again when asked).
func (c *ProbeCache) fill(key string, e *probeEntry, run func() *probeResults) {
	defer func() {
		if e.r == nil {
			c.mu.Lock()
			if c.results[key] == e {
				delete(c.results, key)
			}
			c.mu.Unlock()
		}
		close(e.done)
	}()
	e.r = run()
}

// probes runs (or recalls) the probes for the bundle's status source.
func (ctx *Context) probes() *probeResults {
	if ctx.probe != nil {
		return ctx.probe
	}
	all := bundle.StatusSourceExamples(ctx.CSV.Obj, ctx.Source)
	cache := ctx.Options.Probes
	if cache == nil {
		ctx.probe = runProbes(ctx, all)
		return ctx.probe
	}
	ctx.probeKey = ctx.cacheKey(all)
	ctx.probe = cache.do(ctx.probeKey, func() *probeResults { return runProbes(ctx, all) })
	return ctx.probe
}

// startProbes starts the probes in the background unless the cache holds
// them or they run already; when it returns, the cache holds them (or
// will, once they end), so that probes() on a context of the same CSV
// and CRD waits for them instead of running them again.
func (ctx *Context) startProbes() {
	all := bundle.StatusSourceExamples(ctx.CSV.Obj, ctx.Source)
	key := ctx.cacheKey(all)
	e, fresh := ctx.Options.Probes.start(key)
	if fresh {
		go ctx.Options.Probes.fill(key, e, func() *probeResults { return runProbes(ctx, all) })
	}
}

// cacheKey is the probes' key in the cache: what they read, the CRD, the
// version, the source and the examples.
func (ctx *Context) cacheKey(all []bundle.Example) string {
	// The CRD by its text when it has one (hashing the file takes a
	// tenth of the time encoding a large CRD takes), else by its JSON.
	crdKey := ctx.CRD.Doc.Digest()
	if crdKey == "" {
		crdJSON, _ := json.Marshal(ctx.CRD.V1)
		if ctx.CRD.V1beta1 != nil {
			crdJSON, _ = json.Marshal(ctx.CRD.V1beta1)
		}
		crdKey = "json:" + string(crdJSON)
	}
	exJSON, _ := json.Marshal(all)
	return fmt.Sprintf("%x", sha256.Sum256([]byte(crdKey+"\x00"+ctx.Version.Name+"\x00"+ctx.Source.Marshal()+"\x00"+string(exJSON))))
}

// runProbes runs the probes with all the examples of the kind: the one
// the console creates is the base of the status and request probes, the
// others are each created on their own.
func runProbes(ctx *Context, all []bundle.Example) *probeResults {
	r := &probeResults{}
	var example map[string]interface{}
	primary := bundle.ConsoleExample(all, ctx.Source)
	if primary != nil {
		example, r.exampleKey, r.exampleIndex = primary.Object, primary.Key, primary.Index
	}
	r.tokens, r.tokenErrs = ctx.Version.HandshakeTokens(ctx.Source)
	var written runtime.Object = ctx.CRD.V1
	if ctx.CRD.V1beta1 != nil {
		written = ctx.CRD.V1beta1
	}
	rf, err := apiserver.ValidateCRD(written)
	switch {
	case err != nil:
		r.serveErr = err
		return r
	case rf != nil:
		r.crd = rf
		r.serveErr = rf
		return r
	}
	res, err := apiserver.NewResource(ctx.CRD.V1, ctx.Version.Name)
	if err != nil {
		r.serveErr = err
		return r
	}
	src := ctx.Source
	identity := map[string]interface{}{"apiVersion": src.APIVersion, "kind": src.Kind,
		"metadata": map[string]interface{}{"name": src.Name}}
	if src.Namespace != "" {
		identity["metadata"].(map[string]interface{})["namespace"] = src.Namespace
	}

	// The example CR, created as the console creates it.
	var base map[string]interface{}
	if example != nil {
		obj := map[string]interface{}{}
		for k, v := range example {
			obj[k] = v
		}
		obj["apiVersion"], obj["kind"] = src.APIVersion, src.Kind
		out, rf := res.Create(obj, clock)
		r.exampleRefused = rf
		base = out
	}
	// Every other example of the kind, each created on its own.
	for _, e := range all {
		if jsonobj.Equal(e.Object, example) {
			continue // the console's own, or a copy of it
		}
		obj := map[string]interface{}{}
		for k, v := range e.Object {
			obj[k] = v
		}
		obj["apiVersion"], obj["kind"] = src.APIVersion, src.Kind
		if _, rf := res.Create(obj, clock); rf != nil {
			r.othersRefused = append(r.othersRefused, exampleRefusal{example: e, refusal: rf})
		}
	}
	if base == nil {
		obj := jsonobj.MergePatch(identity, map[string]interface{}{"spec": map[string]interface{}{}})
		out, rf := res.Create(obj, clock)
		if rf != nil {
			// The spec requires what only a real CR has: probe the status
			// of an object as stored, without the create's checks.
			out, err = res.Stored(jsonobj.MergePatch(obj, map[string]interface{}{"metadata": map[string]interface{}{"generation": int64(1)}}))
			if err != nil {
				r.serveErr = err
				return r
			}
		}
		base = out
	}
	gen := generationOf(base)

	// The status write the gate depends on, True and then False.
	var ackPath []string
	if h := src.Handshake; src.Mode() == v1alpha1.HandshakeRequestAck && h.Ack != nil && h.Ack.StatusPath != "" && r.tokenTypeError("ack.statusPath") == nil {
		ackPath = v1alpha1.FieldPath(h.Ack.StatusPath)
	}
	status := func(s string) map[string]interface{} {
		var conds []interface{}
		for _, t := range src.ConditionTypes() {
			conds = append(conds, map[string]interface{}{"type": t, "status": s, "reason": "StatuscheckProbe",
				"message": "written by statuscheck's probe", "lastTransitionTime": probeTime, "observedGeneration": gen})
		}
		st := map[string]interface{}{"conditions": conds, "observedGeneration": gen}
		if ackPath != nil {
			st = jsonobj.MergePatch(st, jsonobj.NestedPatch(ackPath[1:], r.tokens.AckValue("1")))
		}
		return st
	}
	for _, s := range []string{contract.StatusTrue, contract.StatusFalse} {
		out, rf := res.UpdateStatus(base, status(s))
		if rf != nil {
			r.statusRefused, r.statusRefusedStatus = rf, s
			break
		}
		if s != contract.StatusTrue {
			continue
		}
		st, _ := out["status"].(map[string]interface{})
		conds, _ := st["conditions"].([]interface{})
		r.conditionsKept = len(conds) == len(src.ConditionTypes())
		if r.conditionsKept {
			// The first written condition, by its place: found by its
			// type, it would not be found without it.
			back, _ := conds[0].(map[string]interface{})
			for _, f := range gateFields {
				if _, ok := back[f]; !ok {
					r.conditionPruned = append(r.conditionPruned, f)
				}
			}
		}
		// Whatever became of the conditions: a schema that prunes a
		// condition's type must not make status.observedGeneration look
		// pruned too.
		_, r.statusOGKept = st["observedGeneration"]
		if ackPath != nil {
			v, ok, _ := unstructured.NestedFieldNoCopy(st, ackPath[1:]...)
			r.ackKept = ok && fmt.Sprint(v) == "1"
		}
	}
	// What the schema lets through: any value, and duplicates.
	out, rf := res.UpdateStatus(base, map[string]interface{}{"conditions": "statuscheck probe: not a list of conditions"})
	if rf == nil {
		st, _ := out["status"].(map[string]interface{})
		_, r.anyConditions = st["conditions"].(string)
	}
	// What the schema lets through at the condition's observedGeneration:
	// an object (neither an integer nor int-or-string) that comes back is
	// kept only as an unknown field.
	loose := status(contract.StatusTrue)
	loose["conditions"].([]interface{})[0].(map[string]interface{})["observedGeneration"] = map[string]interface{}{"statuscheckProbe": "not an integer"}
	if out, rf := res.UpdateStatus(base, loose); rf == nil {
		st, _ := out["status"].(map[string]interface{})
		conds, _ := st["conditions"].([]interface{})
		if c := findCondition(conds, src.ConditionTypes()[0]); c != nil {
			_, r.anyConditionOG = c["observedGeneration"].(map[string]interface{})
		}
	}
	if r.anyConditionOG && r.conditionOGKept() && ctx.CRD.V1.Spec.PreserveUnknownFields {
		r.ogKeptOnlyByCRD = !keptWhenPruning(ctx, base, status(contract.StatusTrue))
	}
	dup := status(contract.StatusTrue)
	dup["conditions"] = append(dup["conditions"].([]interface{}), jsonobj.MergePatch(dup["conditions"].([]interface{})[0].(map[string]interface{}), map[string]interface{}{"status": contract.StatusFalse}))
	if out, rf := res.UpdateStatus(base, dup); rf == nil {
		st, _ := out["status"].(map[string]interface{})
		conds, _ := st["conditions"].([]interface{})
		r.duplicatesAccepted = len(conds) > len(src.ConditionTypes())
	}

	// The handshake request: OLM's token at request.specPath, of the type
	// the schema gives it.
	requested := false
	if h := src.Handshake; src.Mode() == v1alpha1.HandshakeRequestAck && h.Request != nil && h.Request.SpecPath != "" && r.tokenTypeError("request.specPath") == nil {
		r.requestRefused, r.requestKept = requestProbe(res, base, h.Request.SpecPath, r.tokens)
		requested = h.Request.SpecPath == reservedRequestPath
	}
	// The same at the field the verdict's command would name, as the
	// handshake would then be: the handshake's own probe when it names
	// that field already.
	reserved := &v1alpha1.StatusSource{Handshake: &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck,
		Request: &v1alpha1.HandshakeRequest{SpecPath: reservedRequestPath}}}
	if tokens, errs := ctx.Version.HandshakeTokens(reserved); requested {
		r.reservedKept = r.requestKept
	} else if len(errs) == 0 {
		// Kept as handshake-path-missing will decide once the command is
		// followed: through an update (requestProbe), which the schema's
		// validation may refuse (a spec of one property at most, a CEL
		// rule). Where the pruning drops it already (Stored: the
		// apiserver's pruning as it stores the object), no update can keep
		// it, and none runs: an update validates the whole object, the
		// CRD's CEL rules included.
		if out, err := res.Stored(withToken(base, reservedRequestPath, tokens)); err == nil && holdsToken(out, reservedRequestPath) {
			_, r.reservedKept = requestProbe(res, base, reservedRequestPath, tokens)
		}
	}
	return r
}

// gateFields are the fields of a condition a gate reads: which condition
// it is, whether it is True, and whether it is fresh.
var gateFields = []string{"type", "status", "observedGeneration"}

// reservedRequestPath is the spec field the verdict suggests for OLM's
// request.
const reservedRequestPath = ".spec." + crd.ReservedRequestName

// requestProbe is probe 2, the handshake request: OLM's token, of the type
// the schema gives it, written at specPath of base. It returns the
// apiserver's refusal, or whether the token came back.
func requestProbe(res *apiserver.Resource, base map[string]interface{}, specPath string, tokens contract.Tokens) (*apiserver.Refusal, bool) {
	out, _, rf := res.Update(base, withToken(base, specPath, tokens))
	if rf != nil {
		return rf, false
	}
	return nil, holdsToken(out, specPath)
}

// withToken is base with OLM's request token 1 at specPath, of the type
// tokens give it.
func withToken(base map[string]interface{}, specPath string, tokens contract.Tokens) map[string]interface{} {
	return jsonobj.MergePatch(base, jsonobj.NestedPatch(v1alpha1.FieldPath(specPath), tokens.RequestValue("1")))
}

// holdsToken: obj still holds the token withToken wrote at specPath.
func holdsToken(obj map[string]interface{}, specPath string) bool {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, v1alpha1.FieldPath(specPath)...)
	return ok && fmt.Sprint(v) == "1"
}

// keptWhenPruning writes the status probe to the status source's version
// of the CRD with spec.preserveUnknownFields false, and says whether the
// first gated condition's observedGeneration comes back. It is true when
// that cannot be served (nothing then shows it would be pruned).
func keptWhenPruning(ctx *Context, base, status map[string]interface{}) bool {
	pruning := ctx.CRD.V1.DeepCopy()
	pruning.Spec.PreserveUnknownFields = false
	res, err := apiserver.NewResource(pruning, ctx.Version.Name)
	if err != nil {
		return true
	}
	stored, err := res.Stored(base)
	if err != nil {
		return true
	}
	out, rf := res.UpdateStatus(stored, status)
	if rf != nil {
		return true
	}
	st, _ := out["status"].(map[string]interface{})
	conds, _ := st["conditions"].([]interface{})
	c := findCondition(conds, ctx.Source.ConditionTypes()[0])
	if c == nil {
		return true // the conditions themselves go: conditions-schema-missing's business
	}
	_, kept := c["observedGeneration"]
	return kept
}

// tokenTypeError is the schema's refusal of a token type at a handshake
// field ("request.specPath"), nil when the field takes an integer or a
// string.
func (r *probeResults) tokenTypeError(field string) *crd.TokenTypeError {
	for _, e := range r.tokenErrs {
		if e.Field == field {
			return e
		}
	}
	return nil
}

// clock is the probes' time: any fixed one does.
func clock() time.Time { return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) }

func generationOf(obj map[string]interface{}) int64 {
	md, _ := obj["metadata"].(map[string]interface{})
	if g, ok := md["generation"].(int64); ok {
		return g
	}
	return 1
}

func findCondition(conds []interface{}, t string) map[string]interface{} {
	for _, c := range conds {
		if m, ok := c.(map[string]interface{}); ok && m["type"] == t {
			return m
		}
	}
	return nil
}

// schemaAt points at the schema node that describes an object's field
// path ("status.conditions[0].observedGeneration"): as deep as the
// schema describes it. The schema is read here only to find the line.
func (ctx *Context) schemaAt(objPath string) manifest.Path {
	p := ctx.Version.SchemaPath
	s := ctx.Version.Schema
	if s == nil {
		return ctx.Version.Path
	}
	for _, e := range manifest.ParsePath(objPath) {
		name, isIndex := e.Name()
		switch {
		case isIndex && s.Items != nil && s.Items.Schema != nil:
			p, s = p.Child("items"), s.Items.Schema
		case !isIndex && s.Properties != nil:
			next, ok := s.Properties[name]
			if !ok {
				return p.Child("properties") // where the field would go
			}
			p, s = p.Child("properties", name), &next
		case !isIndex && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			p, s = p.Child("additionalProperties"), s.AdditionalProperties.Schema
		default:
			return p
		}
	}
	return p
}

// crdPath turns a field path of the apiserver's internal CRD into the path
// in the file as written: the internal version holds a schema, the
// subresources and the printer columns once under spec when every version
// has the same (spec.validation, spec.subresources), which the file has
// under the version.
func (ctx *Context) crdPath(field string) manifest.Path {
	p := manifest.ParsePath(field)
	swap := func(prefix manifest.Path, to manifest.Path) bool {
		if len(p) < len(prefix) || p[:len(prefix)].String() != prefix.String() {
			return false
		}
		p = append(append(manifest.Path{}, to...), p[len(prefix):]...)
		return true
	}
	if ctx.Version != nil {
		_ = swap(manifest.NewPath("spec", "validation", "openAPIV3Schema"), ctx.Version.SchemaPath) ||
			swap(manifest.NewPath("spec", "subresources"), ctx.Version.SubresourcesPath)
	}
	return p
}
