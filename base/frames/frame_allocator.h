// The physical frame allocator: a bitmap of pseudo-physical frames (one bit
// per frame, set = free) that always knows how many frames are free, so every
// benchmark and selftest can check it returns to its baseline.
//
// Storage for the bitmap is handed in by the caller (the kernel carves it out
// of RAM after the image; host tests use a vector), so this class does no
// allocation itself and builds unchanged in the kernel and on the host.
//
// SMP: its own spinlock (rank Frames, inside an address space's lock), so a
// page fault that runs without the kernel lock can take and give back frames
// while another CPU does the same. Every operation takes it for itself; no
// caller holds it across calls.
#pragma once
#include "base/frames/frame_refs.h"
#include "base/lib/error_or.h"
#include "base/lib/spinlock.h"
#include "base/lib/types.h"

namespace pvk {

class FrameAllocator {
 public:
  // bitmap must hold at least words_for(max_pfn) words. All frames start used;
  // add_free_range() hands RAM to the allocator.
  void init(uint64_t* bitmap, uint64_t max_pfn);
  // The bitmap is reached through a mapping that changes once at boot (the
  // early map gives way to the physmap); this points at the new address.
  void relocate(uint64_t* bitmap) { bits_ = bitmap; }
  static constexpr uint64_t words_for(uint64_t max_pfn) { return (max_pfn + 63) / 64; }

  // Marks [first, first+count) free. Frames already free are an error
  // (overlapping RAM ranges in a memory map are a firmware bug worth seeing).
  ErrorOr<void> add_free_range(Pfn first, uint64_t count);
  // Takes [first, first+count) out of the free pool if present (kernel image,
  // bitmap storage, boot data). Used frames in the range are left alone.
  void reserve_range(Pfn first, uint64_t count);

  ErrorOr<Pfn> try_alloc();
  // `count` physically contiguous frames (boot-time tables); ENOMEM if no run.
  ErrorOr<Pfn> try_alloc_run(uint64_t count);
  Pfn must_alloc() { return must(try_alloc(), "frame allocation"); }
  // EINVAL for a frame outside the allocator or one that is already free
  // (a double free): the caller reports it, nothing is corrupted.
  ErrorOr<void> try_free(Pfn pfn);
  void must_free(Pfn pfn) { must(try_free(pfn), "frame free"); }

  bool is_free(Pfn pfn) const;
  uint64_t free_count() const { return __atomic_load_n(&free_count_, __ATOMIC_RELAXED); }
  uint64_t max_pfn() const { return max_pfn_; }

 private:
  ErrorOr<Pfn> alloc_locked();

  static constexpr LockClass kLockClass{"frames", LockRank::Frames, LockStat::frames};
  mutable Spinlock lock_{kLockClass};
  uint64_t* bits_ = nullptr;
  uint64_t max_pfn_ = 0;
  uint64_t free_count_ = 0;
  uint64_t hint_word_ = 0;  // next-fit: where the last allocation found a frame
};

// The kernel's (and, in host tests, the test's) single frame allocator.
FrameAllocator& frames();

// Drops one reference to a user frame; the frame goes back to the allocator
// with its last one (a COW copy's old frame, an unmapped leaf, a file page
// its file and every mapping let go of).
inline void put_frame_ref(Pfn p) {
  if (frame_refs().dec(p) == 0) frames().must_free(p);
}

}  // namespace pvk
