// A host delivery for base/arch/cross_cpu.h, installed before main: a
// settable "this CPU", a settable set of online CPUs, and send() that records each request and
// either refuses it or runs the registered handler "on" the target (this
// CPU id switched to the target's for the call), as a CPU taking the
// request would.
#pragma once
#include <vector>

#include "base/arch/cross_cpu.h"

namespace pvk::test {

struct SentIpi {
  unsigned from;
  unsigned to;
  xcpu::Ipi kind;
};

struct FakeXcpu {
  unsigned this_cpu = 0;
  unsigned online = 1;       // CPUs 0..online-1
  bool refuse = false;       // send() fails (as the one-CPU kernel's does)
  bool deliver = true;       // run the target's handler inside send()
  std::vector<SentIpi> sent;
  void reset() { *this = FakeXcpu{}; }
};

FakeXcpu& fake_xcpu();

// A host thread that plays a CPU of its own (threaded lock tests): this
// thread's this_cpu_id() is `cpu` until it ends; other threads keep the
// fake's this_cpu.
void act_as_cpu(unsigned cpu);

}  // namespace pvk::test
