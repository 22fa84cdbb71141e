package computedomain

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestClientNodeLabelerKeepsOtherLabels(t *testing.T) {
	ctx := context.Background()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{
		"nvidia.com/gpu.clique":                     "c.1",
		"computedomain.resource.nvidia.com/old-uid": "true",
	}}}
	kube := fake.NewClientset(node)
	l := ClientNodeLabeler{Client: kube, NodeName: testNode}
	if err := l.SetDomainLabels(ctx, map[types.UID]bool{"new-uid": true, "old-uid": false}); err != nil {
		t.Fatal(err)
	}
	got, err := kube.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"nvidia.com/gpu.clique": "c.1", "computedomain.resource.nvidia.com/new-uid": "true"}
	if diff := cmp.Diff(want, got.Labels); diff != "" {
		t.Errorf("node labels (-want +got):\n%s", diff)
	}
	uids, err := l.DomainLabels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(uids)
	if diff := cmp.Diff([]types.UID{"new-uid"}, uids); diff != "" {
		t.Errorf("domain labels (-want +got):\n%s", diff)
	}
}
