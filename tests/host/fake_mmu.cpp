#include "host_compat.h"  // first: see there

#include "fake_mmu.h"

#include "cross_cpu_host.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#if __has_include("base/frames/frame_refs.h")
#include "base/frames/frame_refs.h"
#define PVK_HOST_HAVE_FRAME_REFS 1
#endif
#include "base/counters.h"
#include "pvops/ops_builder.h"
#include "pvops/call/pvop.h"
#include "pvops/pte_attrs.h"

namespace pvk::test {
namespace {

constexpr uint64_t kMaxFrames = uint64_t{1} << 16;  // 256 MiB of fake RAM at most
constexpr uint64_t kAccessedDirty = pte_bit::Accessed | pte_bit::Dirty;

std::string hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%lx", static_cast<unsigned long>(v));
  return b;
}

const char* level_name(Level l) {
  switch (l) {
    case Level::L1: return "L1";
    case Level::L2: return "L2";
    case Level::L3: return "L3";
    case Level::L4: return "L4";
  }
  return "L?";
}

// The reservation: the arena, then guard pages far past any mfn-as-pfn address.
char* arena() {
  static char* base = [] {
    const uint64_t bytes = (kMaxFrames + kMfnOffset + kMaxFrames) << kPageShift;
    void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      perror("fake_mmu: reserving the arena");
      abort();
    }
    return static_cast<char*>(p);
  }();
  return base;
}

uint64_t g_arena_frames = 0;  // how much of the arena is accessible now
PteFlags (*g_builder_pte_flags)(Pte) = nullptr;

}  // namespace

const char* ev_name(Ev e) {
  switch (e) {
    case Ev::Store: return "Store";
    case Ev::Apply: return "Apply";
    case Ev::ProtStart: return "ProtStart";
    case Ev::PrepareTable: return "PrepareTable";
    case Ev::RetireTable: return "RetireTable";
    case Ev::FlushOne: return "FlushOne";
    case Ev::FlushAll: return "FlushAll";
    case Ev::LazyEnter: return "LazyEnter";
    case Ev::LazyFlush: return "LazyFlush";
    case Ev::LazyLeave: return "LazyLeave";
    case Ev::LoadRoot: return "LoadRoot";
    case Ev::FlushMulti: return "FlushMulti";
  }
  return "?";
}

FakeMmu& fake() {
  static FakeMmu f;
  return f;
}

void FakeMmu::reset(const FakeConfig& config) {
  if (config.frames < 2 || config.frames > kMaxFrames) {
    fprintf(stderr, "fake_mmu: %lu frames is out of range\n", static_cast<unsigned long>(config.frames));
    abort();
  }
  config_ = config;
  char* base = arena();
  if (g_arena_frames) {
    // Drop the old contents (anonymous memory reads back as zeros) and
    // close the old window.
    madvise(base, g_arena_frames << kPageShift, MADV_DONTNEED);
    mprotect(base, g_arena_frames << kPageShift, PROT_NONE);
  }
  if (mprotect(base, config.frames << kPageShift, PROT_READ | PROT_WRITE) != 0) {
    perror("fake_mmu: opening the arena");
    abort();
  }
  g_arena_frames = config.frames;
  g_physmap_offset = reinterpret_cast<uint64_t>(base);

  bitmap_.assign(FrameAllocator::storage_words_for(config.frames), 0);
  frames().init(bitmap_.data(), config.frames);
#ifdef PVK_HOST_HAVE_FRAME_REFS
  refcounts_.assign(config.frames, 0);
  frame_refs().init(refcounts_.data(), config.frames);
#endif
  must(frames().add_free_range(Pfn{0}, config.frames), "fake RAM");
  frames().reserve_range(Pfn{0}, 1);

  tables_.clear();
  uppers_.clear();
  started_.clear();
  queue_.clear();
  events_.clear();
  violations_.clear();
  fault = nullptr;
  lazy_depth_ = 0;
  pte_flags_calls_ = 0;
  g_mmu_counters = {};
  g_mmu = make_fake_ops(config.access);
  g_pte_access = config.access;
  fake_xcpu().reset();
  reset_tlb_state();
  g_current_root = Pfn{0};
}

