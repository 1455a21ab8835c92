#include "pvops/backends/xen_common.h"

#include "base/console/console.h"
#include "base/console/record.h"
#include "hypercalls/hypercall.h"
#include "hypercalls/mmu_sink.h"
#include "hypercalls/p2m.h"
#include "base/lib/kstring.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "pvops/pte_attrs.h"
#include "base/arch/cross_cpu.h"

namespace pvk::xen_pv {
namespace {

constexpr unsigned kMaxResends = 3;

// What a CPU's lazy-MMU section holds: whether it is in one, what a refusal
// means there, and the queue of updates it has not sent yet. Per CPU: page
// faults run without the kernel lock, so several CPUs may be inside sections
// at once, each over its own address space, and one CPU's flush must never
// send (or drop) another's half-built batch.
struct CpuMmuState {
  bool lazy = false;
  // Whether L1 updates and TLB flushes wait in the queue while lazy (the
  // backend's Deferral, set by init_common).
  bool defer_in_lazy = false;
  OnRefusal on_refusal = OnRefusal::Fail;  // of the current lazy section; Fail outside one
  xen::MmuQueue queue;
};
CpuMmuState g_cpu_state[kCpuMaskBits];
CpuMmuState& here() {
  CpuMmuState* cpu = &g_cpu_state[xcpu::this_cpu_id() % kCpuMaskBits];
  // Held in one register: else GCC derives every field's address from the
  // CPU's index again, a multiply apiece (a queued update read four).
  asm("" : "+r"(cpu));
  return *cpu;
}

// One bit per pseudo-physical frame: is it a page table right now?
constexpr uint64_t kMaxTrackedPfns = uint64_t{1} << 20;  // 4 GiB guests
uint64_t g_pt_bits[kMaxTrackedPfns / 64];

}  // namespace

ErrorOr<void> remap_accessor(Pfn pfn, PteFlags flags) {
  // The frame's one mapping the kernel writes through is its physmap
  // accessor (during boot, Xen's initial mapping); make it match its role.
  const uint64_t va = reinterpret_cast<uint64_t>(phys_to_virt(pfn));
  const uint64_t pte = (raw(xen::pfn_to_mfn(pfn)) << kPageShift) | flags.bits;
  const long rc = xen::update_va_mapping(va, pte, UVMF_INVLPG | UVMF_LOCAL);
  if (rc < 0) return report_rc("update_va_mapping", rc, va, pte);
  return {};
}

MustComplete::MustComplete() : saved_(here().on_refusal) { here().on_refusal = OnRefusal::Retry; }
MustComplete::~MustComplete() { here().on_refusal = saved_; }

namespace {

// The outcome of a queue operation that may have sent the queue. In a
// section that must complete, a refusal is reported and what Xen did not
// apply is sent again (a refusal that persists is given up all the same).
[[gnu::noinline, gnu::cold]] ErrorOr<void> settle_refused(ErrorOr<void> r, const char* during) {
  CpuMmuState& cpu = here();
  for (unsigned tries = 0; r.is_error() && cpu.on_refusal == OnRefusal::Retry && tries < kMaxResends; ++tries) {
    report_failure(during, r.error());
    cpu.queue.requeue_refused();
    r = cpu.queue.flush();
  }
  if (r.is_error()) return report_failure(during, r.error());
  return {};
}
// Inline: every flush and queued update asks, and Xen almost never refuses
// (the out-of-line call and its CPU lookup were 57 instructions of a
// one-page mprotect's).
[[gnu::always_inline]] inline ErrorOr<void> settle(ErrorOr<void> r, const char* during) {
  if (__builtin_expect(!r.is_error(), 1)) return {};
  return settle_refused(r, during);
}

ErrorOr<void> ext_now(unsigned cmd, uint64_t arg) {
  TRY(settle(queue().flush(), "mmu batch"));
  mmuext_op_t op{};
  op.cmd = cmd;
  op.arg1.mfn = arg;
  unsigned done = 0;
  const long rc = xen::mmuext_op(&op, 1, &done);
  if (rc < 0) return report_rc("mmuext_op", rc, cmd, arg);
  return {};
}

// Whether this CPU's updates and flushes wait for the end of its section
// (cpu: this CPU's state, looked up once by the caller).
bool deferring(const CpuMmuState& cpu) { return cpu.lazy && cpu.defer_in_lazy; }

void tlb_op(unsigned cmd, uint64_t va) {
  mmuext_op_t op{};
  op.cmd = cmd;
  op.arg1.linear_addr = va;
  CpuMmuState& cpu = here();
  if (deferring(cpu)) {
    // A full queue is sent first; if that is refused (and settled), the op
    // still needs queueing.
    if (auto r = cpu.queue.push_ext(op); r.is_error() && !settle(r, "mmuext_op").is_error())
      if (cpu.queue.push_ext(op).is_error()) report_failure("mmuext_op", Errno::EIO);
    return;
  }
  if (ext_now(cmd, va).is_error()) {
    // Already reported; a failed flush leaves stale translations, which
    // nothing can repair from here.
  }
}

// shootdown=: how flush_tlb_multi reaches the other vCPUs.
ShootdownMode g_shootdown = ShootdownMode::Hypercall;
// The writable-pagetable assist, once turned on for the boot (wrpt).
bool g_writable_pagetables = false;

// The vCPU bitmaps MMUEXT_*_MULTI point at (Xen reads them when the op is
// carried out, which may be at the end of the lazy section): a few per CPU,
// used in turn, so one outlives the queue it was put in.
constexpr unsigned kVcpuMaskSlots = 4;
static_assert(sizeof(xen_ulong_t) == sizeof(uint64_t), "a CpuMask word is one xen_ulong_t of Xen's vcpumask");
xen_ulong_t g_vcpumasks[kCpuMaskBits][kVcpuMaskSlots][CpuMask::kWords];
unsigned g_vcpumask_turn[kCpuMaskBits];

const xen_ulong_t* vcpumask_of(const CpuMask& cpus) {
  // Under Xen PV a CPU's dense id is its vCPU id (arch/pv brings vCPUs
  // up in order), so the mask's bits are the vCPU bitmap as it is.
  const unsigned me = xcpu::this_cpu_id() % kCpuMaskBits;
  xen_ulong_t* out = g_vcpumasks[me][g_vcpumask_turn[me]++ % kVcpuMaskSlots];
  for (unsigned i = 0; i < CpuMask::kWords; ++i) out[i] = cpus.words()[i];
  return out;
}

void multi_op(unsigned cmd, uint64_t va, const xen_ulong_t* mask) {
  count_event(g_mmu_counters.tlb_flush_multi);
  mmuext_op_t op{};
  op.cmd = cmd;
  op.arg1.linear_addr = va;
  set_xen_guest_handle(op.arg2.vcpumask, mask);
  if (deferring(here())) {
    // Behind the section's updates: one multicall carries both.
    if (auto r = queue().push_ext(op); r.is_error() && !settle(r, "mmuext_op").is_error())
      if (queue().push_ext(op).is_error()) report_failure("mmuext_op", Errno::EIO);
    return;
  }
  if (settle(queue().flush(), "mmu batch").is_error()) return;  // reported
  unsigned done = 0;
  const long rc = xen::mmuext_op(&op, 1, &done);
  if (rc >= 0) return;
  (void)report_rc("mmuext_op(flush multi)", rc, cmd, va);
  // Other vCPUs would keep translations of a mapping that changed: flush
  // every vCPU instead, and stop if even that is refused.
  mmuext_op_t every{};
  every.cmd = MMUEXT_TLB_FLUSH_ALL;
  const long rc_all = xen::mmuext_op(&every, 1, &done);
  if (rc_all < 0)
    panic("xen: MMUEXT_TLB_FLUSH_ALL refused (rc %ld) after a refused flush multi: stale TLB entries on other vCPUs",
          rc_all);
}

void flush_multi_by_hypercall(const CpuMask& cpus, const TlbFlushInfo& info) {
  const xen_ulong_t* mask = vcpumask_of(cpus);
  // One op, as Linux's Xen MMU sends: each MMUEXT_*_MULTI is a round of
  // Xen's flush IPIs to the targets and a wait for all of them, so a
  // page per op made a 16-page munmap sixteen rounds where one full flush
  // of the targets is one (the ipi mode sends the page list in one request
  // instead: pvops/tlb/tlb_shootdown.h).
  if (info.full || info.count != 1) {
    multi_op(MMUEXT_TLB_FLUSH_MULTI, 0, mask);
    return;
  }
  multi_op(MMUEXT_INVLPG_MULTI, raw(info.pages[0]), mask);
}

// The other vCPUs' flushes by IPI (shootdown=ipi), after the section's
// updates; the vCPUs that could not be signalled are flushed by Xen.
void flush_multi_by_ipi(const CpuMask& cpus, const TlbFlushInfo& info) {
  // The targets walk the tables again as soon as they have flushed: the
  // section's updates must be in them first.
  (void)settle(queue().flush(), "mmu batch");
  const CpuMask refused = shootdown_ipi(cpus, info);
  if (refused.empty()) return;
  // An event channel Xen would not signal: the hypervisor can still reach
  // those vCPUs' TLBs, so flush them whole that way and say so.
  kprintf("pvk: xen: shootdown=ipi could not signal vCPU %u (%u refused): flushing them through "
          "MMUEXT_TLB_FLUSH_MULTI\n",
          refused.next(0), refused.count());
  Record("shootdown_fallback").u64("first_cpu", refused.next(0)).u64("cpus", refused.count());
  const bool was_lazy = here().lazy;
  here().lazy = false;  // now, not queued: the caller expects the flush done on return
  multi_op(MMUEXT_TLB_FLUSH_MULTI, 0, vcpumask_of(refused));
  here().lazy = was_lazy;
}

// A target's own flushes, issued at once: a request may arrive while this
// CPU's kernel code has its lazy queue half filled, and must not send it.
void target_flush(unsigned cmd, uint64_t va) {
  mmuext_op_t op{};
  op.cmd = cmd;
  op.arg1.linear_addr = va;
  unsigned done = 0;
  const long rc = xen::mmuext_op(&op, 1, &done);
  if (rc < 0) panic("xen: a shootdown's local flush (mmuext cmd %u, 0x%lx) was refused: rc %ld", cmd, va, rc);
}
void target_flush_one(VirtAddr va) { target_flush(MMUEXT_INVLPG_LOCAL, raw(va)); }
void target_flush_all() { target_flush(MMUEXT_TLB_FLUSH_LOCAL, 0); }

// Root -> user root pairs. Few roots live at once (processes plus the
// root cache), so a small table searched linearly is enough.
//
// SMP: pairs are made and dropped only with the kernel lock held (roots
// come and go with fork, exec and exit), but read without it: a page fault
// that adds an L3 table mirrors the L4 store into its root's twin. So an
// entry never moves while it is live: a dropped pair's slot is marked free
// (root 0) and reused later; `user` is written before `root` publishes it.
struct RootPair {
  Pfn root;
  Pfn user;
};
constexpr unsigned kMaxRootPairs = 256;
RootPair g_pairs[kMaxRootPairs];
unsigned g_pair_count = 0;  // slots ever used (a high-water mark)

uint64_t* root_word(const RootPair& p) { return reinterpret_cast<uint64_t*>(const_cast<Pfn*>(&p.root)); }
Pfn pair_root(const RootPair& p) { return Pfn{__atomic_load_n(root_word(p), __ATOMIC_ACQUIRE)}; }

const RootPair* pair_of(Pfn root) {
  const unsigned used = __atomic_load_n(&g_pair_count, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < used; ++i)
    if (pair_root(g_pairs[i]) == root) return &g_pairs[i];
  return nullptr;
}

// A free slot for a new pair (kernel lock held), or null.
RootPair* free_pair_slot() {
  for (unsigned i = 0; i < g_pair_count; ++i)
    if (!raw(pair_root(g_pairs[i]))) return &g_pairs[i];
  if (g_pair_count == kMaxRootPairs) return nullptr;
  return &g_pairs[g_pair_count];
}

void add_pair(RootPair* slot, Pfn root, Pfn user) {
  slot->user = user;
  __atomic_store_n(root_word(*slot), raw(root), __ATOMIC_RELEASE);
  if (slot == &g_pairs[g_pair_count]) __atomic_store_n(&g_pair_count, g_pair_count + 1, __ATOMIC_RELEASE);
}

void drop_pair(const RootPair* pair) { __atomic_store_n(root_word(*pair), uint64_t{0}, __ATOMIC_RELEASE); }


}  // namespace

ErrorOr<void> load_root(Pfn root) {
  count_event(g_mmu_counters.root_loads);
  TRY(settle(queue().flush(), "mmu batch"));
  const RootPair* pair = pair_of(root);
  if (!pair) panic("xen: root 0x%lx has no user root", raw(root));
  mmuext_op_t ops[2] = {};
  ops[0].cmd = MMUEXT_NEW_BASEPTR;
  ops[0].arg1.mfn = raw(xen::pfn_to_mfn(root));
  ops[1].cmd = MMUEXT_NEW_USER_BASEPTR;
  ops[1].arg1.mfn = raw(xen::pfn_to_mfn(pair->user));
  unsigned done = 0;
  const long rc = xen::mmuext_op(ops, 2, &done);
  if (rc < 0) return report_rc("mmuext_op(new baseptr)", rc, ops[0].cmd, ops[0].arg1.mfn);
  g_current_root = root;
  return {};
}

void enter_lazy(OnRefusal on_refusal) {
  count_event(g_mmu_counters.lazy_sections);
  CpuMmuState& cpu = here();
  cpu.lazy = true;
  cpu.on_refusal = on_refusal;
}

ErrorOr<void> leave_lazy() {
  CpuMmuState& cpu = here();
  auto r = settle(cpu.queue.flush(), "mmu batch");
  cpu.lazy = false;
  cpu.on_refusal = OnRefusal::Fail;
  return r;
}

void flush_tlb_one(VirtAddr va) {
  count_event(g_mmu_counters.tlb_flush_one);
  tlb_op(MMUEXT_INVLPG_LOCAL, raw(va));
}

void flush_tlb_all() {
  count_event(g_mmu_counters.tlb_flush_all);
  tlb_op(MMUEXT_TLB_FLUSH_LOCAL, 0);
}

void flush_tlb_multi(const CpuMask& cpus_in, const TlbFlushInfo& info) {
  const CpuMask cpus = cpus_in.without(xcpu::this_cpu_id());
  if (cpus.empty()) return;
  if (g_shootdown == ShootdownMode::Hypercall)
    flush_multi_by_hypercall(cpus, info);
  else
    flush_multi_by_ipi(cpus, info);
}

// PV guests run on Xen's own PAT (kXenPat, pvops/pte_attrs.h): both
// directions use that layout.
CacheAttr pte_attrs(Pte e) { return cache_attr_for(kXenPatMsr, e); }
PteFlags make_pte_attrs(CacheAttr a) { return cache_flags_for(kXenPatMsr, a); }

ErrorOr<void> flush_lazy() { return settle(queue().flush(), "mmu batch"); }

void init_common(unsigned queue_capacity, Deferral deferral, ShootdownMode shootdown) {
  for (CpuMmuState& cpu : g_cpu_state) {
    cpu.queue.init(xen::hypercall_sink(), queue_capacity);
    cpu.lazy = false;
    cpu.defer_in_lazy = deferral == Deferral::InLazySections;
  }
  g_shootdown = shootdown;
  init_tlb_shootdown({&target_flush_one, &target_flush_all});
}

xen::MmuQueue& queue() { return here().queue; }
bool lazy() { return here().lazy; }

ErrorOr<void> enable_writable_pagetables() {
  if (long rc = xen::vm_assist(VMASST_CMD_enable, VMASST_TYPE_writable_pagetables); rc < 0)
    return report_rc("vm_assist(writable_pagetables)", rc, VMASST_CMD_enable, VMASST_TYPE_writable_pagetables);
  g_writable_pagetables = true;
  return {};
}
bool writable_pagetables() { return g_writable_pagetables; }

Errno report_rc(const char* op, long rc, uint64_t a, uint64_t b) {
  kprintf("pvk: xen: %s refused: rc %ld (0x%lx, 0x%lx)\n", op, rc, a, b);
  Record("hypercall_error").str("op", op).i64("rc", rc).u64("arg0", a).u64("arg1", b);
  return xen::errno_from_xen(rc);
}

Errno report_failure(const char* op, Errno e) {
  const xen::QueueFailure& f = queue().last_failure();
  kprintf("pvk: xen: %s refused: %s #%u rc %ld (ptr 0x%lx, val 0x%lx)\n", op, f.is_update ? "mmu_update" : "mmuext_op",
          f.index, f.rc, f.ptr, f.val);
  Record("hypercall_error")
      .str("op", f.is_update ? "mmu_update" : "mmuext_op")
      .str("during", op)
      .u64("index", f.index)
      .i64("rc", f.rc)
      .u64("ptr", f.ptr)
      .u64("val", f.val);
  return e;
}

ErrorOr<void> update_now(uint64_t ptr, uint64_t val) {
  TRY(settle(queue().flush(), "mmu batch"));
  TRY(settle(queue().push_update(ptr, val), "mmu_update"));
  return settle(queue().flush(), "mmu_update");
}

namespace {
[[gnu::noinline]] ErrorOr<void> update_queued_and_sent(CpuMmuState& cpu, uint64_t ptr, uint64_t val) {
  const bool defer = deferring(cpu);  // read first: a push never changes it
  TRY(settle(cpu.queue.push_update(ptr, val), "mmu_update"));  // sends the queue when it is full
  if (defer) return {};
  return settle(cpu.queue.flush(), "mmu_update");
}
}  // namespace

ErrorOr<void> update_queued(uint64_t ptr, uint64_t val) {
  // The common case inside a section, with no call and so no registers to
  // save: the update only joins the queue.
  CpuMmuState& cpu = here();
  if (__builtin_expect(deferring(cpu) && cpu.queue.try_push_update(ptr, val), 1)) return {};
  return update_queued_and_sent(cpu, ptr, val);
}

bool is_page_table(Pfn pfn) {
  return raw(pfn) < kMaxTrackedPfns && (__atomic_load_n(&g_pt_bits[raw(pfn) / 64], __ATOMIC_RELAXED) >> (raw(pfn) % 64)) & 1;
}

void mark_page_table(Pfn first, uint64_t count, bool is_table) {
  for (uint64_t p = raw(first); p < raw(first) + count; ++p) {
    if (p >= kMaxTrackedPfns) panic("xen: pfn 0x%lx beyond the %lu frames pvk tracks", p, kMaxTrackedPfns);
    // Atomic: CPUs faulting in different spaces turn neighbouring frames
    // into tables at once, and their bits share a word.
    if (is_table)
      __atomic_fetch_or(&g_pt_bits[p / 64], uint64_t{1} << (p % 64), __ATOMIC_RELAXED);
    else
      __atomic_fetch_and(&g_pt_bits[p / 64], ~(uint64_t{1} << (p % 64)), __ATOMIC_RELAXED);
  }
}

// Read-only everywhere, then pinned: Xen validates a root once, and every
// later change arrives as a checked update.
ErrorOr<void> pin_new_root(Pfn pfn) {
  mark_page_table(pfn, 1, true);
  if (auto r = remap_accessor(pfn, pte_flags::KernelRo); r.is_error()) {
    mark_page_table(pfn, 1, false);
    return r;
  }
  if (auto r = ext_now(MMUEXT_PIN_L4_TABLE, raw(xen::pfn_to_mfn(pfn))); r.is_error()) {
    mark_page_table(pfn, 1, false);
    must(remap_accessor(pfn, pte_flags::KernelRw), "restore accessor");
    return r;
  }
  return {};
}

void unpin_root(Pfn pfn) {
  MustComplete teardown;
  if (ext_now(MMUEXT_UNPIN_TABLE, raw(xen::pfn_to_mfn(pfn))).is_error()) return;
  mark_page_table(pfn, 1, false);
  must(remap_accessor(pfn, pte_flags::KernelRw), "restore accessor");
}

ErrorOr<void> mirror_user_l4(Pte* slot, Pte v) {
  const unsigned index = static_cast<unsigned>((reinterpret_cast<uint64_t>(slot) & (kPageSize - 1)) / sizeof(Pte));
  if (index >= kEntriesPerTable / 2) return {};  // kernel half: never in a user root
  const RootPair* pair = pair_of(virt_to_pfn(slot));
  if (!pair) return {};
  return update_now(xen::machine_address(phys_to_virt<Pte>(pair->user) + index) | MMU_NORMAL_PT_UPDATE, v.raw);
}

ErrorOr<void> store_l4(Pte* slot, Pte v) {
  const Pte old = *slot;
  TRY(mirror_user_l4(slot, v));  // the twin first: if Xen refuses it, nothing changed
  auto r = update_now(xen::machine_address(slot) | MMU_NORMAL_PT_UPDATE, v.raw);
  if (r.is_error()) {
    MustComplete undo;  // put the twin back
    must(mirror_user_l4(slot, old), "restore the user root's entry");
  }
  return r;
}

ErrorOr<void> prepare_table(Pfn pfn, Level level) {
  if (level != Level::L4) {
    mark_page_table(pfn, 1, true);
    if (auto r = remap_accessor(pfn, pte_flags::KernelRo); r.is_error()) {
      mark_page_table(pfn, 1, false);
      return r;
    }
    count_event(g_mmu_counters.pt_pages_alloc);
    return {};
  }
  RootPair* slot = free_pair_slot();
  if (!slot) return Errno::ENOMEM;
  const Pfn user = TRY(frames().try_alloc());
  memset(phys_to_virt(user), 0, kPageSize);
  if (auto r = pin_new_root(user); r.is_error()) {
    frames().must_free(user);
    return r;
  }
  if (auto r = pin_new_root(pfn); r.is_error()) {
    unpin_root(user);
    frames().must_free(user);
    return r;
  }
  add_pair(slot, pfn, user);
  count_event(g_mmu_counters.pt_pages_alloc, 2);
  return {};
}

ErrorOr<void> retire_table(Pfn pfn, Level level) {
  MustComplete teardown;
  if (level == Level::L4) {
    TRY(ext_now(MMUEXT_UNPIN_TABLE, raw(xen::pfn_to_mfn(pfn))));
    if (const RootPair* pair = pair_of(pfn)) {
      const Pfn user = pair->user;
      drop_pair(pair);
      unpin_root(user);
      frames().must_free(user);
      count_event(g_mmu_counters.pt_pages_release);
    }
  }
  // Queued updates may still name this table; they must land first.
  TRY(flush_lazy());
  mark_page_table(pfn, 1, false);
  TRY(remap_accessor(pfn, pte_flags::KernelRw));
  count_event(g_mmu_counters.pt_pages_release);
  return {};
}

}  // namespace pvk::xen_pv
