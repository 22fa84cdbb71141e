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

// Command mock-driver-root writes the user-space files of the NVIDIA driver a
// mock NVML profile names (hostroot.FakeDriverFiles: the libraries, tools and
// firmware NVIDIA's CDI edits mount, as placeholders) under a directory, for
// a kind node image: with the chart's kubeletPlugin.driverRoot pointing there,
// the GPU plugin finds them as it finds a real driver's and its CDI specs
// mount them into GPU containers. The simulated cluster's nodes get the same
// files from hostroot.Fake.
//
//	go run ./hack/mock-driver-root --profile gb200-nvl72 DIR
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
)

func main() {
	profile := flag.String("profile", "gb200-nvl72", fmt.Sprintf("mock NVML profile whose driver version the files carry, one of %v", mock.ProfileNames()))
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mock-driver-root [--profile NAME] DIR")
		os.Exit(2)
	}
	if err := run(*profile, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "mock-driver-root:", err)
		os.Exit(1)
	}
}

func run(profile, dir string) error {
	p, err := mock.LoadProfile(profile)
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	if err := hostroot.FakeDriverFiles(dir, p.DriverVersion); err != nil {
		return err
	}
	fmt.Printf("mock-driver-root: NVIDIA driver %s's user-space files (profile %s) under %s\n", p.DriverVersion, profile, dir)
	return nil
}