Pfn FakeMmu::new_root() {
  auto root = frames().try_alloc();
  if (root.is_error()) {
    violation("new_root: no free frame");
    return Pfn{0};
  }
  memset(phys_to_virt(root.value()), 0, kPageSize);
  must(g_mmu.alloc_pt_page(root.value(), Level::L4), "prepare root");
  return root.value();
}

Pte* FakeMmu::table(Pfn pfn) {
  if (!in_arena(pfn)) {
    violation("frame " + hex(raw(pfn)) + " is outside the arena");
    return nullptr;
  }
  return phys_to_virt<Pte>(pfn);
}

Pte* FakeMmu::slot(Pfn root, VirtAddr va, Level level) {
  Pte* t = table(root);
  for (Level l = Level::L4; t && l != level; l = below(l)) {
    const Pte e = t[index_at(va, l)];
    if (!(e.raw & pte_bit::Present)) return nullptr;
    t = table(decode(e));
  }
  return t ? &t[index_at(va, level)] : nullptr;
}

size_t FakeMmu::table_count(Level level) const {
  size_t n = 0;
  for (const auto& [pfn, l] : tables_) n += l == level;
  return n;
}

std::vector<MmuEvent> FakeMmu::events(Ev kind) const {
  std::vector<MmuEvent> out;
  for (const MmuEvent& e : events_)
    if (e.kind == kind) out.push_back(e);
  return out;
}

size_t FakeMmu::count(Ev kind) const {
  size_t n = 0;
  for (const MmuEvent& e : events_) n += e.kind == kind;
  return n;
}

void FakeMmu::violation(std::string what) {
  // Keep the list readable when something goes wrong thousands of times.
  if (violations_.size() < 50) violations_.push_back(std::move(what));
}

bool FakeMmu::locate(const Pte* slot, Pfn& table, unsigned& index, const char* who) {
  const uint64_t a = reinterpret_cast<uint64_t>(slot);
  const uint64_t base = reinterpret_cast<uint64_t>(arena());
  if (a < base || a >= base + (config_.frames << kPageShift) || a % sizeof(Pte)) {
    violation(std::string(who) + ": slot " + hex(a) + " is not an entry of the fake RAM");
    return false;
  }
  table = Pfn{(a - base) >> kPageShift};
  index = static_cast<unsigned>((a - base) % kPageSize / sizeof(Pte));
  return true;
}

void FakeMmu::rehook(Pte old, Pte v, Level level) {
  if (references_table(old, level)) {
    auto it = uppers_.find(raw(decode(old)));
    if (it == uppers_.end() || it->second == 0) {
      violation(std::string(level_name(level)) + " entry " + hex(old.raw) +
                " replaced, but the fake never saw it stored (a table entry written behind its back)");
    } else if (--it->second == 0) {
      uppers_.erase(it);
    }
  }
  if (references_table(v, level)) ++uppers_[raw(decode(v))];
}

void FakeMmu::check_unshared_l1(Pfn table, const std::string& what) {
  const unsigned n = uppers(table);
  if (n > 1)
    violation(what + ": the L1 table is referenced by " + std::to_string(n) +
              " L2 entries (a store into a shared table changes every sharer)");
}

