package crd

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

func decode(t *testing.T, yaml string) (*CRD, error) {
	docs, err := manifest.Parse("crd.yaml", []byte(yaml), manifest.DefaultLimits)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	return Decode(docs[0])
}

func TestDecodeV1(t *testing.T) {
	c, err := decode(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Thing, plural: things}
  versions:
  - name: v1
    served: yes
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object}
  - name: v2
    served: false
    storage: false
`)
	require.NoError(t, err)
	assert.Equal(t, "example.com", c.Group())
	assert.Equal(t, "Thing", c.Kind())
	assert.Equal(t, "things", c.Plural())
	assert.Equal(t, "things.example.com", c.Name())
	assert.False(t, c.Namespaced())
	assert.Nil(t, c.V1beta1)
	v1 := c.Version("v1")
	require.NotNil(t, v1)
	assert.True(t, v1.Served, "YAML 1.1 yes is true, as in Kubernetes")
	assert.True(t, v1.StatusSubresource)
	assert.NotNil(t, v1.Schema)
	assert.Equal(t, "spec.versions[0].schema.openAPIV3Schema", v1.SchemaPath.String())
	v2 := c.Version("v2")
	require.NotNil(t, v2)
	assert.False(t, v2.Served)
	assert.Nil(t, v2.Schema)
	assert.Nil(t, c.Version("v3"))
	assert.Len(t, c.Versions(), 2)
}

func TestDecodeV1beta1PerVersionSchema(t *testing.T) {
	c, err := decode(t, `apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, properties: {status: {type: object}}}
    subresources: {status: {}}
`)
	require.NoError(t, err)
	require.NotNil(t, c.V1beta1)
	v := c.Version("v1")
	require.NotNil(t, v)
	assert.True(t, v.StatusSubresource)
	require.NotNil(t, v.Schema)
	assert.Contains(t, v.Schema.Properties, "status")
	assert.Equal(t, "spec.versions[0].schema.openAPIV3Schema", v.SchemaPath.String())
	assert.Equal(t, "spec.versions[0].subresources", v.SubresourcesPath.String())
	assert.True(t, c.Namespaced())
}

func TestDecodeErrors(t *testing.T) {
	_, err := decode(t, "apiVersion: apiextensions.k8s.io/v2\nkind: CustomResourceDefinition\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unsupported CustomResourceDefinition apiVersion "apiextensions.k8s.io/v2"`)

	_, err = decode(t, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  versions: {name: v1}\n")
	require.Error(t, err)
	var me *manifest.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 4, me.Pos.Line)
}

func TestHandshakeTokens(t *testing.T) {
	const head = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Thing, plural: things}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              upgradeRequest: {type: %s}
          status:
            type: object
            %s
`
	src := func(request, ack string) *v1alpha1.StatusSource {
		h := &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{SpecPath: request}}
		if request == "" {
			h.Request.Annotation = "example.com/upgrade-request"
		}
		if ack != "" {
			h.Ack = &v1alpha1.HandshakeAck{StatusPath: ack}
		}
		return &v1alpha1.StatusSource{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", Handshake: h}
	}
	tests := []struct {
		name          string
		requestType   string
		status        string
		src           *v1alpha1.StatusSource
		want          contract.Tokens
		wantErrFields []string
	}{
		{name: "string spec, no ack", requestType: "string", src: src(".spec.upgradeRequest", ""),
			want: contract.Tokens{Request: contract.TokenString, Ack: contract.TokenString}},
		{name: "integer spec and ack", requestType: "integer", status: "properties: {observed: {type: integer}}", src: src(".spec.upgradeRequest", ".status.observed"),
			want: contract.Tokens{Request: contract.TokenInteger, Ack: contract.TokenInteger}},
		{name: "annotation request is a string, integer ack", requestType: "integer", status: "properties: {observed: {type: integer}}", src: src("", ".status.observed"),
			want: contract.Tokens{Request: contract.TokenString, Ack: contract.TokenInteger}},
		{name: "an ack the status keeps untyped", requestType: "string", status: "x-kubernetes-preserve-unknown-fields: true", src: src(".spec.upgradeRequest", ".status.observed"),
			want: contract.Tokens{Request: contract.TokenString, Ack: contract.TokenString}},
		{name: "an ack under additionalProperties of integers", requestType: "string", status: "additionalProperties: {type: integer}", src: src(".spec.upgradeRequest", ".status.observed"),
			want: contract.Tokens{Request: contract.TokenString, Ack: contract.TokenInteger}},
		{name: "an undeclared ack is pruned, a string here", requestType: "string", src: src(".spec.upgradeRequest", ".status.observed"),
			want: contract.Tokens{Request: contract.TokenString, Ack: contract.TokenString}},
		{name: "boolean request", requestType: "boolean", src: src(".spec.upgradeRequest", ""),
			want: contract.Tokens{Request: contract.TokenString, Ack: contract.TokenString}, wantErrFields: []string{"request.specPath"}},
		{name: "number request and object ack", requestType: "number", status: "properties: {observed: {type: object}}", src: src(".spec.upgradeRequest", ".status.observed"),
			want: contract.Tokens{Request: contract.TokenString, Ack: contract.TokenString}, wantErrFields: []string{"request.specPath", "ack.statusPath"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := decode(t, fmt.Sprintf(head, tt.requestType, tt.status))
			require.NoError(t, err)
			got, errs := c.Version("v1").HandshakeTokens(tt.src)
			assert.Equal(t, tt.want, got)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			assert.Equal(t, tt.wantErrFields, fields)
		})
	}
}
