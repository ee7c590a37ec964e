package served

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/openapi"
	clienttesting "k8s.io/client-go/testing"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/source"
)

// servedDoc is an OpenAPI v3 discovery document as an apiserver serves
// it for a CRD's group version: the kind's component (with
// x-kubernetes-group-version-kind, metadata by $ref, nullable and
// int-or-string as the publisher writes them) beside ObjectMeta's.
const servedDoc = `{"openapi":"3.0.0","info":{"title":"Kubernetes","version":"unversioned"},"paths":{},
"components":{"schemas":{
 "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta":{"type":"object","properties":{"name":{"type":"string","default":""}}},
 "io.cool.v1.Cool":{"type":"object","x-kubernetes-group-version-kind":[{"group":"cool.io","kind":"Cool","version":"v1"}],
  "properties":{
   "apiVersion":{"type":"string"},"kind":{"type":"string"},
   "metadata":{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],"default":{}},
   "spec":{"type":"object","properties":{
     "count":{"type":"integer","format":"int64"},
     "text":{"type":"string","nullable":true},
     "either":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},
     "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
     "nested":{"type":"object","properties":{"n":{"type":"integer"}}},
     "list":{"type":"array","items":{"type":"string"}}}},
   "status":{"type":"object","properties":{"echo":{"type":"integer"}}}}},
 "io.cool.v1.CoolList":{"type":"object","x-kubernetes-group-version-kind":[{"group":"cool.io","kind":"CoolList","version":"v1"}]}}}}`

// fakeOpenAPI serves paths; Paths fails with err, and counts its calls.
type fakeOpenAPI struct {
	paths map[string]openapi.GroupVersion
	err   error
	calls int
}

func (f *fakeOpenAPI) Paths() (map[string]openapi.GroupVersion, error) {
	f.calls++
	return f.paths, f.err
}

type fakeGroupVersion struct {
	doc string
	err error
}

func (g fakeGroupVersion) Schema(string) ([]byte, error) { return []byte(g.doc), g.err }
func (g fakeGroupVersion) ServerRelativeURL() string     { return "/openapi/v3/apis/cool.io/v1" }