ErrorOr<void> FakeMmu::write(Pte* slot, Pte v, Level level, bool preserve_ad) {
  MmuEvent ev{Ev::Store};
  if (!locate(slot, ev.table, ev.index, "store")) return Errno::EFAULT;
  ev.value = v.raw;
  ev.level = level;
  ev.deferred = config_.defer_l1 && level == Level::L1 && lazy_depth_ > 0;
  if (Errno e = inject(ev); e != Errno::Ok) return e;

  const std::string where = std::string(level_name(level)) + " store to frame " + hex(raw(ev.table)) + "[" +
                            std::to_string(ev.index) + "]";
  auto it = tables_.find(raw(ev.table));
  if (it == tables_.end())
    violation(where + ": the frame is not a page table");
  else if (it->second != level)
    violation(where + ": the frame is an " + level_name(it->second) + " table");
  if (frames().is_free(ev.table)) violation(where + ": the frame is free");
  if (level == Level::L1 && (v.raw & kTableMarker))
    violation(where + ": a leaf built by make_table() (" + hex(v.raw) + ")");
  if (level == Level::L1) check_unshared_l1(ev.table, where + (ev.deferred ? " (queued)" : ""));
  if (level != Level::L1 && (v.raw & pte_bit::Present) && !(v.raw & pte_bit::Huge)) {
    if (!(v.raw & kTableMarker)) violation(where + ": a table entry not built by make_table() (" + hex(v.raw) + ")");
    const Pfn target = decode(v);
    auto t = tables_.find(raw(target));
    if (t == tables_.end() || t->second != below(level))
      violation(where + ": hooks frame " + hex(raw(target)) + ", not a prepared " + level_name(below(level)) +
                " table");
  }

  events_.push_back(ev);
  ++g_mmu_counters.pte_writes;
  if (ev.deferred) {
    queue_.push_back({slot, v, preserve_ad});
  } else {
    if (preserve_ad) v.raw |= slot->raw & kAccessedDirty;
    rehook(*slot, v, level);
    slot->raw = v.raw;
  }
  return {};
}

void FakeMmu::apply_queue() {
  for (const Queued& q : queue_) {
    MmuEvent ev{Ev::Apply};
    if (!locate(q.slot, ev.table, ev.index, "apply")) continue;
    if (!is_table(ev.table) || frames().is_free(ev.table))
      violation("queued L1 store to frame " + hex(raw(ev.table)) + " applied after the table was released");
    check_unshared_l1(ev.table, "queued L1 store to frame " + hex(raw(ev.table)) + "[" + std::to_string(ev.index) +
                                    "] applied");
    Pte v = q.value;
    if (q.preserve_ad) v.raw |= q.slot->raw & kAccessedDirty;
    q.slot->raw = v.raw;
    ev.value = v.raw;
    events_.push_back(ev);
  }
  queue_.clear();
}

// ---- the policy ----

ErrorOr<void> FakePolicy::store(Pte* slot, Pte v, Level level) { return fake().write(slot, v, level, false); }

Pte FakePolicy::modify_prot_start(Pte* slot) {
  FakeMmu& f = fake();
  MmuEvent ev{Ev::ProtStart};
  if (!f.locate(slot, ev.table, ev.index, "modify_prot_start")) return Pte{};
  if (!f.is_table(ev.table) || f.table_level(ev.table) != Level::L1)
    f.violation("modify_prot_start on frame " + hex(raw(ev.table)) + ", not an L1 table");
  if (!f.started_.insert(slot).second) f.violation("modify_prot_start twice on one slot without a commit");
  f.check_unshared_l1(ev.table, "modify_prot_start on frame " + hex(raw(ev.table)) + "[" + std::to_string(ev.index) + "]");
  const Pte old = *slot;
  if (f.config_.defer_l1 && f.lazy_depth_ > 0) {
    // Xen: a plain read; the commit is queued with PRESERVE_AD. Reading an
    // entry whose store is still queued would see a stale value.
    for (const auto& q : f.queue_)
      if (q.slot == slot) f.violation("modify_prot_start read back an L1 entry written in this lazy section");
  } else {
    slot->raw = 0;  // native: take the entry (atomic exchange with 0)
  }
  ev.value = old.raw;
  ev.level = Level::L1;
  f.events_.push_back(ev);
  return old;
}

ErrorOr<void> FakePolicy::modify_prot_commit(Pte* slot, Pte old, Pte v) {
  FakeMmu& f = fake();
  if (!f.started_.erase(slot)) f.violation("modify_prot_commit without modify_prot_start");
  if ((old.raw & pte_bit::FrameMask) != (v.raw & pte_bit::FrameMask))
    f.violation("modify_prot_commit changes the frame: " + hex(old.raw) + " -> " + hex(v.raw));
  return f.write(slot, v, Level::L1, f.config_.defer_l1 && f.lazy_depth_ > 0);
}

