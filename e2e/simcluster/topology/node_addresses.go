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

package topology

import "fmt"

// Node IPs are 127.0.A.B with B in 1..NodesPerAddressOctet and A in
// 1..MaxAddressOctet; the node agents hand pods 127.A.B.x, so one value of A
// covers the node and pod addresses of NodesPerAddressOctet nodes. A cluster
// uses the consecutive values addressBase+1, addressBase+2, ... of A, so that
// clusters with disjoint blocks never share an address.
const (
	NodesPerAddressOctet = 250
	MaxAddressOctet      = 255
)

// NodeIP is the address of the i-th node (from 0) of a cluster whose address
// block starts after addressBase: 127.0.<addressBase+1+i/250>.<1+i%250>.
func NodeIP(addressBase, i int) (string, error) {
	if i < 0 {
		return "", fmt.Errorf("node index %d: must be >= 0", i)
	}
	if err := checkAddressBlock(addressBase, 1+i/NodesPerAddressOctet); err != nil {
		return "", fmt.Errorf("node %d: %w", i, err)
	}
	return nodeIP(addressBase, i), nil
}

func nodeIP(addressBase, i int) string {
	return fmt.Sprintf("127.0.%d.%d", addressBase+1+i/NodesPerAddressOctet, 1+i%NodesPerAddressOctet)
}

// checkAddressBlock refuses a block of octets values of A after addressBase
// that does not fit in 1..MaxAddressOctet.
func checkAddressBlock(addressBase, octets int) error {
	if addressBase < 0 {
		return fmt.Errorf("address base %d: must be >= 0", addressBase)
	}
	if last := addressBase + octets; last > MaxAddressOctet {
		return fmt.Errorf("address base %d: node IPs 127.0.A.B would need A up to %d, beyond %d; the base must be at most %d",
			addressBase, last, MaxAddressOctet, MaxAddressOctet-octets)
	}
	return nil
}
