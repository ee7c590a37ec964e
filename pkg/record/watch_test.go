package record

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

var coolGVR = schema.GroupVersionResource{Group: "cool.operators.corp", Version: "v1beta1", Resource: "cooloperators"}

func fakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		coolGVR: "CoolOperatorList", csvGVR: "ClusterServiceVersionList", ocGVR: "OperatorConditionList",
	}, objs...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // generous: -race on a busy machine
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatchExpiryRelistsAndDiffs: the first watch of the CR ends with
// "resource version too old" after a write it never delivered; Run lists
// again, gives the change it missed once, and the next watch's change
// follows. No step is lost and none doubled.
func TestWatchExpiryRelistsAndDiffs(t *testing.T) {
	start := cr(1, "100", "PostgreSQL", "True", 1, "cool-operator", true, 0)
	dyn := fakeClient(start)
	first, second := watch.NewFake(), watch.NewFake()
	var mu sync.Mutex
	watches, firstRV, resumed := 0, "", false
	dyn.PrependWatchReactor("cooloperators", func(a k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		watches++
		rv := a.(k8stesting.WatchActionImpl).WatchRestrictions.ResourceVersion
		if watches == 1 {
			firstRV = rv
			return true, first, nil
		}
		// As the apiserver does, refuse a watch from a version that has
		// expired; the tracker serves the others, delivering what
		// changed after the version asked for.
		if rv == firstRV {
			return true, nil, apierrors.NewResourceExpired("too old resource version")
		}
		// The watch from the relist's version: the test delivers its
		// events itself, so none is lost to the fake tracker's race
		// between answering the watch and registering it.
		if !resumed {
			resumed = true
			return true, second, nil
		}
		return false, nil, nil
	})
	out := &testutil.SyncBuffer{}
	rec := New(Options{Source: testSource(t), StatusSubresource: true, Out: out, Now: func() time.Time { return clock0 }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, dyn, "https://fake", Target{Resource: coolGVR, Namespaced: true, Namespace: "cool"}, rec, func(string, ...interface{}) {})
	}()
	waitFor(t, "the first watch", func() bool { mu.Lock(); defer mu.Unlock(); return watches >= 1 })
	res := dyn.Resource(coolGVR).Namespace("cool")
	// A write the first watch never delivers.
	_, err := res.Update(ctx, cr(2, "101", "MariaDB", "True", 1, "kubectl-edit", false, 1), metav1.UpdateOptions{})
	require.NoError(t, err)
	first.Error(&apierrors.NewResourceExpired("too old resource version: 100 (101)").ErrStatus)
	// Only after the relist (the refused watch from the expired version
	// counts as a watch too) does the next write go to the new watch.
	waitFor(t, "the watch after the relist", func() bool { mu.Lock(); defer mu.Unlock(); return resumed })
	next := cr(2, "102", "MariaDB", "False", 2, "cool-operator", true, 2)
	_, err = res.Update(ctx, next, metav1.UpdateOptions{})
	require.NoError(t, err)
	second.Modify(next)
	waitFor(t, "two steps", func() bool {
		if strings.Count(out.String(), "\n- {") == 2 {
			return true
		}
		return false
	})
	time.Sleep(50 * time.Millisecond) // nothing more may come
	cancel()
	require.NoError(t, <-done)
	got := out.String()
	assert.Equal(t, 2, strings.Count(got, "\n- {"), got)
	assert.Contains(t, got, `resourceVersion: "101"`, "the write the expired watch missed comes from the relist")
	assert.Contains(t, got, `resourceVersion: "102"`)
	sum, _ := replay(t, got, []contract.Policy{contract.PolicyOLM})
	assert.Equal(t, 2, sum.Steps)
}

// TestRunErrors: what a user meets gets one line that says what to do.
func TestRunErrors(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: coolGVR.Group, Resource: "cooloperators"}, "", errors.New(`User "dev" cannot list resource "cooloperators"`))
	for _, tc := range []struct {
		name      string
		react     func(k8stesting.Action) (bool, runtime.Object, error)
		wantError string
		wantNote  string
	}{
		{
			name: "forbidden list of the CR",
			react: func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetResource() == coolGVR {
					return true, nil, forbidden
				}
				return false, nil, nil
			},
			wantError: "the cluster forbids this: list cooloperators.cool.operators.corp in namespace cool",
		},
		{
			name: "the CR's kind is not served",
			react: func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetResource() == coolGVR {
					return true, nil, apierrors.NewNotFound(schema.GroupResource{}, "")
				}
				return false, nil, nil
			},
			wantError: "the cluster does not serve cooloperators.cool.operators.corp version v1beta1 (is its CRD installed?)",
		},
		{
			name: "no OLM: CSVs are not served, and the recording goes on",
			react: func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetResource() == csvGVR {
					return true, nil, apierrors.NewNotFound(schema.GroupResource{}, "")
				}
				return false, nil, nil
			},
			wantNote: "the cluster does not serve clusterserviceversions.operators.coreos.com version v1alpha1 (is its CRD installed?); OLM's steps from them are left out",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := fakeClient(cr(1, "100", "PostgreSQL", "True", 1, "cool-operator", true, 0))
			dyn.PrependReactor("list", "*", tc.react)
			rec := New(Options{Source: testSource(t), Out: &testutil.SyncBuffer{}, Now: func() time.Time { return clock0 }})
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			var notes []string
			err := run(ctx, dyn, "https://fake", Target{Resource: coolGVR, Namespaced: true, Namespace: "cool"}, rec, func(f string, args ...interface{}) {
				notes = append(notes, fmt.Sprintf(f, args...))
			})
			if tc.wantError != "" {
				require.Error(t, err)
				assert.True(t, strings.HasPrefix(err.Error(), tc.wantError), "error: %v", err)
				return
			}
			require.NoError(t, err)
			assert.Contains(t, notes, tc.wantNote)
		})
	}
}
