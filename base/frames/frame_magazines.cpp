// The frame allocator's per-CPU magazines: each CPU keeps a stack of up to
// kMagazineFrames free frames, so an allocation pops and a free pushes
// without the allocator's lock. An empty magazine is refilled, a full one
// drained, kMagazineBatch frames at a time under the lock; only then (or
// when the bitmap is exhausted and another CPU's magazine is emptied into
// it) do CPUs meet on it.
//
// Why a CPU's magazine needs no interrupt masking: kernel code runs with
// interrupts off and is never preempted (kernel/proc/process.h); it enables
// them only to halt (the idle loop, a halting lock waiter), never inside a
// frame operation. And the handlers that run then (ticks, cross-CPU
// requests) take no frames: they may run inside the allocator's lock wait
// loop (xcpu::poll) today, where taking a frame would deadlock.
//
// Ownership: a magazine is its CPU's, claimed for each operation with one
// exchange on its `busy` word, which only another CPU draining it for an
// exhausted bitmap (under the lock, with a try: it never waits for the
// owner) ever finds taken. The owner may hold its claim while it takes the
// lock (refill, drain); a CPU holding the lock never waits for a claim, so
// the two cannot deadlock.
//
// Double frees: a frame in a magazine is free, and freeing it again must
// fail as it does for a frame free in the bitmap. The cached bitmap has a
// frame's bit set while it sits in any magazine; a free sets it with an
// atomic or and fails if it was set already, and then fails (clearing it
// again) if the frame is free in the bitmap. A free frame always has one of
// the two bits set: a refill sets the cached bit before it clears the free
// one, a drain sets the free bit before it clears the cached one. Both
// transitions and every free change the frame's cached word with an atomic
// read-modify-write, so of a refill and a racing (double) free of one frame
// the second to reach that word sees the first: the free sees the cached
// bit (EINVAL), or the refill sees it set and leaves the frame in the
// bitmap, where the free then finds it (EINVAL). A drain's release of the
// cached bit carries its earlier store of the free bit to the next free.
#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"
#include "base/frames/frame_allocator.h"

namespace pvk {

namespace {
constexpr uint64_t bit(uint64_t pfn) { return uint64_t{1} << (pfn % 64); }
}  // namespace

FrameAllocator::Magazine* FrameAllocator::my_magazine() {
  const unsigned cpu = xcpu::this_cpu_id();
  return cpu < kMagazineCpus ? &magazines_[cpu] : nullptr;
}

void FrameAllocator::claim(Magazine& m) {
  while (__atomic_exchange_n(&m.busy, 1, __ATOMIC_ACQUIRE)) cpu::relax();  // a drainer: a few dozen stores
}

bool FrameAllocator::try_claim(Magazine& m) { return !__atomic_exchange_n(&m.busy, 1, __ATOMIC_ACQUIRE); }

void FrameAllocator::unclaim(Magazine& m) { __atomic_store_n(&m.busy, 0, __ATOMIC_RELEASE); }

ErrorOr<Pfn> FrameAllocator::alloc_cached(Magazine& m) {
  claim(m);
  if (m.count == 0) {
    SpinGuard guard(lock_);
    if (!refill_locked(m)) {
      unclaim(m);
      return Errno::ENOMEM;
    }
  }
  const uint32_t n = m.count - 1;
  const Pfn p = m.frames[n];
  set_count(m, n);
  unmark_cached(raw(p));
  unclaim(m);
  return p;
}

ErrorOr<void> FrameAllocator::free_cached(Magazine& m, uint64_t p) {
  claim(m);
  if (!mark_cached(p)) {
    unclaim(m);
    return Errno::EINVAL;  // double free
  }
  if (m.count == kMagazineFrames) {
    SpinGuard guard(lock_);
    drain_locked(m, kMagazineBatch);
  }
  m.frames[m.count] = Pfn{p};
  set_count(m, m.count + 1);
  unclaim(m);
  return {};
}

// False if the frame is already free: in a magazine, or in the bitmap.
bool FrameAllocator::mark_cached(uint64_t p) {
  if (__atomic_fetch_or(&cached_[p / 64], bit(p), __ATOMIC_ACQ_REL) & bit(p)) return false;
  if (__atomic_load_n(&bits_[p / 64], __ATOMIC_RELAXED) & bit(p)) {
    unmark_cached(p);
    return false;
  }
  return true;
}

void FrameAllocator::unmark_cached(uint64_t p) { __atomic_fetch_and(&cached_[p / 64], ~bit(p), __ATOMIC_RELEASE); }

// Up to a batch of the lowest free frames from the bitmap, the lowest on
// top; when the bitmap is empty, the other CPUs' magazines are emptied into
// it first. False if not one frame was found.
bool FrameAllocator::refill_locked(Magazine& m) {
  if (bitmap_free_ == 0) drain_others_locked(&m);
  const uint64_t words = words_for(max_pfn_);
  uint32_t n = 0;
  for (uint64_t k = 0; k < words && n < kMagazineBatch && bitmap_free_; ++k) {
    const uint64_t w = (hint_word_ + k) % words;
    uint64_t want = 0;
    for (uint64_t left = __atomic_load_n(&bits_[w], __ATOMIC_RELAXED); left && n + __builtin_popcountll(want) < kMagazineBatch;
         left &= left - 1)
      want |= left & -left;
    if (!want) continue;
    hint_word_ = w;
    // Cached first: a bit some (double) free set a moment ago stays in the bitmap.
    const uint64_t taken = want & ~__atomic_fetch_or(&cached_[w], want, __ATOMIC_ACQ_REL);
    __atomic_store_n(&bits_[w], __atomic_load_n(&bits_[w], __ATOMIC_RELAXED) & ~taken, __ATOMIC_RELAXED);
    set_bitmap_free(bitmap_free_ - static_cast<uint64_t>(__builtin_popcountll(taken)));
    for (uint64_t t = taken; t; t &= t - 1) m.frames[n++] = Pfn{w * 64 + static_cast<uint64_t>(__builtin_ctzll(t))};
  }
  for (uint32_t i = 0; i < n / 2; ++i) {  // lowest on top: popped first
    const Pfn t = m.frames[i];
    m.frames[i] = m.frames[n - 1 - i];
    m.frames[n - 1 - i] = t;
  }
  set_count(m, n);
  return n > 0;
}

// The n frames at the bottom of m (the longest cached) back to the bitmap.
void FrameAllocator::drain_locked(Magazine& m, uint32_t n) {
  const uint32_t count = m.count;
  if (n > count) n = count;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t p = raw(m.frames[i]);
    give_to_bitmap(p);  // free bit first, then the cached bit goes
    unmark_cached(p);
  }
  for (uint32_t i = n; i < count; ++i) m.frames[i - n] = m.frames[i];
  set_count(m, count - n);
}

void FrameAllocator::drain_others_locked(const Magazine* mine) {
  for (Magazine& o : magazines_) {
    if (&o == mine || !__atomic_load_n(&o.count, __ATOMIC_RELAXED) || !try_claim(o)) continue;
    drain_locked(o, o.count);
    unclaim(o);
  }
}

void FrameAllocator::drain_magazines() {
  SpinGuard guard(lock_);
  drain_others_locked(nullptr);
}

}  // namespace pvk
