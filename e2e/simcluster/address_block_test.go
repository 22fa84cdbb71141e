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
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustAcquire(t *testing.T, dir string, octets, nodes int) *addressBlock {
	t.Helper()
	b, err := acquireAddressBlock(dir, octets, nodes)
	if err != nil {
		t.Fatalf("acquireAddressBlock(%d octets, %d nodes) error = %v", octets, nodes, err)
	}
	t.Cleanup(b.release)
	return b
}

// octetsOf is the block's range of A as "first-last".
func octetsOf(b *addressBlock) string {
	return fmt.Sprintf("%d-%d", b.base+1, b.base+len(b.files))
}

func TestTwoBlocksInOneProcessDoNotOverlap(t *testing.T) {
	dir := t.TempDir()
	a := mustAcquire(t, dir, 2, 300)
	b := mustAcquire(t, dir, 3, 600)
	if got := octetsOf(a); got != "1-2" {
		t.Errorf("first block holds A = %s, want 1-2", got)
	}
	if got := octetsOf(b); got != "3-5" {
		t.Errorf("second block holds A = %s, want 3-5 (after the first)", got)
	}
	data, err := os.ReadFile(filepath.Join(dir, "simcluster-addresses-4.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("pid=%d base=2 nodes=600\n", os.Getpid()); string(data) != want {
		t.Errorf("lock file of A=4 says %q, want %q", data, want)
	}
}

func TestAReleasedBlockIsReused(t *testing.T) {
	dir := t.TempDir()
	first, err := acquireAddressBlock(dir, 2, 300)
	if err != nil {
		t.Fatal(err)
	}
	held := mustAcquire(t, dir, 1, 10)
	first.release()

	wide := mustAcquire(t, dir, 3, 700)
	if got := octetsOf(wide); got != "4-6" {
		t.Errorf("a 3-octet block while A=3 is held = %s, want 4-6 (1-2 is too short)", got)
	}
	again := mustAcquire(t, dir, 2, 300)
	if got := octetsOf(again); got != "1-2" {
		t.Errorf("after release a 2-octet block = %s, want the released 1-2", got)
	}
	if got := octetsOf(held); got != "3-3" {
		t.Errorf("the block held meanwhile = %s, want 3-3", got)
	}
}

func TestNoFreeBlockNamesTheHolders(t *testing.T) {
	dir := t.TempDir()
	big := mustAcquire(t, dir, 200, 50000)
	small := mustAcquire(t, dir, 5, 1200)
	_, err := acquireAddressBlock(dir, 60, 15000)
	if err == nil {
		t.Fatalf("a 60-octet block with A 1-205 held was granted, want an error")
	}
	for _, want := range []string{
		"no 60 consecutive free address blocks for 15000 nodes",
		"205 of the 255 values of A are held by 2 other simulated clusters with 51200 nodes",
		fmt.Sprintf("pid=%d base=%d nodes=50000", os.Getpid(), big.base),
		fmt.Sprintf("pid=%d base=%d nodes=1200", os.Getpid(), small.base),
		"simcluster-addresses-<A>.lock are in " + dir,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	// What is left still fits a smaller cluster.
	if got := octetsOf(mustAcquire(t, dir, 50, 12500)); got != "206-255" {
		t.Errorf("a 50-octet block = %s, want the rest 206-255", got)
	}
}

func TestABlockBeyondA255IsRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := acquireAddressBlock(dir, 256, 64000); err == nil || !strings.Contains(err.Error(), "must be 1 to 255") {
		t.Fatalf("a 256-octet block error = %v, want one saying 1 to 255", err)
	}
	whole := mustAcquire(t, dir, 255, 63750)
	if got := octetsOf(whole); got != "1-255" {
		t.Errorf("the whole range = %s, want 1-255", got)
	}
}

// TestACrashedHolderReleasesItsBlock holds a block in a child process, kills
// it and takes the block over.
func TestACrashedHolderReleasesItsBlock(t *testing.T) {
	if dir := os.Getenv("SIMCLUSTER_TEST_HOLD_BLOCK_IN"); dir != "" {
		b, err := acquireAddressBlock(dir, 2, 400)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("holding", octetsOf(b))
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestACrashedHolderReleasesItsBlock$")
	child.Env = append(os.Environ(), "SIMCLUSTER_TEST_HOLD_BLOCK_IN="+dir)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "holding 1-2" {
		t.Fatalf("child says %q (%v), want \"holding 1-2\"", line, err)
	}
	beside := mustAcquire(t, dir, 1, 1)
	if got := octetsOf(beside); got != "3-3" {
		t.Fatalf("a block while the child holds 1-2 = %s, want 3-3", got)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if got := octetsOf(mustAcquire(t, dir, 2, 400)); got != "1-2" {
		t.Errorf("after the child was killed a 2-octet block = %s, want its 1-2", got)
	}
}

func TestBlockString(t *testing.T) {
	dir := t.TempDir()
	one := mustAcquire(t, dir, 1, 40)
	two := mustAcquire(t, dir, 2, 400)
	for b, want := range map[*addressBlock]string{
		one: "127.0.1.x (pods 127.1.x.x)",
		two: "127.0.2-3.x (pods 127.2-3.x.x)",
	} {
		if got := b.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