// TestTokens: the token types come from the served schema with the
// decision crd.Version.HandshakeTokens makes on a CRD; nothing is fetched
// where no token field needs a type; a schema that cannot be read, or a
// type that is neither integer nor string, is an error, never a guess.
func TestTokens(t *testing.T) {
	served := func(doc string) *fakeOpenAPI {
		return &fakeOpenAPI{paths: map[string]openapi.GroupVersion{"apis/cool.io/v1": fakeGroupVersion{doc: doc}}}
	}
	ack := func(specPath, annotation, statusPath string) *v1alpha1.Handshake {
		h := &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{SpecPath: specPath, Annotation: annotation}}
		if statusPath != "" {
			h.Ack = &v1alpha1.HandshakeAck{StatusPath: statusPath}
		}
		return h
	}
	str, integer := contract.TokenString, contract.TokenInteger
	tests := []struct {
		name      string
		handshake *v1alpha1.Handshake
		kind      string
		client    *fakeOpenAPI
		want      contract.Tokens
		fetched   bool
		err       string
	}{
		{name: "no handshake: nothing to type", client: &fakeOpenAPI{err: errors.New("not asked")}, want: contract.Tokens{Request: str, Ack: str}},
		{name: "an annotation request without an ack", handshake: ack("", "cool.io/request", ""), client: &fakeOpenAPI{err: errors.New("not asked")}, want: contract.Tokens{Request: str, Ack: str}},
		{name: "an integer spec field", handshake: ack(".spec.count", "", ""), client: served(servedDoc), want: contract.Tokens{Request: integer, Ack: str}, fetched: true},
		{name: "a nested integer field and an integer echo", handshake: ack(".spec.nested.n", "", ".status.echo"), client: served(servedDoc), want: contract.Tokens{Request: integer, Ack: integer}, fetched: true},
		{name: "an annotation request with an integer echo", handshake: ack("", "cool.io/request", ".status.echo"), client: served(servedDoc), want: contract.Tokens{Request: str, Ack: integer}, fetched: true},
		{name: "a nullable string", handshake: ack(".spec.text", "", ""), client: served(servedDoc), want: contract.Tokens{Request: str, Ack: str}, fetched: true},
		{name: "int-or-string", handshake: ack(".spec.either", "", ""), client: served(servedDoc), want: contract.Tokens{Request: str, Ack: str}, fetched: true},
		{name: "under preserved unknown fields", handshake: ack(".spec.free.token", "", ""), client: served(servedDoc), want: contract.Tokens{Request: str, Ack: str}, fetched: true},
		{name: "an array field", handshake: ack(".spec.list", "", ""), client: served(servedDoc), fetched: true,
			err: "the schema the cluster serves for Cool cool.io/v1: the schema types .spec.list (handshake.request.specPath) as array"},
		{name: "discovery fails", handshake: ack(".spec.count", "", ""), client: &fakeOpenAPI{err: errors.New("forbidden")}, fetched: true,
			err: "reading the cluster's OpenAPI v3 discovery: forbidden"},
		{name: "the group version is not served", handshake: ack(".spec.count", "", ""), client: &fakeOpenAPI{paths: map[string]openapi.GroupVersion{}}, fetched: true,
			err: "the cluster's OpenAPI v3 discovery has no apis/cool.io/v1 (is the CRD of Cool installed?)"},
		{name: "the schema cannot be fetched", handshake: ack(".spec.count", "", ""), fetched: true,
			client: &fakeOpenAPI{paths: map[string]openapi.GroupVersion{"apis/cool.io/v1": fakeGroupVersion{err: errors.New("timeout")}}},
			err:    "reading the OpenAPI v3 schema of apis/cool.io/v1: timeout"},
		{name: "no schema for the kind", handshake: ack(".spec.count", "", ""), kind: "Warm", client: served(servedDoc), fetched: true,
			err: "the OpenAPI v3 document of cool.io/v1 has no schema for kind Warm"},
		{name: "a document that is not JSON", handshake: ack(".spec.count", "", ""), client: served("<html>"), fetched: true,
			err: "reading the OpenAPI v3 document of cool.io/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := tt.kind
			if kind == "" {
				kind = "Cool"
			}
			src := &v1alpha1.StatusSource{APIVersion: "cool.io/v1", Kind: kind, Name: "cool", Handshake: tt.handshake}
			got, err := Tokens(tt.client, src)
			assert.Equal(t, tt.fetched, tt.client.calls > 0, "fetched")
			if tt.err != "" {
				require.Error(t, err)
				assert.True(t, strings.HasPrefix(err.Error(), tt.err), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestCheckNotServed: only the cluster's own answer that it does not
// serve the kind (discovery's 404, or a group version without the kind)
// is a *NotServedError, the one error a gate may read as "not
// installed"; discovery that failed otherwise (503, 429, a timeout) is
// another error, so the gate retries and fails closed.
func TestCheckNotServed(t *testing.T) {
	src := &v1alpha1.StatusSource{APIVersion: "cool.io/v1", Kind: "Cool", Name: "cool"}
	coolList := &metav1.APIResourceList{GroupVersion: "cool.io/v1", APIResources: []metav1.APIResource{
		{Name: "cools", Kind: "Cool", Namespaced: true}, {Name: "cools/status", Kind: "Cool", Namespaced: true}}}
	otherList := &metav1.APIResourceList{GroupVersion: "cool.io/v1", APIResources: []metav1.APIResource{{Name: "warms", Kind: "Warm"}}}
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		fail      error // what every discovery call answers, when set
		notServed bool  // a *NotServedError
		served    bool  // no error at all
	}{
		{name: "served", resources: []*metav1.APIResourceList{coolList}, served: true},
		{name: "the group version is not served (404)", notServed: true},
		{name: "the group version has no such kind", resources: []*metav1.APIResourceList{otherList}, notServed: true},
		{name: "discovery answers 503", resources: []*metav1.APIResourceList{coolList},
			fail: apierrors.NewServiceUnavailable("etcd is slow")},
		{name: "discovery answers 429", fail: apierrors.NewTooManyRequests("slow down", 1)},
		{name: "discovery times out", fail: apierrors.NewTimeoutError("the request", 1)},
		{name: "discovery is forbidden", fail: apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no"))},
		{name: "discovery cannot connect", fail: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &clienttesting.Fake{Resources: tt.resources}
			if tt.fail != nil {
				fake.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tt.fail })
			}
			dc := &fakediscovery.FakeDiscovery{Fake: fake}
			c := &source.Context{Source: src, Plural: "cools", Namespaced: true}
			errs := map[string]error{"Check": Check(dc, c)}
			if !tt.served { // served, Resolve goes on to OpenAPI, which the fake lacks
				_, errs["Resolve"] = Resolve(dc, src, "test")
			}
			for fn, err := range errs {
				var ns *NotServedError
				switch {
				case tt.served:
					assert.NoError(t, err, fn)
				case tt.notServed:
					require.ErrorAs(t, err, &ns, fn)
					assert.Contains(t, err.Error(), "is the CRD of Cool installed?", fn)
				default:
					require.Error(t, err, fn)
					assert.False(t, errors.As(err, &ns), "%s: %v is not the cluster saying the kind is not served", fn, err)
					assert.ErrorIs(t, err, tt.fail, fn)
				}
			}
		})
	}
}
