#include "kernel/proc/probes.h"

#include "base/abi.h"
#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"
#include "base/arch/platform.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "base/layout.h"
#include "base/lib/format.h"
#include "base/lib/kstring.h"
#include "arch/finish.h"
#include "arch/trap_frame.h"
#include "kernel/proc/process.h"
#include "mm/kernel_space.h"
#include "pvops/event_probes.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "pvops/call/pvop.h"

namespace pvk {
namespace {

// A kernel page of its own for the TLB and mmu_update probes, apart from the
// selftests' scratch ranges (1-3 GiB in), SYS_pvk_cpa's (8 GiB) and the
// backends' (64 GiB).
constexpr VirtAddr kProbeVa{PVK_SCRATCH_BASE + (uint64_t{9} << 30)};
// The armed probe faults (take_probe_fault): which thread, how many left.
Process* g_fault_thread = nullptr;
int g_fault_tid = 0;
uint64_t g_faults_left = 0;
// An IPI round trip that takes longer than this was not answered.
constexpr uint64_t kIpiTimeoutNs = 100'000'000;

bool on_xen() { return g_platform->handle_event != nullptr; }

// The acknowledgements of Ipi::Probe (its handler runs on the target).
uint64_t g_probe_acks = 0;
void ack_probe() { __atomic_add_fetch(&g_probe_acks, 1, __ATOMIC_RELEASE); }

// Ordinary kernel code with no event in it: the formatter, a few dozen
// instructions of loads, stores, branches and calls per character.
void work(uint64_t count) {
  char line[64];
  for (uint64_t i = 0; i < count; ++i) format(line, sizeof line, "probe %lu %lx %s", i, i * 0x9e37, "work");
}

// Arms the faults; the caller makes them (and times them) in user mode.
void arm_faults(uint64_t count) {
  Process* p = current();
  __atomic_store_n(&g_faults_left, uint64_t{0}, __ATOMIC_RELEASE);
  g_fault_thread = p;
  g_fault_tid = p ? p->pid : 0;
  __atomic_store_n(&g_faults_left, p ? count : 0, __ATOMIC_RELEASE);
}

ErrorOr<void> ipis(uint64_t count) {
  unsigned target = 0;
  while (target < 64 && (target == xcpu::this_cpu_id() || !xcpu::online(target))) ++target;
  if (target >= 64 || !g_platform->send_ipi) return Errno::EOPNOTSUPP;
  xcpu::set_handler(xcpu::Ipi::Probe, &ack_probe);
  const uint64_t timeout_ticks = g_platform->tsc_khz * (kIpiTimeoutNs / 1'000'000);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t want = __atomic_load_n(&g_probe_acks, __ATOMIC_ACQUIRE) + 1;
    if (!xcpu::send(target, xcpu::Ipi::Probe)) return Errno::EOPNOTSUPP;
    const uint64_t t0 = cpu::rdtsc();
    while (__atomic_load_n(&g_probe_acks, __ATOMIC_ACQUIRE) < want) {
      cpu::relax();
      xcpu::poll();  // the contract of a loop that waits on another CPU
      if (cpu::rdtsc() - t0 > timeout_ticks) return Errno::ETIMEDOUT;
    }
  }
  return {};
}

// The frames the clear and copy probes write (one, or two for a copy).
struct Frames {
  Pfn f[2] = {};
  unsigned n = 0;
  ~Frames() {
    while (n) frames().must_free(f[--n]);
  }
  ErrorOr<void> take(unsigned want) {
    while (n < want) f[n++] = TRY(frames().try_alloc());
    return {};
  }
};

// The probe page mapped read-only (an ordinary frame), for the events that
// need a kernel mapping of their own; unmapped and freed when done.
class ProbePage {
 public:
  ErrorOr<void> map() {
    frame_ = TRY(frames().try_alloc());
    LazyMmuSection section(kernel_root());
    auto r = PVOP(range.map)(kernel_root(), kProbeVa, 1, FrameSource{&frame_, {}}, pte_flags::KernelRo);
    auto f = section.finish();
    mapped_ = !PVOP(range.lookup)(kernel_root(), kProbeVa).is_error();
    return r.is_error() ? r : f;
  }
  ~ProbePage() {
    if (mapped_) {
      LazyMmuSection section(kernel_root(), OnRefusal::Retry);
      must(PVOP(range.unmap)(kernel_root(), kProbeVa, 1, {}, section), "probe page: unmap");
      must(section.finish(), "probe page: unmap");
    }
    if (raw(frame_)) frames().must_free(frame_);
  }

