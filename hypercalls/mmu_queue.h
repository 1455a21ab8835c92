// The queue behind the batched backend: mmu_update requests and mmuext ops
// gathered during a lazy-MMU section and sent together — one mmu_update
// hypercall, one mmuext_op, or one multicall carrying both, in order.
//
// Portable (no hypercalls of its own): the kernel plugs in a sink that
// issues them, host tests plug in a fake that can fail part-way.
#pragma once
#include "base/lib/error_or.h"
#include "hypercalls/xen_abi.h"

namespace pvk::xen {

// What Xen answered for one send: rc and how many requests of each kind
// were applied before the first failure.
struct SinkResult {
  long update_rc = 0;
  unsigned updates_done = 0;
  long ext_rc = 0;
  unsigned ext_done = 0;
};

struct MmuSink {
  SinkResult (*send)(mmu_update_t* updates, unsigned nu, mmuext_op_t* ext, unsigned ne);
};

// The request Xen refused, kept for the error report.
struct QueueFailure {
  bool is_update = true;  // else an mmuext op
  unsigned index = 0;     // position within the send
  long rc = 0;
  uint64_t ptr = 0;       // update: machine address of the entry; ext: cmd
  uint64_t val = 0;       // update: new value; ext: argument
};

Errno errno_from_xen(long rc);

class MmuQueue {
 public:
  static constexpr unsigned kMaxUpdates = 512;
  static constexpr unsigned kMaxExt = 64;

  void init(MmuSink sink, unsigned capacity);
  unsigned capacity() const { return capacity_; }

  // Queues one update; sends the queue when it reaches capacity. Inline:
  // every queued PTE write comes here, and the queue is rarely full or
  // holding an op.
  ErrorOr<void> push_update(uint64_t ptr, uint64_t val) {
    if (__builtin_expect(!try_push_update(ptr, val), 0)) return push_update_and_send(ptr, val);
    return {};
  }
  // Queues one update if that needs no send (no op queued before it, room
  // left after it); false: nothing was queued.
  bool try_push_update(uint64_t ptr, uint64_t val) {
    if (ne_ != 0 || nu_ + 1 >= capacity_) return false;
    updates_[nu_++] = mmu_update_t{ptr, val};
    return true;
  }
  // Queues an extended op (TLB flush, pin...). It is sent after every update
  // queued before it; an update queued after an op first sends the queue.
  ErrorOr<void> push_ext(const mmuext_op_t& op);
  // Sends whatever is queued. On failure the rest of the queue is dropped
  // and last_failure() names the refused request. Inline: a section's end
  // asks again after its drain sent the queue.
  ErrorOr<void> flush() {
    if (!nu_ && !ne_) return {};
    return send();
  }
  // Right after a failed flush(): queues again what Xen did not apply — the
  // refused request and everything after it — for a caller that must not
  // give up (a teardown). The ops of a send whose updates were refused are
  // queued again too: queued ops are TLB flushes, which must follow the
  // updates and are harmless to repeat.
  void requeue_refused();

  unsigned pending_updates() const { return nu_; }
  unsigned pending_ext() const { return ne_; }
  const QueueFailure& last_failure() const { return failure_; }
  uint64_t sends() const { return sends_; }

 private:
  // push_update when the queue holds an op (sent first, to keep program
  // order) or fills up with this update (sent after it).
  ErrorOr<void> push_update_and_send(uint64_t ptr, uint64_t val);
  ErrorOr<void> send();  // flush() of a queue that holds something

  MmuSink sink_{};
  unsigned capacity_ = 32;
  mmu_update_t updates_[kMaxUpdates] = {};
  mmuext_op_t ext_[kMaxExt] = {};
  unsigned nu_ = 0;
  unsigned ne_ = 0;
  unsigned sent_nu_ = 0;  // what the last flush() sent
  unsigned sent_ne_ = 0;
  uint64_t sends_ = 0;
  QueueFailure failure_{};
};

}  // namespace pvk::xen
