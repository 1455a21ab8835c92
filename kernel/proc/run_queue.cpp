// One CPU's run queue (kernel/proc/run_queue.h).
#include "kernel/proc/run_queue.h"

#include "base/console/console.h"
#include "kernel/proc/process.h"

namespace pvk::proc {

void RunQueue::push(Process& p, int16_t cpu) {
  if (p.rq_cpu != Process::kNoCpu) panic("pid %d queued twice (on CPU %d's queue and CPU %d's)", p.pid, p.rq_cpu, cpu);
  p.rq_next = nullptr;
  __atomic_store_n(&p.rq_cpu, cpu, __ATOMIC_RELAXED);
  if (tail_)
    tail_->rq_next = &p;
  else
    head_ = &p;
  tail_ = &p;
  __atomic_store_n(&size_, size_ + 1, __ATOMIC_RELEASE);
}

void RunQueue::unlink(Process& p, Process* before) {
  (before ? before->rq_next : head_) = p.rq_next;
  if (tail_ == &p) tail_ = before;
  p.rq_next = nullptr;
  __atomic_store_n(&p.rq_cpu, Process::kNoCpu, __ATOMIC_RELAXED);
  __atomic_store_n(&size_, size_ - 1, __ATOMIC_RELEASE);
}

Process* RunQueue::take_first(uint64_t cpu_bit) {
  Process* before = nullptr;
  for (Process* p = head_; p; before = p, p = p->rq_next) {
    if (!(p->affinity & cpu_bit)) continue;
    unlink(*p, before);
    return p;
  }
  return nullptr;
}

bool RunQueue::remove(Process& p) {
  Process* before = nullptr;
  for (Process* q = head_; q; before = q, q = q->rq_next) {
    if (q != &p) continue;
    unlink(p, before);
    return true;
  }
  return false;
}

void RunQueue::clear() {
  while (head_) unlink(*head_, nullptr);
}

}  // namespace pvk::proc
