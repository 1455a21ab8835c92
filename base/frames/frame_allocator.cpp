#include "base/frames/frame_allocator.h"

#include "base/lib/fault_inject.h"

namespace pvk {

namespace {
FrameAllocator g_frames;
constexpr uint64_t bit(uint64_t pfn) { return uint64_t{1} << (pfn % 64); }
}  // namespace

FrameAllocator& frames() { return g_frames; }

void FrameAllocator::init(uint64_t* bitmap, uint64_t max_pfn) {
  bits_ = bitmap;
  max_pfn_ = max_pfn;
  free_count_ = 0;
  hint_word_ = 0;
  for (uint64_t i = 0; i < words_for(max_pfn); ++i) bits_[i] = 0;
}

ErrorOr<void> FrameAllocator::add_free_range(Pfn first, uint64_t count) {
  SpinGuard guard(lock_);
  if (raw(first) + count > max_pfn_ || raw(first) + count < raw(first)) return Errno::EINVAL;
  // Check first, change after: a refused range leaves nothing behind.
  for (uint64_t p = raw(first); p < raw(first) + count; ++p)
    if (bits_[p / 64] & bit(p)) return Errno::EEXIST;
  for (uint64_t p = raw(first); p < raw(first) + count; ++p) bits_[p / 64] |= bit(p);
  free_count_ += count;
  return {};
}

void FrameAllocator::reserve_range(Pfn first, uint64_t count) {
  SpinGuard guard(lock_);
  for (uint64_t p = raw(first); p < raw(first) + count && p < max_pfn_; ++p) {
    if (bits_[p / 64] & bit(p)) {
      bits_[p / 64] &= ~bit(p);
      --free_count_;
    }
  }
}

ErrorOr<Pfn> FrameAllocator::try_alloc() {
  SpinGuard guard(lock_);
  return alloc_locked();
}

ErrorOr<Pfn> FrameAllocator::alloc_locked() {
  if (free_count_ == 0 || fault_inject_fails(FaultSite::FrameAlloc)) return Errno::ENOMEM;
  const uint64_t words = words_for(max_pfn_);
  for (uint64_t n = 0; n < words; ++n) {
    uint64_t w = (hint_word_ + n) % words;
    if (bits_[w]) {
      uint64_t p = w * 64 + static_cast<uint64_t>(__builtin_ctzll(bits_[w]));
      bits_[w] &= ~bit(p);
      --free_count_;
      hint_word_ = w;
      return Pfn{p};
    }
  }
  return Errno::ENOMEM;  // unreachable while free_count_ is right
}

ErrorOr<Pfn> FrameAllocator::try_alloc_run(uint64_t count) {
  if (!count) return Errno::EINVAL;
  SpinGuard guard(lock_);
  uint64_t run = 0;
  for (uint64_t p = 0; p < max_pfn_; ++p) {
    run = (bits_[p / 64] & bit(p)) ? run + 1 : 0;
    if (run == count) {
      const uint64_t first = p + 1 - count;
      for (uint64_t q = first; q <= p; ++q) bits_[q / 64] &= ~bit(q);
      free_count_ -= count;
      return Pfn{first};
    }
  }
  return Errno::ENOMEM;
}

ErrorOr<void> FrameAllocator::try_free(Pfn pfn) {
  SpinGuard guard(lock_);
  uint64_t p = raw(pfn);
  if (p >= max_pfn_) return Errno::EINVAL;
  if (bits_[p / 64] & bit(p)) return Errno::EINVAL;  // double free
  bits_[p / 64] |= bit(p);
  ++free_count_;
  if (p / 64 < hint_word_) hint_word_ = p / 64;  // keep handing out low frames first
  return {};
}

bool FrameAllocator::is_free(Pfn pfn) const {
  SpinGuard guard(lock_);
  return raw(pfn) < max_pfn_ && (bits_[raw(pfn) / 64] & bit(raw(pfn)));
}

}  // namespace pvk
