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

package mock

import (
	"time"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// eventQueueLength bounds the events an unread set keeps; later events are
// dropped, as a real driver's queue overflows.
const eventQueueLength = 256

type eventSet struct {
	lib *Lib
	ch  chan nvml.EventData
	// freed is guarded by lib.mu.
	freed bool
}

var _ nvml.EventSet = (*eventSet)(nil)

func newEventSet(m *Lib) *eventSet {
	return &eventSet{lib: m, ch: make(chan nvml.EventData, eventQueueLength)}
}

// Wait returns the next event, or ERROR_TIMEOUT after timeoutMs.
func (s *eventSet) Wait(timeoutMs uint32) (nvml.EventData, nvml.Return) {
	s.lib.mu.Lock()
	freed := s.freed
	s.lib.mu.Unlock()
	if freed {
		return nvml.EventData{}, nvml.ERROR_INVALID_ARGUMENT
	}
	select {
	case e := <-s.ch:
		return e, nvml.SUCCESS
	default:
	}
	if timeoutMs == 0 {
		return nvml.EventData{}, nvml.ERROR_TIMEOUT
	}
	t := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
	defer t.Stop()
	select {
	case e := <-s.ch:
		return e, nvml.SUCCESS
	case <-t.C:
		return nvml.EventData{}, nvml.ERROR_TIMEOUT
	}
}

// Free unregisters the set from every GPU.
func (s *eventSet) Free() nvml.Return {
	s.lib.mu.Lock()
	defer s.lib.mu.Unlock()
	if s.freed {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	s.freed = true
	for _, g := range s.lib.gpus {
		delete(g.registered, s)
	}
	delete(s.lib.sets, s)
	return nvml.SUCCESS
}

// emit delivers an event about g to every set registered for its type; the
// caller holds the lock. It returns how many sets received it.
func (g *gpu) emit(eventType uint64, data uint64, giID, ciID uint32) int {
	n := 0
	for s, types := range g.registered {
		if types&eventType == 0 {
			continue
		}
		e := nvml.EventData{
			Device:            &device{gpu: g},
			EventType:         eventType,
			EventData:         data,
			GpuInstanceId:     giID,
			ComputeInstanceId: ciID,
		}
		select {
		case s.ch <- e:
			n++
		default:
		}
	}
	return n
}
