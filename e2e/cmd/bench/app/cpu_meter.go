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

package app

import (
	"bytes"
	"fmt"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// cpuMeter measures, over an interval, the CPU time of the simulated kube-scheduler (the samples of a CPU profile
// of the process whose goroutines carry the simulator's scheduler label, 100 samples per second of CPU) and of
// the whole process (getrusage: every component of the simulated cluster, and this benchmark).
type cpuMeter struct {
	profile bytes.Buffer
	rusage  time.Duration
}

// cpuTimes is what a cpuMeter measured.
type cpuTimes struct {
	scheduler, process time.Duration
}

// startCPUMeter starts the profile; only one can run in a process at a time.
func startCPUMeter() (*cpuMeter, error) {
	m := &cpuMeter{}
	var err error
	if m.rusage, err = processCPU(); err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(&m.profile); err != nil {
		return nil, fmt.Errorf("CPU profile for the scheduler's CPU time: %w", err)
	}
	return m, nil
}

// stop ends the profile and reads the CPU times since the start.
func (m *cpuMeter) stop() (cpuTimes, error) {
	pprof.StopCPUProfile()
	end, err := processCPU()
	if err != nil {
		return cpuTimes{}, err
	}
	p, err := profile.Parse(&m.profile)
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read the CPU profile: %w", err)
	}
	sched, err := labeledCPU(p, simcluster.ComponentLabel, simcluster.SchedulerLabel)
	return cpuTimes{scheduler: sched, process: end - m.rusage}, err
}

// labeledCPU sums the CPU time of a profile's samples that carry the label key=value.
func labeledCPU(p *profile.Profile, key, value string) (time.Duration, error) {
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			cpu = i
		}
	}
	if cpu < 0 {
		return 0, fmt.Errorf("the CPU profile has no cpu/nanoseconds sample type: %v", p.SampleType)
	}
	var sum int64
	for _, s := range p.Sample {
		for _, v := range s.Label[key] {
			if v == value {
				sum += s.Value[cpu]
				break
			}
		}
	}
	return time.Duration(sum), nil
}

// processCPU is the user and system CPU time of this process so far.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
