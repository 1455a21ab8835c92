#include "base/lib/spinlock.h"

#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"
#include "base/arch/platform.h"
#include "base/lib/error_or.h"

namespace pvk {

lock_detail::LockCountsRow lock_detail::g_lock_counts[lock_detail::kMaxLockCpus];

namespace {

using lock_detail::g_lock_counts;
using lock_detail::LockCountsRow;
// Per-CPU books of held locks (debug builds); indexed by xcpu::this_cpu_id,
// which is below arch/smp's kMaxCpus (checked there against this bound).
constexpr unsigned kMaxLockCpus = lock_detail::kMaxLockCpus;

#ifndef NDEBUG
LockOrder g_held[kMaxLockCpus];

// How long a CPU spins before it calls the lock stuck (a CPU that never
// releases it: a lost unlock, or a holder that died).
constexpr uint64_t kStuckMs = 20'000;
#endif

const char* const kLockStatNames[kLockStats] = {
#define PVK_LOCK_COUNTER(cls) #cls,
#include "base/counters.inc"
};

// Spins before a LockWait::Halt waiter halts.
constexpr unsigned kSpinsBeforeHalt = 100;

// Which lock and ticket each CPU is halted waiting for (lock null: none).
struct Halted {
  const Spinlock* lock;
  uint32_t ticket;
};
Halted g_halted[kMaxLockCpus];

unsigned me() {
  const unsigned id = xcpu::this_cpu_id();
  return id < kMaxLockCpus ? id : 0;
}

}  // namespace

IrqState irq_save() {
  if (!g_platform || !g_platform->irq_save) return {0};
  return {g_platform->irq_save()};
}

void irq_restore(IrqState s) {
  if (g_platform && g_platform->irq_restore) g_platform->irq_restore(s.bits);
}

// Debug builds: the lock is not already this CPU's and its rank is above
// every lock the CPU holds; the book of held locks follows each take and
// release (a lost unlock or an out-of-order release stops the kernel).
void Spinlock::check_take([[maybe_unused]] int32_t cpu) const {
#ifndef NDEBUG
  if (__atomic_load_n(&owner_, __ATOMIC_RELAXED) == cpu)
    panic("lock %s: taken again by CPU %d, which holds it", cls_->name, cpu);
  if (const LockClass* held = g_held[cpu].conflict(*cls_))
    panic("lock order: CPU %d takes %s (rank %u) while holding %s (rank %u)", cpu, cls_->name,
          static_cast<unsigned>(cls_->rank), held->name, static_cast<unsigned>(held->rank));
#endif
}

void Spinlock::note_taken([[maybe_unused]] int32_t cpu) const {
#ifndef NDEBUG
  g_held[cpu].push(*cls_);
#endif
}

void Spinlock::check_release([[maybe_unused]] int32_t cpu) const {
#ifndef NDEBUG
  if (__atomic_load_n(&owner_, __ATOMIC_RELAXED) != cpu)
    panic("lock %s: released by CPU %d, held by CPU %d", cls_->name, cpu, __atomic_load_n(&owner_, __ATOMIC_RELAXED));
  if (!g_held[cpu].pop(*cls_)) panic("lock %s: released out of order on CPU %d", cls_->name, cpu);
#endif
}

void Spinlock::acquire() {
  const int32_t cpu = static_cast<int32_t>(me());
  check_take(cpu);
#ifndef NDEBUG
  const uint64_t start = cpu::rdtsc();
#endif
  const uint32_t ticket = __atomic_fetch_add(&next_, 1, __ATOMIC_RELAXED);
  unsigned spins = 0;
  uint64_t waited = 0;
  while (__atomic_load_n(&serving_, __ATOMIC_ACQUIRE) != ticket) {
    ++waited;
    cpu::relax();
    xcpu::poll();
    if (wait_ == LockWait::Halt && ++spins >= kSpinsBeforeHalt) {
      wait_for(ticket, cpu);
      spins = 0;
    }
#ifndef NDEBUG
    if (g_platform && g_platform->tsc_khz && cpu::rdtsc() - start > kStuckMs * g_platform->tsc_khz)
      panic("lock %s: CPU %d waited %lu ms (held by CPU %d)", cls_->name, cpu, kStuckMs,
            __atomic_load_n(&owner_, __ATOMIC_RELAXED));
#endif
  }
  __atomic_store_n(&owner_, cpu, __ATOMIC_RELAXED);
  if (cls_->stat != LockStat::none) {
    LockCounts& counts = g_lock_counts[cpu].c[static_cast<unsigned>(cls_->stat)];
    ++counts.acquired;
    if (waited) {
      ++counts.contended;
      counts.spins += waited;
    }
  }
  note_taken(cpu);
}

// Halts until woken (interrupts are off here, so the platform's halt,
// which enables them only for the wait, cannot miss a kick that arrives
// after the check). Announce first, then check: the releaser stores
// serving_ and then reads the announcement, so one of the two sees the other.
void Spinlock::wait_for(uint32_t ticket, int32_t cpu) {
  if (!g_platform || !g_platform->idle_halt) return;
  Halted& h = g_halted[cpu];
  __atomic_store_n(&h.ticket, ticket, __ATOMIC_SEQ_CST);
  __atomic_store_n(&h.lock, this, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&serving_, __ATOMIC_SEQ_CST) != ticket) g_platform->idle_halt();
  __atomic_store_n(&h.lock, nullptr, __ATOMIC_SEQ_CST);
}