Pte FakePolicy::make(Pfn pfn, PteFlags flags) {
  if (flags.bits & pte_bit::FrameMask) fake().violation("make(): flags " + hex(flags.bits) + " carry frame bits");
  if (raw(pfn) + kMfnOffset >= (uint64_t{1} << 40)) fake().violation("make(): pfn " + hex(raw(pfn)) + " too large");
  return Pte{((raw(pfn) + kMfnOffset) << kPageShift) | flags.bits};
}

Pte FakePolicy::make_table(Pfn pfn) {
  if (raw(pfn) + kMfnOffset >= (uint64_t{1} << 40))
    fake().violation("make_table(): pfn " + hex(raw(pfn)) + " too large");
  return Pte{((raw(pfn) + kMfnOffset) << kPageShift) | pte_flags::Table.bits | kTableMarker};
}

Pfn FakePolicy::pfn_of(Pte e) {
  const uint64_t frame = (e.raw & pte_bit::FrameMask) >> kPageShift;
  if (frame < kMfnOffset)
    fake().violation("pfn_of(" + hex(e.raw) + "): the frame field was not built by make()");
  return Pfn{frame - kMfnOffset};
}

ErrorOr<void> FakePolicy::prepare_table(Pfn pfn, Level level) {
  FakeMmu& f = fake();
  MmuEvent ev{Ev::PrepareTable, pfn};
  ev.level = level;
  if (Errno e = f.inject(ev); e != Errno::Ok) return e;
  const std::string what = std::string("prepare_table(") + hex(raw(pfn)) + ", " + level_name(level) + ")";
  if (!f.in_arena(pfn)) {
    f.violation(what + ": frame outside the arena");
    return Errno::EINVAL;
  }
  if (frames().is_free(pfn)) f.violation(what + ": the frame is free");
  if (f.is_table(pfn)) f.violation(what + ": already a page table");
  // Upper tables start empty. An L1 table may arrive filled (fork builds a
  // child's table privately and publishes it complete), but only with
  // leaves: Xen validates every entry when the table is hooked in.
  const Pte* t = phys_to_virt<Pte>(pfn);
  for (unsigned i = 0; i < kEntriesPerTable; ++i) {
    if (level == Level::L1 ? (t[i].raw & kTableMarker) != 0 : !t[i].none()) {
      f.violation(what + (level == Level::L1 ? ": holds a table entry" : ": the frame is not zeroed"));
      break;
    }
  }
  f.tables_[raw(pfn)] = level;
  f.events_.push_back(ev);
  ++g_mmu_counters.pt_pages_alloc;
  return {};
}

ErrorOr<void> FakePolicy::flush_queue() {
  FakeMmu& f = fake();
  if (f.lazy_depth_ <= 0) f.violation("flush_lazy_mmu outside a lazy section");
  f.events_.push_back({Ev::LazyFlush});
  f.apply_queue();
  return {};
}

