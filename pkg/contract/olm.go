package contract

import "k8s.io/apimachinery/pkg/runtime/schema"

// OLM's two resources the contract reads on a cluster, as OLM v0 serves
// them (operator-framework/api: pkg/operators/v1alpha1
// ClusterServiceVersion, pkg/operators/v2 OperatorCondition; their CRDs'
// plurals): the CSVs, where OLM's gate sits, and the OperatorCondition it
// reads.
var (
	CSVResource               = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "clusterserviceversions"}
	OperatorConditionResource = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v2", Resource: "operatorconditions"}
)