 private:
  Pfn frame_{};
  bool mapped_ = false;
};

// Page walks of the physmap (the walk's lookup through pvops), one L1
// table apart: kernel code whose loads spread over many pages, as fork's,
// mprotect's and a fault's do, where the formatter stays on a few.
void walks(uint64_t count) {
  const uint64_t span = frames().max_pfn() / kEntriesPerTable;
  uint64_t found = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const Pfn pfn{(i % (span ? span : 1)) * kEntriesPerTable};
    found += !PVOP(range.lookup)(kernel_root(), VirtAddr{reinterpret_cast<uint64_t>(phys_to_virt(pfn))}).is_error();
  }
  asm volatile("" : : "r"(found));
}

template <typename F>
uint64_t timed(F&& f) {
  const uint64_t t0 = cpu::rdtsc();
  f();
  return tsc_to_ns(cpu::rdtsc() - t0);
}

}  // namespace

bool take_probe_fault_at_probe(TrapFrame& f) {
  if (!__atomic_load_n(&g_faults_left, __ATOMIC_ACQUIRE)) return false;
  Process* p = current();
  if (!p || p != g_fault_thread || p->pid != g_fault_tid) return false;
  __atomic_sub_fetch(&g_faults_left, 1, __ATOMIC_ACQ_REL);
  f.rip += abi::kProbeLoadBytes;
  return true;
}

ErrorOr<uint64_t> run_probe(uint64_t kind, uint64_t count) {
  if (kind >= abi::PROBE_kinds || count == 0 || count > abi::kMaxProbeCount) return Errno::EINVAL;
  arm_faults(0);  // a new call disarms what an earlier one left
  const bool xen_only = kind == abi::PROBE_hypercall || kind == abi::PROBE_multicall ||
                        kind == abi::PROBE_mmu_update || kind == abi::PROBE_ptwr;
  if (xen_only && !on_xen()) return Errno::EOPNOTSUPP;
  ErrorOr<void> r{};
  uint64_t ns = 0;
  switch (kind) {
    case abi::PROBE_work: ns = timed([&] { work(count); }); break;
    case abi::PROBE_walk: ns = timed([&] { walks(count); }); break;
    case abi::PROBE_exception: arm_faults(count); break;  // made and timed by the caller
    case abi::PROBE_ipi: ns = timed([&] { r = ipis(count); }); break;
    case abi::PROBE_hypercall: ns = timed([&] { r = xen_probe::null_hypercalls(count); }); break;
    case abi::PROBE_multicall: ns = timed([&] { r = xen_probe::multicall_calls(count); }); break;
    case abi::PROBE_clear:
    case abi::PROBE_copy: {
      Frames fr;
      TRY(fr.take(kind == abi::PROBE_copy ? 2 : 1));
      void* a = phys_to_virt(fr.f[0]);
      if (kind == abi::PROBE_clear)
        ns = timed([&] {
          for (uint64_t i = 0; i < count; ++i) memset(a, static_cast<int>(i), kPageSize);
        });
      else
        ns = timed([&] {
          const void* b = phys_to_virt(fr.f[1]);
          for (uint64_t i = 0; i < count; ++i) memcpy(a, b, kPageSize);
        });
      break;
    }
    case abi::PROBE_invlpg:
    case abi::PROBE_cr3_reload:
    case abi::PROBE_mmu_update:
    case abi::PROBE_ptwr: {
      ProbePage page;
      TRY(page.map());
      if (kind == abi::PROBE_invlpg) {
        ns = timed([&] {
          for (uint64_t i = 0; i < count; ++i) PVOP(flush_tlb_one)(kProbeVa);
        });
      } else if (kind == abi::PROBE_cr3_reload) {
        ns = timed([&] {
          for (uint64_t i = 0; i < count; ++i) PVOP(flush_tlb_all)();
        });
      } else {
        Pte* leaf = xen_probe::leaf_of(kernel_root(), kProbeVa);
        if (!leaf) return Errno::EINVAL;
        ns = timed([&] {
          r = kind == abi::PROBE_mmu_update ? xen_probe::mmu_update_entries(leaf, count)
                                            : xen_probe::ptwr_stores(leaf, count);
        });
        // The toggled write bit may be cached: the mapping is read-only again.
        PVOP(flush_tlb_one)(kProbeVa);
      }
      break;
    }
    default: return Errno::EINVAL;
  }
  if (r.is_error()) return r.error();
  return ns;
}

}  // namespace pvk
