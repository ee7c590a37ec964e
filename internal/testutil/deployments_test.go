package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// TestDeploymentStandIn: a Deployment behind its spec is made available
// at its generation with its replicas; one that is current is left alone.
func TestDeploymentStandIn(t *testing.T) {
	behind := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "behind", Namespace: "ns", Generation: 3},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2))}}
	current := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "current", Namespace: "ns", Generation: 1},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 5}}
	kube := fake.NewClientset(behind, current)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go DeploymentStandIn(ctx, kube)

	require.Eventually(t, func() bool {
		d, err := kube.AppsV1().Deployments("ns").Get(ctx, "behind", metav1.GetOptions{})
		return err == nil && d.Status.ObservedGeneration == 3
	}, 10*time.Second, 10*time.Millisecond)
	d, err := kube.AppsV1().Deployments("ns").Get(ctx, "behind", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), d.Status.AvailableReplicas)
	require.Len(t, d.Status.Conditions, 2)
	assert.Equal(t, appsv1.DeploymentAvailable, d.Status.Conditions[0].Type)
	assert.Equal(t, "NewReplicaSetAvailable", d.Status.Conditions[1].Reason)
	c, err := kube.AppsV1().Deployments("ns").Get(ctx, "current", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(5), c.Status.Replicas, "a current Deployment's status is not written")
}