ErrorOr<void> FakePolicy::retire_table(Pfn pfn, Level level) {
  FakeMmu& f = fake();
  MmuEvent ev{Ev::RetireTable, pfn};
  ev.level = level;
  if (Errno e = f.inject(ev); e != Errno::Ok) return e;
  const std::string what = std::string("retire_table(") + hex(raw(pfn)) + ", " + level_name(level) + ")";
  auto it = f.tables_.find(raw(pfn));
  if (it == f.tables_.end()) {
    f.violation(what + ": not a live page table");
    return Errno::EINVAL;  // Xen refuses to unpin what is not pinned
  }
  if (it->second != level) f.violation(what + ": the frame is an " + level_name(it->second) + " table");
  if (const unsigned n = f.uppers(pfn); n > 0)
    f.violation(what + ": still referenced by " + std::to_string(n) + " upper-level entr" + (n == 1 ? "y" : "ies"));
  for (const auto& q : f.queue_) {
    if (virt_to_pfn(q.slot) == pfn) {
      f.violation(what + ": stores to it are still queued");
      break;
    }
  }
  // A root keeps the kernel half it shares with every other root (as under
  // Xen, an L4 may be unpinned with those entries still in it); only its
  // user half must have been emptied. An L1 table may go with its leaves
  // still in it: unmapping a whole table unhooks it without clearing them
  // (Xen drops their references when the table loses its type).
  const Pte* t = phys_to_virt<Pte>(pfn);
  const unsigned checked = level == Level::L4 ? kEntriesPerTable / 2 : level == Level::L1 ? 0 : kEntriesPerTable;
  for (unsigned i = 0; i < checked; ++i) {
    if (!t[i].none()) {
      f.violation(what + ": entry " + std::to_string(i) + " is not empty (" + hex(t[i].raw) + ")");
      break;
    }
  }
  // The entries it still holds (a root's kernel half) stop referencing
  // their tables.
  if (level != Level::L1)
    for (unsigned i = 0; i < kEntriesPerTable; ++i) f.rehook(t[i], Pte{}, level);
  f.tables_.erase(it);
  f.events_.push_back(ev);
  ++g_mmu_counters.pt_pages_release;
  return {};
}

// ---- the ops table ----

MmuOps make_fake_ops(PteAccess access) {
  MmuOps ops = make_mmu_ops<FakePolicy>("fake", access);
  // Count flag reads (pte=flags must go through here), keeping the builder's decoding.
  g_builder_pte_flags = ops.pte_flags;
  ops.pte_flags = [](Pte e) {
    ++fake().pte_flags_calls_;
    return g_builder_pte_flags(e);
  };
  // The native layout both ways, as the native backend.
  ops.pte_attrs = [](Pte e) { return cache_attr_for(kNativePatMsr, e); };
  ops.make_pte_attrs = [](CacheAttr a) { return cache_flags_for(kNativePatMsr, a); };
  ops.enter_lazy_mmu = [](OnRefusal) {
    FakeMmu& f = fake();
    // As strict as Xen, where a nested enter/leave would end the outer section.
    if (f.lazy_depth_ > 0) f.violation("enter_lazy_mmu inside a lazy section (sections do not nest)");
    ++f.lazy_depth_;
    ++g_mmu_counters.lazy_sections;
    f.events_.push_back({Ev::LazyEnter});
  };
  ops.flush_lazy_mmu = &FakePolicy::flush_queue;
  ops.leave_lazy_mmu = []() -> ErrorOr<void> {
    FakeMmu& f = fake();
    if (f.lazy_depth_ <= 0) f.violation("leave_lazy_mmu outside a lazy section");
    f.events_.push_back({Ev::LazyLeave});
    f.apply_queue();
    --f.lazy_depth_;
    return {};
  };
  ops.flush_tlb_one = [](VirtAddr va) {
    ++g_mmu_counters.tlb_flush_one;
    MmuEvent ev{Ev::FlushOne};
    ev.va = va;
    fake().events_.push_back(ev);
  };
  ops.flush_tlb_all = [] {
    ++g_mmu_counters.tlb_flush_all;
    fake().events_.push_back({Ev::FlushAll});
  };
  ops.flush_tlb_multi = [](const CpuMask& cpus, const TlbFlushInfo& info) {
    MmuEvent ev{Ev::FlushMulti};
    ev.cpus = cpus;
    ev.info = info;
    fake().events_.push_back(ev);
  };
  ops.load_root = [](Pfn root) -> ErrorOr<void> {
    FakeMmu& f = fake();
    if (!f.is_table(root) || f.table_level(root) != Level::L4)
      f.violation("load_root(" + hex(raw(root)) + "): not an L4 table");
    ++g_mmu_counters.root_loads;
    g_current_root = root;
    f.events_.push_back({Ev::LoadRoot, root});
    return {};
  };
  return ops;
}

}  // namespace pvk::test
