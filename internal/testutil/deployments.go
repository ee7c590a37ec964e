package testutil

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// DeploymentStandIn plays the deployment controller and the kubelet for
// the test tiers' kube-apiserver, which runs neither, until ctx ends:
// every 100 ms each Deployment whose status is behind its spec gets
// Available(d). It is what OLM's install
// check (pkg/controller/install/status_viewer.go, DeploymentStatus) and
// Helm's status watcher (kstatus) read.
func DeploymentStandIn(ctx context.Context, kube kubernetes.Interface) {
	for ctx.Err() == nil {
		list, err := kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				d := &list.Items[i]
				if d.Status.ObservedGeneration >= d.Generation {
					continue
				}
				_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
					cur, err := kube.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					cur.Status = Available(cur)
					_, err = kube.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: "deployment-controller-stand-in"})
					return err
				})
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Available is the status the deployment controller writes once every
// pod of d's template runs (pkg/controller/deployment, sync's status):
// observedGeneration, the replica counts, Available and Progressing with
// NewReplicaSetAvailable.
func Available(d *appsv1.Deployment) appsv1.DeploymentStatus {
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	now := metav1.Now()
	return appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: "ReplicaSet has successfully progressed.", LastUpdateTime: now, LastTransitionTime: now},
		},
	}
}
