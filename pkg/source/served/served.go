// Package served resolves a status source on the cluster that serves it,
// for the commands that run against a cluster (gate, bridge): the kind's
// resource and scope from discovery, the handshake's token types from the
// schema the cluster serves (OpenAPI v3 discovery). It is apart from
// package source, which works from files, so that the commands that read
// no cluster do not link client-go's discovery and its typed clients'
// scheme, which every process would initialise.
package served

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/source"
)

// Resolve resolves src on the cluster that serves it, for a bridge
// that has the status source but not its CRD: the kind's resource and
// scope from discovery (the group version's resource list), the token
// types from the schema the cluster serves (Tokens). There is no
// CRD, so StatusSubresource, CRD and Resource stay nil; from says where
// src came from.
func Resolve(dc discovery.DiscoveryInterface, src *v1alpha1.StatusSource, from string) (*source.Context, error) {
	list, err := resources(dc, src)
	if err != nil {
		return nil, err
	}
	for _, r := range list.APIResources {
		if r.Kind != src.Kind || strings.Contains(r.Name, "/") {
			continue
		}
		tokens, err := Tokens(dc.OpenAPIV3(), src)
		if err != nil {
			return nil, err
		}
		return &source.Context{Source: src, Plural: r.Name, Namespaced: r.Namespaced, Tokens: tokens, From: from}, nil
	}
	return nil, &NotServedError{GroupVersion: src.GroupVersion().String(), Kind: src.Kind}
}

// Check checks that the cluster serves c's resource (c.Plural), so that
// a kind that is not installed is told apart from a CR that is missing.
// It returns a *NotServedError only when the cluster said so; any other
// failure to ask (a timeout, 429, 5xx, no permission) is another error,
// which a caller must not read as "not installed".
func Check(dc discovery.DiscoveryInterface, c *source.Context) error {
	list, err := resources(dc, c.Source)
	if err != nil {
		return err
	}
	for _, r := range list.APIResources {
		if r.Name == c.Plural {
			return nil
		}
	}
	return &NotServedError{GroupVersion: c.Source.GroupVersion().String(), Kind: c.Source.Kind, Resource: c.Plural}
}

// NotServedError is the cluster's answer that it does not serve a status
// source's kind: discovery's 404 for the group version, or a group
// version whose resource list has no such kind. It is the only error
// that means "the CRD is not installed"; Err is discovery's 404, if that
// was the answer.
type NotServedError struct {
	GroupVersion string
	Kind         string
	Resource     string // the plural asked for, when it was known
	Err          error
}

func (e *NotServedError) Error() string {
	what := "kind " + e.Kind
	if e.Resource != "" {
		what = e.Resource
	}
	msg := fmt.Sprintf("the cluster serves no %s in %s (is the CRD of %s installed?)", what, e.GroupVersion, e.Kind)
	if e.Err != nil {
		msg = fmt.Sprintf("the cluster serves no %s (is the CRD of %s installed?): %v", e.GroupVersion, e.Kind, e.Err)
	}
	return msg
}

func (e *NotServedError) Unwrap() error { return e.Err }

// resources is discovery's resource list of src's group version; a 404
// is a *NotServedError, any other failure is wrapped as it came.
func resources(dc discovery.DiscoveryInterface, src *v1alpha1.StatusSource) (*metav1.APIResourceList, error) {
	gv := src.GroupVersion()
	list, err := dc.ServerResourcesForGroupVersion(gv.String())
	switch {
	case apierrors.IsNotFound(err):
		return nil, &NotServedError{GroupVersion: gv.String(), Kind: src.Kind, Err: err}
	case err != nil:
		return nil, fmt.Errorf("discovering %s (the resources of %s): %w", gv, src.Kind, err)
	case list == nil:
		return nil, fmt.Errorf("discovering %s (the resources of %s): an empty answer", gv, src.Kind)
	}
	return list, nil
}

// Tokens decides the JSON types of src's handshake tokens from the
// schema the cluster serves for its kind, read through OpenAPI v3
// discovery (the apis/GROUP/VERSION document; discovery is open to every
// authenticated user, so it needs no RBAC), with the decision
// crd.Version.HandshakeTokens makes on a CRD. It is for a bridge that has
// the status source but not its CRD. Nothing is fetched when the
// handshake has no token field to type (no handshake, an annotation
// request without an ack path). A schema it cannot read, or a type that is
// neither integer nor string, is an error: a caller must not guess.
func Tokens(client openapi.Client, src *v1alpha1.StatusSource) (contract.Tokens, error) {
	r := src.Request()
	if (r == nil || r.SpecPath == "") && src.AckPath() == nil {
		return contract.Tokens{Request: contract.TokenString, Ack: contract.TokenString}, nil
	}
	gv := src.GroupVersion()
	path := "apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "api/" + gv.Version
	}
	paths, err := client.Paths()
	if err != nil {
		return contract.Tokens{}, fmt.Errorf("reading the cluster's OpenAPI v3 discovery: %w", err)
	}
	gvPaths, ok := paths[path]
	if !ok {
		return contract.Tokens{}, fmt.Errorf("the cluster's OpenAPI v3 discovery has no %s (is the CRD of %s installed?)", path, src.Kind)
	}
	doc, err := gvPaths.Schema(runtime.ContentTypeJSON)
	if err != nil {
		return contract.Tokens{}, fmt.Errorf("reading the OpenAPI v3 schema of %s: %w", path, err)
	}
	v, err := crd.ServedVersion(doc, gv.WithKind(src.Kind))
	if err != nil {
		return contract.Tokens{}, err
	}
	tokens, typeErrs := v.HandshakeTokens(src)
	if err := crd.JoinTokenTypeErrors(typeErrs); err != nil {
		return contract.Tokens{}, fmt.Errorf("the schema the cluster serves for %s %s: %w", src.Kind, src.APIVersion, err)
	}
	return tokens, nil
}
