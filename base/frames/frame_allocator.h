// The physical frame allocator: a bitmap of pseudo-physical frames (one bit
// per frame, set = free) in front of which each CPU keeps a small stack of
// free frames of its own (its magazine), and which always knows how many
// frames are free, so every benchmark and selftest can check it returns to
// its baseline.
//
// Storage for the bitmaps is handed in by the caller (the kernel carves it
// out of RAM after the image; host tests use a vector), so this class does
// no allocation itself and builds unchanged in the kernel and on the host.
//
// SMP: the bitmap has its own spinlock (rank Frames, inside an address
// space's lock). With several CPUs an allocation or a free normally touches
// only the caller's magazine (base/frames/frame_magazines.cpp): the lock is
// taken to refill an empty magazine or drain a full one, a batch of frames
// at a time, so two CPUs allocating and freeing at once share no lock. No
// caller holds the lock across calls. On a machine with one CPU
// (xcpu::one_cpu) the lock is only an owner mark, and every operation goes
// to the bitmap directly, as before magazines existed.
#pragma once
#include "base/frames/frame_refs.h"
#include "base/lib/error_or.h"
#include "base/lib/spinlock.h"
#include "base/lib/types.h"

namespace pvk {

class FrameAllocator {
 public:
  // CPUs with a magazine (ids at or above use the bitmap directly), how
  // many free frames a magazine holds at most, and how many a refill or a
  // drain moves at once (a CPU that allocates and frees in turn stays
  // between the two for as long as it keeps within a batch).
  static constexpr unsigned kMagazineCpus = 32;
  static constexpr unsigned kMagazineFrames = 64;
  static constexpr unsigned kMagazineBatch = 32;

  // storage must hold at least storage_words_for(max_pfn) words: the free
  // bitmap and the cached bitmap (which frames sit in some magazine). All
  // frames start used; add_free_range() hands RAM to the allocator.
  void init(uint64_t* storage, uint64_t max_pfn);
  // The storage is reached through a mapping that changes once at boot (the
  // early map gives way to the physmap); this points at the new address.
  void relocate(uint64_t* storage);
  static constexpr uint64_t words_for(uint64_t max_pfn) { return (max_pfn + 63) / 64; }
  static constexpr uint64_t storage_words_for(uint64_t max_pfn) { return 2 * words_for(max_pfn); }

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
  // (a double free, whether the frame is in the bitmap or in a magazine):
  // the caller reports it, nothing is corrupted.
  ErrorOr<void> try_free(Pfn pfn);
  void must_free(Pfn pfn) { must(try_free(pfn), "frame free"); }

  // Free in the bitmap or in a magazine.
  bool is_free(Pfn pfn) const;
  // Frames free, the magazines' included. Exact whenever no CPU is inside
  // an operation; one that is may be moving a batch and is seen part-way.
  uint64_t free_count() const;
  uint64_t max_pfn() const { return max_pfn_; }

  // Gives every magazine's frames back to the bitmap (the kernel, once it
  // knows it has one CPU; reserve_range and a failed run search, so that
  // no frame is out of their sight). A magazine whose CPU is in the middle
  // of an operation on it is left alone.
  void drain_magazines();

 private:
  // One CPU's cache. `busy` is the owner's claim while it works on the
  // stack (an exchange, always free but when another CPU is draining it
  // for an exhausted bitmap); `count` is stored atomically so free_count
  // may sum it from anywhere. Alone on its cache lines.
  struct alignas(64) Magazine {
    uint32_t busy = 0;
    uint32_t count = 0;
    Pfn frames[kMagazineFrames] = {};
  };

  // Bitmap side (frame_allocator.cpp), under lock_.
  ErrorOr<Pfn> take_from_bitmap();
  ErrorOr<Pfn> search_bitmap();
  // Inline: every free on one CPU, and each frame of a drain.
  void give_to_bitmap(uint64_t p) {
    __atomic_store_n(&bits_[p / 64], __atomic_load_n(&bits_[p / 64], __ATOMIC_RELAXED) | uint64_t{1} << (p % 64),
                     __ATOMIC_RELAXED);
    set_bitmap_free(bitmap_free_ + 1);
    if (p / 64 < hint_word_) hint_word_ = p / 64;  // keep handing out low frames first
  }
  bool free_in_bitmap(uint64_t p) const;
  bool cached(uint64_t p) const;
  void set_bitmap_free(uint64_t n) { __atomic_store_n(&bitmap_free_, n, __ATOMIC_RELAXED); }
  ErrorOr<Pfn> alloc_locked();
  ErrorOr<void> free_locked(uint64_t p);
  ErrorOr<Pfn> find_run(uint64_t count);

  // Magazine side (frame_magazines.cpp).
  Magazine* my_magazine();
  static void claim(Magazine& m);
  static bool try_claim(Magazine& m);
  static void unclaim(Magazine& m);
  static void set_count(Magazine& m, uint32_t n) { __atomic_store_n(&m.count, n, __ATOMIC_RELAXED); }
  ErrorOr<Pfn> alloc_cached(Magazine& m);
  ErrorOr<void> free_cached(Magazine& m, uint64_t p);
  bool mark_cached(uint64_t p);
  void unmark_cached(uint64_t p);
  bool refill_locked(Magazine& m);
  void drain_locked(Magazine& m, uint32_t n);
  void drain_others_locked(const Magazine* mine);

  static constexpr LockClass kLockClass{"frames", LockRank::Frames, LockStat::frames};
  mutable Spinlock lock_{kLockClass};
  uint64_t* bits_ = nullptr;    // set = free in the bitmap; written under lock_
  uint64_t* cached_ = nullptr;  // set = in some magazine; atomic bit operations
  uint64_t max_pfn_ = 0;
  uint64_t bitmap_free_ = 0;  // set bits in bits_
  uint64_t hint_word_ = 0;    // next-fit: where the last allocation found a frame
  Magazine magazines_[kMagazineCpus];
};

// The kernel's (and, in host tests, the test's) single frame allocator;
// inline: every allocation and free asks for it.
namespace detail {
extern FrameAllocator g_frames;
}
inline FrameAllocator& frames() { return detail::g_frames; }

// Drops one reference to a user frame; the frame goes back to the allocator
// with its last one (a COW copy's old frame, an unmapped leaf, a file page
// its file and every mapping let go of).
inline void put_frame_ref(Pfn p) {
  if (frame_refs().dec(p) == 0) frames().must_free(p);
}

}  // namespace pvk
