#include "hypercalls/mmu_queue.h"

namespace pvk::xen {

Errno errno_from_xen(long rc) {
  // Xen's errno values are the Linux/ABI ones pvk's Errno also uses.
  switch (-rc) {
    case 1: return Errno::EPERM;
    case 12: return Errno::ENOMEM;
    case 14: return Errno::EFAULT;
    case 16: return Errno::EBUSY;
    case 17: return Errno::EEXIST;
    case 22: return Errno::EINVAL;
    case 38: return Errno::ENOSYS;
    default: return Errno::EIO;
  }
}

void MmuQueue::init(MmuSink sink, unsigned capacity) {
  sink_ = sink;
  capacity_ = capacity < 1 ? 1 : capacity > kMaxUpdates ? kMaxUpdates : capacity;
  nu_ = ne_ = 0;
}

ErrorOr<void> MmuQueue::push_update_and_send(uint64_t ptr, uint64_t val) {
  if (ne_) TRY(flush());  // keep program order: ops queued earlier go first
  updates_[nu_++] = mmu_update_t{ptr, val};
  if (nu_ >= capacity_) return flush();
  return {};
}

ErrorOr<void> MmuQueue::push_ext(const mmuext_op_t& op) {
  if (ne_ == kMaxExt) TRY(flush());
  ext_[ne_++] = op;
  return {};
}

ErrorOr<void> MmuQueue::send() {
  const unsigned nu = nu_, ne = ne_;
  sent_nu_ = nu, sent_ne_ = ne;
  nu_ = ne_ = 0;
  ++sends_;
  const SinkResult r = sink_.send(nu ? updates_ : nullptr, nu, ne ? ext_ : nullptr, ne);
  if (nu && r.update_rc < 0) {
    const unsigned i = r.updates_done < nu ? r.updates_done : nu - 1;
    failure_ = {true, i, r.update_rc, updates_[i].ptr, updates_[i].val};
    return errno_from_xen(r.update_rc);
  }
  if (ne && r.ext_rc < 0) {
    const unsigned i = r.ext_done < ne ? r.ext_done : ne - 1;
    failure_ = {false, i, r.ext_rc, ext_[i].cmd, ext_[i].arg1.linear_addr};
    return errno_from_xen(r.ext_rc);
  }
  return {};
}

void MmuQueue::requeue_refused() {
  // The arrays still hold the failed send: flush() only reset the counts.
  if (failure_.is_update) {
    const unsigned first = failure_.index;
    for (unsigned k = first; k < sent_nu_; ++k) updates_[k - first] = updates_[k];
    nu_ = sent_nu_ - first;
    ne_ = sent_ne_;
  } else {
    const unsigned first = failure_.index;
    for (unsigned k = first; k < sent_ne_; ++k) ext_[k - first] = ext_[k];
    nu_ = 0;
    ne_ = sent_ne_ - first;
  }
  sent_nu_ = sent_ne_ = 0;
}

}  // namespace pvk::xen