void Spinlock::wake_next(uint32_t serving) {
  for (unsigned c = 0; c < kMaxLockCpus; ++c) {
    const Halted& h = g_halted[c];
    if (__atomic_load_n(&h.lock, __ATOMIC_SEQ_CST) == this && __atomic_load_n(&h.ticket, __ATOMIC_SEQ_CST) == serving) {
      xcpu::send(c, xcpu::Ipi::Reschedule);
      return;
    }
  }
}

void Spinlock::release() {
#ifndef NDEBUG
  check_release(static_cast<int32_t>(me()));  // (me() is an indirect call: debug builds only)
#endif
  __atomic_store_n(&owner_, -1, __ATOMIC_RELAXED);
  const uint32_t serving = __atomic_load_n(&serving_, __ATOMIC_RELAXED) + 1;
  __atomic_store_n(&serving_, serving, __ATOMIC_SEQ_CST);
  if (wait_ == LockWait::Halt && __atomic_load_n(&next_, __ATOMIC_RELAXED) != serving) wake_next(serving);
}

IrqState Spinlock::lock_shared() {
  const IrqState saved = irq_save();
  acquire();
  return saved;
}

void Spinlock::unlock_shared(IrqState saved) {
  release();
  irq_restore(saved);
}

LockCounts lock_counts(LockStat s) {
  LockCounts sum;
  const unsigned i = static_cast<unsigned>(s);
  if (i >= kLockStats) return sum;
  // Another CPU may be adding to its row: each word is read whole (aligned
  // 64-bit loads), so a sum is at most a few events behind.
  for (const LockCountsRow& row : g_lock_counts) {
    sum.acquired += __atomic_load_n(&row.c[i].acquired, __ATOMIC_RELAXED);
    sum.contended += __atomic_load_n(&row.c[i].contended, __ATOMIC_RELAXED);
    sum.spins += __atomic_load_n(&row.c[i].spins, __ATOMIC_RELAXED);
  }
  return sum;
}

const char* lock_stat_name(LockStat s) {
  const unsigned i = static_cast<unsigned>(s);
  return i < kLockStats ? kLockStatNames[i] : "none";
}

bool Spinlock::held_by_this_cpu_shared() const {
  return __atomic_load_n(&owner_, __ATOMIC_RELAXED) == static_cast<int32_t>(me());
}

bool Spinlock::contended() const {
  if (xcpu::one_cpu()) return false;
  return __atomic_load_n(&next_, __ATOMIC_ACQUIRE) - __atomic_load_n(&serving_, __ATOMIC_ACQUIRE) > 1;
}

bool Spinlock::is_locked() const {
  if (xcpu::one_cpu()) return __atomic_load_n(&owner_, __ATOMIC_RELAXED) >= 0;
  return __atomic_load_n(&serving_, __ATOMIC_ACQUIRE) != __atomic_load_n(&next_, __ATOMIC_ACQUIRE);
}

}  // namespace pvk
