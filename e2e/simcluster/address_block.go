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

package simcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
)

// addressBlock is the run of third octets A (node IPs 127.0.A.B, pod IPs
// 127.A.B.x) that one simulated cluster holds, so that two clusters on one
// machine (two test binaries, `make demo` next to the e2e suite) never bind
// the same address: their IMEX stand-ins listen on fixed ports. Every value
// of A has a lock file simcluster-addresses-<A>.lock in the lock directory;
// the cluster holds an exclusive flock on each of its files for its whole
// life. flock belongs to the open file, so a process that dies releases its
// block with it, and two opens in one process exclude each other.
type addressBlock struct {
	// base: the block is A = base+1 .. base+len(files).
	base  int
	files []*os.File
}

// addressLockPattern names the lock file of each value of A.
const addressLockPattern = "simcluster-addresses-<A>.lock"

// addressLockName is the lock file of the third octet A.
func addressLockName(octet int) string {
	return strings.Replace(addressLockPattern, "<A>", strconv.Itoa(octet), 1)
}

// acquireAddressBlock takes the lowest run of octets free values of A in dir
// without waiting, and records nodes in each lock file for whoever finds it
// held. It fails when no run is free, naming the clusters that hold addresses.
func acquireAddressBlock(dir string, octets, nodes int) (*addressBlock, error) {
	if octets < 1 || octets > topology.MaxAddressOctet {
		return nil, fmt.Errorf("address block of %d octets: must be 1 to %d", octets, topology.MaxAddressOctet)
	}
	for first := 1; first+octets-1 <= topology.MaxAddressOctet; {
		b := &addressBlock{base: first - 1}
		busy := 0
		for octet := first; octet < first+octets; octet++ {
			f, err := lockAddressOctet(dir, octet)
			if errors.Is(err, syscall.EWOULDBLOCK) {
				busy = octet
				break
			}
			if err != nil {
				b.release()
				return nil, err
			}
			b.files = append(b.files, f)
		}
		if busy == 0 {
			if err := b.record(nodes); err != nil {
				b.release()
				return nil, err
			}
			return b, nil
		}
		b.release()
		first = busy + 1
	}
	held, err := heldOctets(dir)
	if err != nil {
		return nil, err
	}
	return nil, noFreeBlockError(dir, octets, nodes, held)
}

// heldOctets maps every value of A that a cluster holds to what its lock
// file says about the holder.
func heldOctets(dir string) (map[int]string, error) {
	held := map[int]string{}
	for octet := 1; octet <= topology.MaxAddressOctet; octet++ {
		f, err := lockAddressOctet(dir, octet)
		switch {
		case errors.Is(err, syscall.EWOULDBLOCK):
			held[octet] = readHolder(filepath.Join(dir, addressLockName(octet)))
		case err != nil:
			return nil, err
		default:
			_ = f.Close()
		}
	}
	return held, nil
}

// lockAddressOctet opens the lock file of A and takes its flock without
// waiting; EWOULDBLOCK means another cluster holds it.
func lockAddressOctet(dir string, octet int) (*os.File, error) {
	path := filepath.Join(dir, addressLockName(octet))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("open address lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, err
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// record writes the holder line into every lock file of the block.
func (b *addressBlock) record(nodes int) error {
	line := fmt.Sprintf("pid=%d base=%d nodes=%d\n", os.Getpid(), b.base, nodes)
	for _, f := range b.files {
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("record address block holder in %s: %w", f.Name(), err)
		}
		if _, err := f.WriteAt([]byte(line), 0); err != nil {
			return fmt.Errorf("record address block holder in %s: %w", f.Name(), err)
		}
	}
	return nil
}

// readHolder is the holder line of a held lock file ("" while its holder has
// not written it yet).
func readHolder(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// noFreeBlockError names how many clusters, nodes and values of A hold
// addresses, and where their lock files are.
func noFreeBlockError(dir string, octets, nodes int, held map[int]string) error {
	clusters := map[string]bool{}
	heldNodes, unknown := 0, 0
	for _, holder := range held {
		if holder == "" {
			unknown++
			continue
		}
		if clusters[holder] {
			continue
		}
		clusters[holder] = true
		var pid, base, n int
		if _, err := fmt.Sscanf(holder, "pid=%d base=%d nodes=%d", &pid, &base, &n); err == nil {
			heldNodes += n
		}
	}
	holders := make([]string, 0, len(clusters))
	for holder := range clusters {
		holders = append(holders, holder)
	}
	slices.Sort(holders)
	msg := fmt.Sprintf("no %d consecutive free address blocks for %d nodes (node IPs 127.0.A.B, one A per %d nodes, A from 1 to %d): "+
		"%d of the %d values of A are held by %d other simulated clusters with %d nodes",
		octets, nodes, topology.NodesPerAddressOctet, topology.MaxAddressOctet,
		len(held), topology.MaxAddressOctet, len(clusters), heldNodes)
	if unknown > 0 {
		msg += fmt.Sprintf(" and %d values by clusters still starting", unknown)
	}
	if len(holders) > 0 {
		msg += " [" + strings.Join(holders, "; ") + "]"
	}
	return fmt.Errorf("%s; their lock files %s are in %s: stop some of those clusters or run smaller ones",
		msg, addressLockPattern, dir)
}

// release gives the block back; a released block is free for the next
// cluster at once.
func (b *addressBlock) release() {
	for _, f := range b.files {
		_ = f.Truncate(0)
		_ = f.Close()
	}
	b.files = nil
}

// controlPlaneIP is an address of the block that no node or pod uses
// (127.0.<base+1>.251: node IPs end in 1 to 250, pod IPs start with
// 127.<A> and A >= 1) for the control plane's listeners whose port is
// chosen before they bind (etcd): another cluster binding a port of its own
// in between cannot take it.
func (b *addressBlock) controlPlaneIP() string {
	return fmt.Sprintf("127.0.%d.%d", b.base+1, topology.NodesPerAddressOctet+1)
}

// String names the block's node and pod addresses, for logs.
func (b *addressBlock) String() string {
	first, last := b.base+1, b.base+len(b.files)
	if first == last {
		return fmt.Sprintf("127.0.%d.x (pods 127.%d.x.x)", first, first)
	}
	return fmt.Sprintf("127.0.%d-%d.x (pods 127.%d-%d.x.x)", first, last, first, last)
}
