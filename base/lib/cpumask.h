// A set of CPUs (Linux's cpumask): which CPUs may hold translations of an
// address space, which a shootdown must reach, which have acknowledged it.
//
// Fixed size (kCpuMaskBits, the most CPUs the kernel will ever run; the SMP
// code checks its own limit against it). Bits are changed and read with
// atomic operations, so CPUs may set and clear their own bits concurrently
// while another reads the mask: set/clear are read-modify-writes with
// release order (what the CPU did before joining or leaving is visible to
// whoever sees the bit), test/snapshot load with acquire order. A snapshot
// is a plain copy for iterating and counting without the mask changing
// underneath.
#pragma once
#include <stdint.h>

namespace pvk {

// The kernel's CPU limit as base/ knows it (arch/smp's smp::kMaxCpus must
// not exceed it).
inline constexpr unsigned kCpuMaskBits = 16;

class CpuMask {
 public:
  static constexpr unsigned kBits = kCpuMaskBits;
  static constexpr unsigned kWordBits = 64;
  static constexpr unsigned kWords = (kBits + kWordBits - 1) / kWordBits;

  constexpr CpuMask() = default;
  // Every CPU below n (e.g. the online ones when they are numbered densely).
  static constexpr CpuMask first(unsigned n) {
    CpuMask m;
    for (unsigned c = 0; c < n && c < kBits; ++c) m.words_[c / kWordBits] |= bit(c);
    return m;
  }
  static constexpr CpuMask of(unsigned cpu) {
    CpuMask m;
    if (cpu < kBits) m.words_[cpu / kWordBits] |= bit(cpu);
    return m;
  }

  // Atomic: safe against other CPUs changing other bits at the same time.
  // Out-of-range CPUs are ignored (set/clear) or absent (test).
  void set(unsigned cpu) {
    if (cpu < kBits) __atomic_fetch_or(&words_[cpu / kWordBits], bit(cpu), __ATOMIC_RELEASE);
  }
  void clear(unsigned cpu) {
    if (cpu < kBits) __atomic_fetch_and(&words_[cpu / kWordBits], ~bit(cpu), __ATOMIC_RELEASE);
  }
  // Sets the bit and says whether it was set before.
  bool test_and_set(unsigned cpu) {
    if (cpu >= kBits) return false;
    return __atomic_fetch_or(&words_[cpu / kWordBits], bit(cpu), __ATOMIC_ACQ_REL) & bit(cpu);
  }
  bool test(unsigned cpu) const {
    return cpu < kBits && (__atomic_load_n(&words_[cpu / kWordBits], __ATOMIC_ACQUIRE) & bit(cpu));
  }
  void clear_all() {
    for (uint64_t& w : words_) __atomic_store_n(&w, 0, __ATOMIC_RELEASE);
  }

  // A consistent-per-word copy to iterate or combine.
  CpuMask snapshot() const {
    CpuMask m;
    for (unsigned i = 0; i < kWords; ++i) m.words_[i] = __atomic_load_n(&words_[i], __ATOMIC_ACQUIRE);
    return m;
  }

  // Plain (non-atomic) operations, meant for snapshots and local masks.
  unsigned count() const {
    unsigned n = 0;
    for (uint64_t w : words_) n += static_cast<unsigned>(__builtin_popcountll(w));
    return n;
  }
  bool empty() const {
    for (uint64_t w : words_)
      if (w) return false;
    return true;
  }
  CpuMask without(unsigned cpu) const {
    CpuMask m = *this;
    if (cpu < kBits) m.words_[cpu / kWordBits] &= ~bit(cpu);
    return m;
  }
  CpuMask operator&(const CpuMask& o) const {
    CpuMask m;
    for (unsigned i = 0; i < kWords; ++i) m.words_[i] = words_[i] & o.words_[i];
    return m;
  }
  CpuMask operator|(const CpuMask& o) const {
    CpuMask m;
    for (unsigned i = 0; i < kWords; ++i) m.words_[i] = words_[i] | o.words_[i];
    return m;
  }
  bool operator==(const CpuMask& o) const {
    for (unsigned i = 0; i < kWords; ++i)
      if (words_[i] != o.words_[i]) return false;
    return true;
  }
  // The lowest CPU at or after `from` in the mask; kBits if none.
  unsigned next(unsigned from) const {
    for (unsigned c = from; c < kBits;) {
      const uint64_t w = words_[c / kWordBits] >> (c % kWordBits);
      if (w) return c + static_cast<unsigned>(__builtin_ctzll(w));
      c = (c / kWordBits + 1) * kWordBits;
    }
    return kBits;
  }
  // for (unsigned cpu : mask) ... over a plain copy (take a snapshot() of a
  // shared mask first).
  class Iterator {
   public:
    constexpr Iterator(const CpuMask* m, unsigned at) : m_(m), at_(at) {}
    unsigned operator*() const { return at_; }
    Iterator& operator++() {
      at_ = m_->next(at_ + 1);
      return *this;
    }
    bool operator!=(const Iterator& o) const { return at_ != o.at_; }

   private:
    const CpuMask* m_;
    unsigned at_;
  };
  Iterator begin() const { return Iterator(this, next(0)); }
  Iterator end() const { return Iterator(this, kBits); }

  // The words, least significant CPU first (Xen's vcpumask bitmap is this
  // layout: bit n of the array is vCPU n).
  const uint64_t* words() const { return words_; }

 private:
  static constexpr uint64_t bit(unsigned cpu) { return uint64_t{1} << (cpu % kWordBits); }
  uint64_t words_[kWords] = {};
};

}  // namespace pvk
