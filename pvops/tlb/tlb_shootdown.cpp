// The IPI path of TLB shootdown, shared by the native backend and Xen's
// shootdown=ipi, and the per-CPU loaded root.
//
// One mailbox per *sender*: a CPU fills its own mailbox (what to flush),
// marks the targets pending in it, and sends each a TlbFlush request. A
// target's handler looks through every sender's mailbox for its pending
// bit, flushes, and clears the bit: that is the acknowledgement. The sender
// touches its mailbox again only once every pending bit is clear, so a
// target never reads a mailbox being rewritten, and no lock is needed:
// concurrent shootdowns from several CPUs use different mailboxes. While it
// waits the sender polls its own requests (xcpu::poll), so two CPUs shooting
// at each other both make progress.
#include "pvops/tlb/tlb_shootdown.h"

#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"
#include "base/console/console.h"
#include "base/counters.h"
#include "pvops/mmu_ops.h"

namespace pvk {
namespace {

struct Mailbox {
  CpuMask pending;     // targets that have not run this request yet
  uint64_t gen = 0;    // this sender's shootdown count (reports, debugging)
  TlbFlushInfo info;   // stable while any pending bit is set
};

Mailbox g_mailboxes[kCpuMaskBits];
CpuMask g_kernel_tlb_cpus;
CpuMask g_lazy_tlb_cpus;
LocalTlbFlush g_local{};
void (*g_leave_hook)(Pfn root) = nullptr;

// How long a sender waits for acknowledgements before it stops the kernel:
// generous (tens of seconds of TSC at any plausible rate), because a CPU of
// a TCG guest may not be scheduled for a long while.
constexpr uint64_t kAckTimeoutTicks = uint64_t{1} << 36;

void run(const TlbFlushInfo& info) {
  if (info.full || info.count > kTlbSinglePageFlushCeiling)
    g_local.all();
  else
    for (unsigned i = 0; i < info.count; ++i) g_local.one(info.pages[i]);
  if (info.leave && g_leave_hook && current_root() == info.leave_root) g_leave_hook(info.leave_root);
}

}  // namespace

Pfn g_current_roots[kCpuMaskBits];

void set_current_root(Pfn root) {
  const unsigned cpu = xcpu::this_cpu_id();
  if (cpu >= kCpuMaskBits) return;
  g_current_roots[cpu] = root;
  g_kernel_tlb_cpus.set(cpu);
}

CpuMask kernel_tlb_cpus() { return g_kernel_tlb_cpus.snapshot(); }

void reset_tlb_state() {
  for (Mailbox& m : g_mailboxes) m = Mailbox{};
  for (Pfn& r : g_current_roots) r = Pfn{};
  g_kernel_tlb_cpus.clear_all();
  g_lazy_tlb_cpus.clear_all();
}

void set_tlb_lazy(unsigned cpu) { g_lazy_tlb_cpus.set(cpu); }
void clear_tlb_lazy(unsigned cpu) { g_lazy_tlb_cpus.clear(cpu); }
bool tlb_lazy(unsigned cpu) { return g_lazy_tlb_cpus.test(cpu); }
CpuMask lazy_tlb_cpus() { return g_lazy_tlb_cpus.snapshot(); }

CpuMask shootdown_targets(const CpuMask& space_cpus, const CpuMask& lazy, unsigned me, TablesFreed freed) {
  const CpuMask others = space_cpus.without(me);
  if (freed == TablesFreed::Yes) return others;
  CpuMask targets;
  for (unsigned cpu : others)
    if (!lazy.test(cpu)) targets.set(cpu);
  return targets;
}

uint64_t bump_tlb_gen(SpaceTlb& tlb) { return __atomic_add_fetch(&tlb.gen, 1, __ATOMIC_SEQ_CST); }
uint64_t read_tlb_gen(const SpaceTlb& tlb) { return __atomic_load_n(&tlb.gen, __ATOMIC_SEQ_CST); }
uint64_t tlb_flushed_to(const SpaceTlb& tlb, unsigned cpu) {
  return cpu < kCpuMaskBits ? __atomic_load_n(&tlb.flushed[cpu], __ATOMIC_ACQUIRE) : 0;
}

void note_tlb_flushed(SpaceTlb& tlb, unsigned cpu, uint64_t gen) {
  if (cpu >= kCpuMaskBits) return;
  uint64_t seen = __atomic_load_n(&tlb.flushed[cpu], __ATOMIC_RELAXED);
  while (seen < gen &&
         !__atomic_compare_exchange_n(&tlb.flushed[cpu], &seen, gen, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
}

void advance_tlb_flushed(SpaceTlb& tlb, unsigned cpu, uint64_t gen) {
  if (cpu >= kCpuMaskBits || gen == 0) return;
  uint64_t expected = gen - 1;
  __atomic_compare_exchange_n(&tlb.flushed[cpu], &expected, gen, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

void init_tlb_shootdown(const LocalTlbFlush& local) {
  g_local = local;
  xcpu::set_handler(xcpu::Ipi::TlbFlush, &handle_tlb_shootdowns);
}

void handle_tlb_shootdowns() {
  const unsigned me = xcpu::this_cpu_id();
  if (!g_local.all) return;  // no backend yet: nobody can have asked
  for (unsigned s = 0; s < kCpuMaskBits; ++s) {
    Mailbox& m = g_mailboxes[s];
    if (s == me || !m.pending.test(me)) continue;  // acquire: the info below is the sender's
    run(m.info);
    m.pending.clear(me);  // release: the flush is done before the sender sees this
  }
}

void set_tlb_leave_hook(void (*hook)(Pfn root)) { g_leave_hook = hook; }

CpuMask ask_to_leave_root(const CpuMask& cpus, Pfn root) {
  TlbFlushInfo info;
  info.full = true;
  info.leave = true;
  info.leave_root = root;
  return shootdown_ipi(cpus, info);
}

CpuMask shootdown_ipi(const CpuMask& targets_in, const TlbFlushInfo& info) {
  const unsigned me = xcpu::this_cpu_id();
  const CpuMask targets = targets_in.without(me);
  CpuMask refused;
  if (targets.empty()) return refused;
  if (me >= kCpuMaskBits) panic("tlb shootdown: CPU %u beyond the %u a CpuMask holds", me, kCpuMaskBits);
  Mailbox& m = g_mailboxes[me];
  if (!m.pending.snapshot().empty()) panic("tlb shootdown: CPU %u's mailbox still pending at a new request", me);
  m.info = info;
  ++m.gen;
  for (unsigned cpu : targets) m.pending.set(cpu);  // release: the info is written first
  for (unsigned cpu : targets) {
    if (!xcpu::online(cpu) || !xcpu::send(cpu, xcpu::Ipi::TlbFlush)) {
      refused.set(cpu);
      m.pending.clear(cpu);
      continue;
    }
    count_event(g_mmu_counters.ipis_sent);
  }
  const uint64_t start = cpu::rdtsc();
  for (;;) {
    const CpuMask left = m.pending.snapshot();
    if (left.empty()) break;
    xcpu::poll();  // requests sent to this CPU meanwhile (another CPU may wait on us)
    if (cpu::rdtsc() - start > kAckTimeoutTicks)
      panic("tlb shootdown: CPU %u never acknowledged flush #%lu of CPU %u (%u CPUs pending): stale TLB entries "
            "would outlive their mappings",
            left.next(0), m.gen, me, left.count());
    cpu::relax();
  }
  return refused;
}

}  // namespace pvk
