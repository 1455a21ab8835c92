// The bitmap side of the frame allocator: everything done under its lock.
// The per-CPU magazines in front of it are frame_magazines.cpp.
//
// Words of bits_ are written only under the lock, but a free without the
// lock reads them (its double-free check), so they are read and written
// with relaxed atomic loads and stores (plain moves on x86).
#include "base/frames/frame_allocator.h"

#include "base/arch/cross_cpu.h"
#include "base/lib/fault_inject.h"

namespace pvk {

FrameAllocator detail::g_frames;

namespace {
constexpr uint64_t bit(uint64_t pfn) { return uint64_t{1} << (pfn % 64); }
uint64_t load(const uint64_t* w) { return __atomic_load_n(w, __ATOMIC_RELAXED); }
void store(uint64_t* w, uint64_t v) { __atomic_store_n(w, v, __ATOMIC_RELAXED); }
}  // namespace

void FrameAllocator::init(uint64_t* storage, uint64_t max_pfn) {
  max_pfn_ = max_pfn;
  relocate(storage);
  set_bitmap_free(0);
  hint_word_ = 0;
  for (uint64_t i = 0; i < storage_words_for(max_pfn); ++i) storage[i] = 0;
  for (Magazine& m : magazines_) {
    m.busy = 0;
    m.count = 0;
  }
}

void FrameAllocator::relocate(uint64_t* storage) {
  bits_ = storage;
  cached_ = storage + words_for(max_pfn_);
}

bool FrameAllocator::free_in_bitmap(uint64_t p) const { return load(&bits_[p / 64]) & bit(p); }
bool FrameAllocator::cached(uint64_t p) const { return __atomic_load_n(&cached_[p / 64], __ATOMIC_ACQUIRE) & bit(p); }

ErrorOr<void> FrameAllocator::add_free_range(Pfn first, uint64_t count) {
  SpinGuard guard(lock_);
  if (raw(first) + count > max_pfn_ || raw(first) + count < raw(first)) return Errno::EINVAL;
  // Check first, change after: a refused range leaves nothing behind.
  for (uint64_t p = raw(first); p < raw(first) + count; ++p)
    if (free_in_bitmap(p) || cached(p)) return Errno::EEXIST;
  for (uint64_t p = raw(first); p < raw(first) + count; ++p) store(&bits_[p / 64], load(&bits_[p / 64]) | bit(p));
  set_bitmap_free(bitmap_free_ + count);
  return {};
}

void FrameAllocator::reserve_range(Pfn first, uint64_t count) {
  drain_magazines();  // (empty at boot, when this runs: no frame is out of sight)
  SpinGuard guard(lock_);
  for (uint64_t p = raw(first); p < raw(first) + count && p < max_pfn_; ++p) {
    if (free_in_bitmap(p)) {
      store(&bits_[p / 64], load(&bits_[p / 64]) & ~bit(p));
      set_bitmap_free(bitmap_free_ - 1);
    }
  }
}

// Inline where it is called (alloc_locked, and try_alloc on one CPU): the
// word the last allocation found a frame in (or a free lowered the hint
// to) most often has another, and then there is no search and no call.
inline ErrorOr<Pfn> FrameAllocator::take_from_bitmap() {
  if (bitmap_free_ == 0) return Errno::ENOMEM;
  if (const uint64_t word = load(&bits_[hint_word_])) {
    const uint64_t p = hint_word_ * 64 + static_cast<uint64_t>(__builtin_ctzll(word));
    store(&bits_[hint_word_], word & (word - 1));
    set_bitmap_free(bitmap_free_ - 1);
    return Pfn{p};
  }
  return search_bitmap();
}

ErrorOr<Pfn> FrameAllocator::search_bitmap() {
  const uint64_t words = words_for(max_pfn_);
  for (uint64_t n = 0; n < words; ++n) {
    const uint64_t w = (hint_word_ + n) % words;
    if (const uint64_t word = load(&bits_[w])) {
      const uint64_t p = w * 64 + static_cast<uint64_t>(__builtin_ctzll(word));
      store(&bits_[w], word & ~bit(p));
      set_bitmap_free(bitmap_free_ - 1);
      hint_word_ = w;
      return Pfn{p};
    }
  }
  return Errno::ENOMEM;  // unreachable while bitmap_free_ is right
}

ErrorOr<Pfn> FrameAllocator::try_alloc() {
  if (fault_inject_fails(FaultSite::FrameAlloc)) return Errno::ENOMEM;
  if (xcpu::one_cpu()) {
    // The bitmap under the lock, which on one CPU is an inline owner mark
    // and count; the magazines were emptied when the kernel learnt it had
    // one CPU, so only an exhausted bitmap needs alloc_locked's second look.
    SpinGuard guard(lock_);
    if (auto p = take_from_bitmap(); !p.is_error()) return p;
    return alloc_locked();
  }
  if (Magazine* m = my_magazine()) return alloc_cached(*m);
  SpinGuard guard(lock_);
  return alloc_locked();
}

// The bitmap, then (it is empty) whatever the magazines hold: frames
// stranded in another CPU's cache are still free.
ErrorOr<Pfn> FrameAllocator::alloc_locked() {
  if (auto p = take_from_bitmap(); !p.is_error()) return p;
  drain_others_locked(nullptr);
  return take_from_bitmap();
}

ErrorOr<Pfn> FrameAllocator::try_alloc_run(uint64_t count) {
  if (!count) return Errno::EINVAL;
  {
    SpinGuard guard(lock_);
    if (auto run = find_run(count); !run.is_error()) return run;
  }
  // Frames in magazines may break every run: give them back and look again.
  drain_magazines();
  SpinGuard guard(lock_);
  return find_run(count);
}

ErrorOr<Pfn> FrameAllocator::find_run(uint64_t count) {
  uint64_t run = 0;
  for (uint64_t p = 0; p < max_pfn_; ++p) {
    run = free_in_bitmap(p) ? run + 1 : 0;
    if (run == count) {
      const uint64_t first = p + 1 - count;
      for (uint64_t q = first; q <= p; ++q) store(&bits_[q / 64], load(&bits_[q / 64]) & ~bit(q));
      set_bitmap_free(bitmap_free_ - count);
      return Pfn{first};
    }
  }
  return Errno::ENOMEM;
}

ErrorOr<void> FrameAllocator::try_free(Pfn pfn) {
  const uint64_t p = raw(pfn);
  if (p >= max_pfn_) return Errno::EINVAL;
  if (!xcpu::one_cpu()) {
    if (Magazine* m = my_magazine()) return free_cached(*m, p);
  }
  SpinGuard guard(lock_);
  return free_locked(p);
}

ErrorOr<void> FrameAllocator::free_locked(uint64_t p) {
  if (free_in_bitmap(p) || cached(p)) return Errno::EINVAL;  // double free
  give_to_bitmap(p);
  return {};
}

bool FrameAllocator::is_free(Pfn pfn) const {
  // Under the lock: no batch is moving between the bitmap and a magazine,
  // so a free frame has one of its two bits set.
  SpinGuard guard(lock_);
  return raw(pfn) < max_pfn_ && (free_in_bitmap(raw(pfn)) || cached(raw(pfn)));
}

uint64_t FrameAllocator::free_count() const {
  uint64_t n = __atomic_load_n(&bitmap_free_, __ATOMIC_RELAXED);
  for (const Magazine& m : magazines_) n += __atomic_load_n(&m.count, __ATOMIC_RELAXED);
  return n;
}

}  // namespace pvk
