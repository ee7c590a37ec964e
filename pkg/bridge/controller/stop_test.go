package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// A bridge stopped before it wrote anything, whose OperatorCondition
// cannot be read, has nothing of its own to withdraw: its stop says so,
// not "could not withdraw Upgradeable=True".
func TestStopWithNothingWrittenIsNotAnError(t *testing.T) {
	cool := schema.GroupVersionResource{Group: "cool.operators.corp", Version: "v1beta1", Resource: "cooloperators"}
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		cool: "CoolOperatorList", contract.OperatorConditionResource: "OperatorConditionList", contract.CSVResource: "ClusterServiceVersionList"})
	c.PrependReactor("get", contract.OperatorConditionResource.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(contract.OperatorConditionResource.GroupResource(), "cool.v1", nil)
	})
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	r, err := NewWithClient(c, Options{Source: &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool"},
		Resource: cool, Namespaced: true, Namespace: "ns", ConditionName: "cool.v1", Resync: 50 * time.Millisecond,
		Log: log, Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.NoError(t, r.Start(ctx))
	mu.Lock()
	all := strings.Join(lines, "\n")
	mu.Unlock()
	assert.NotContains(t, all, "could not withdraw")
	assert.Contains(t, all, "nothing to withdraw")
}
