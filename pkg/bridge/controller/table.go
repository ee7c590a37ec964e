package controller

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/statuscheck/statuscheck/pkg/contract"
)

// tableAccept asks the apiserver for a list as a meta.k8s.io Table: the
// CSV CRD's printer columns (operator-framework/api crds,
// operators.coreos.com_clusterserviceversions.yaml: Display, Version,
// Release, Replaces, Phase) without the objects.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// tableClient is a REST client for the CSV resource's group version.
func tableClient(cfg *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	gv := contract.CSVResource.GroupVersion()
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	// client-go's scheme decodes the apiserver's Status errors (a 403
	// says "forbidden" and what, not "unknown").
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.ContentType = "application/json"
	return rest.RESTClientFor(c)
}

// replacesTable lists the namespace's CSVs as their name and
// spec.replaces, from the server's table.
func replacesTable(ctx context.Context, c rest.Interface, namespace string) (map[string]string, error) {
	raw, err := c.Get().Namespace(namespace).Resource(contract.CSVResource.Resource).
		Param("includeObject", string(metav1.IncludeNone)).SetHeader("Accept", tableAccept).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var t metav1.Table
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("decoding the CSV table: %w", err)
	}
	name, replaces := -1, -1
	for i, col := range t.ColumnDefinitions {
		switch col.Name {
		case "Name":
			name = i
		case "Replaces":
			replaces = i
		}
	}
	if name < 0 || replaces < 0 {
		return nil, fmt.Errorf("the CSV table has no Name and Replaces columns (%d columns)", len(t.ColumnDefinitions))
	}
	out := map[string]string{}
	for _, row := range t.Rows {
		if len(row.Cells) <= max(name, replaces) {
			continue
		}
		n, _ := row.Cells[name].(string)
		r, _ := row.Cells[replaces].(string)
		out[n] = r
	}
	return out, nil
}
