// Copyright The computedomain-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package daemon

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// CliqueWatch keeps the latest version of one NVLink clique's IMEXClique, the
// ensemble the controller lists for the long-lived daemons of the Clique IMEX
// mode, from a watch on that object alone.
type CliqueWatch struct {
	*objectWatch[*v1beta1.IMEXClique, *v1beta1.IMEXCliqueList]
	cliqueID string
}

// NewCliqueWatch returns a watch of the IMEXClique of cliqueID in namespace; Run starts it.
func NewCliqueWatch(c client.WithWatch, namespace, cliqueID string) *CliqueWatch {
	key := client.ObjectKey{Namespace: namespace, Name: v1beta1.IMEXCliqueName(cliqueID)}
	return &CliqueWatch{
		objectWatch: newObjectWatch(c, key, "IMEXClique",
			func() *v1beta1.IMEXClique { return &v1beta1.IMEXClique{} },
			func() *v1beta1.IMEXCliqueList { return &v1beta1.IMEXCliqueList{} },
			func(q *v1beta1.IMEXClique) bool { return q.Spec.CliqueID == cliqueID }),
		cliqueID: cliqueID,
	}
}

// Ensemble returns the nodes the controller lists in the clique's ensemble
// (none before the IMEXClique exists). It is an EnsembleGetter.
func (w *CliqueWatch) Ensemble(context.Context) ([]Peer, error) {
	q, ok := w.get()
	if !ok {
		return nil, nil
	}
	peers := make([]Peer, 0, len(q.Status.Nodes))
	for _, n := range q.Status.Nodes {
		peers = append(peers, Peer{NodeName: n.Name, IPAddress: n.IPAddress, Index: n.Index})
	}
	return peers, nil
}
