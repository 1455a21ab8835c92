// The process table: a fixed array of Process slots and their kernel
// stacks, which the scheduler, signals and the lifecycle work on
// (scheduler.cpp, signals.cpp, lifecycle.cpp).
#include "kernel/proc/process.h"

#include "kernel/proc/fpu_state.h"
#include "kernel/proc/process_parts.h"

namespace pvk {

namespace proc {

Process g_procs[kMaxProcs];

}  // namespace proc

using namespace proc;

namespace {

alignas(16) uint8_t g_kstacks[kMaxProcs][Process::kStackSize];
int g_next_pid = 1;

// A thread that exited while others of its group live on: nobody waits
// for it, so its slot is free once it no longer runs (on one CPU: once
// it is not the current one; it switched away for good).
bool dead_thread(const Process& p) {
  return p.state == ProcState::Zombie && p.tgid != p.pid && p.on_cpu == Process::kNoCpu;
}

}  // namespace

Process* alloc_process() {
  for (Process& p : g_procs) {
    if (p.state != ProcState::Free && !dead_thread(p)) continue;
    fpu_release(p);  // (exit gave it back already)
    p = Process{};
    p.user_frame = p.frame();
    if (fpu_alloc(p).is_error()) return nullptr;  // no frame for its FP state
    p.pid = g_next_pid++;
    p.tgid = p.pid;
    p.leader = &p;
    p.live_threads = 1;
    return &p;
  }
  return nullptr;
}

void free_unstarted(Process& p) {
  fpu_release(p);
  p.state = ProcState::Free;
}

Process* process_at(unsigned i) { return i < kMaxProcs ? &g_procs[i] : nullptr; }

uint8_t* Process::stack_base() const { return g_kstacks[this - g_procs]; }

Process* find_process(int pid) {
  for (Process& p : g_procs)
    if (p.state != ProcState::Free && p.pid == pid) return &p;
  return nullptr;
}

ProcessTable process_table() { return {g_procs, kMaxProcs}; }

}  // namespace pvk
