#include "pvops/call/pvpatch.h"

#if !PVK_BUILTIN_NATIVE  // the compiled-in native image has no sites

#include "base/arch/cpu.h"
#include "base/lib/format.h"
#include "base/lib/kstring.h"
#include "pvops/backends/native_ops.h"
#include "pvops/call/pvop_site.h"
#include "pvops/call/site_code.h"

extern "C" const pvk::PvopSite __pvop_sites_start[], __pvop_sites_end[];

namespace pvk {
namespace {

using site_code::InlineOp;

uint64_t slot_address(unsigned slot) { return reinterpret_cast<uint64_t>(&g_mmu) + slot; }
uint64_t slot_target(unsigned slot) {
  uint64_t fn;
  memcpy(&fn, reinterpret_cast<const void*>(slot_address(slot)), sizeof fn);
  return fn;
}
// Where a light verb's sites call: its register-saving thunk.
uint64_t thunk_address(unsigned slot) { return reinterpret_cast<uint64_t>(pvop_detail::thunk_for(slot)); }
// A flag-bits load site's thunk (the entry in rax).
uint64_t load_thunk_address() { return reinterpret_cast<uint64_t>(&pvk_pvop_thunk_pte_flags_at); }

// What the compiler left at a site: a call through the verb's slot, for
// a light verb a direct call to its thunk, for a native-body site a jump.
bool as_compiled(const PvopSite& s, const site_code::Decoded& d) {
  if (s.copy_switch()) {
    // A copy switch names a verb group; an encoding switch a verb with a native body.
    const bool named = s.encoding_switch() ? s.verb() < sizeof(MmuOps) && pvop_detail::native_first(s.verb())
                                           : valid_group(s.verb());
    return named && !s.native_body() && !s.flag_bits() && !s.loads() && s.length == site_code::kJumpLength &&
           d.form == site_code::Form::Jump;
  }
  if (s.native_body())
    return !s.flag_bits() && !s.loads() && s.length == site_code::kJumpLength && d.form == site_code::Form::Jump;
  if (s.flag_bits() && s.verb() != offsetof(MmuOps, pte_flags)) return false;
  if (s.loads() != s.flag_bits() && s.loads()) return false;
  if (s.loads()) return d.form == site_code::Form::LoadCall && d.target == load_thunk_address();
  if (pvop_detail::is_light(s.verb()))
    return d.form == site_code::Form::DirectCall && d.target == thunk_address(s.verb());
  return d.form == site_code::Form::IndirectCall && d.target == slot_address(s.verb());
}
// The direct call a site becomes when it is not inlined: the backend's
// function, or for a light verb still its thunk (the site promises the
// compiler more than a C function keeps).
uint64_t direct_target(unsigned slot) {
  return pvop_detail::is_light(slot) ? thunk_address(slot) : slot_target(slot);
}

// A native-body site may fall into its body when the backend's function
// for the verb is the very function that body was compiled from (the native
// backend's, for the site's encoding: the same address in the table), not
// merely one that behaves alike.
bool runs_native_body(unsigned slot, bool flags_encoding = false) {
  const MmuOps& native = flags_encoding ? native::kNativeFlagsOps : native::kNativeOps;
  return memcmp(reinterpret_cast<const char*>(&g_mmu) + slot, reinterpret_cast<const char*>(&native) + slot,
                sizeof(uint64_t)) == 0;
}
// A copy switch may fall into its native copy when every verb that copy
// calls is the native backend's.
bool runs_native_copy(unsigned group) {
  const auto g = slots_of(static_cast<VerbGroup>(group));
  for (unsigned i = 0; i < g.count; ++i)
    if (!runs_native_body(g.slots[i])) return false;
  return true;
}
// A jump site's kind and what its slot field names, for messages.
const char* jump_kind(const PvopSite& s) {
  return s.encoding_switch() ? "encoding switch" : s.copy_switch() ? "copy switch" : "native-body site";
}
const char* jump_names(const PvopSite& s) { return s.copy_switch() && !s.encoding_switch() ? "verb group" : "g_mmu slot"; }

// Whether a jump site (a native-body site or a copy switch) becomes a nop.
// An encoding switch jumps to its function's pte=flags copy, so it stays
// exactly where that copy's native body is the backend's.
bool jump_becomes_nop(const PvopSite& s) {
  if (s.encoding_switch()) return !runs_native_body(s.verb(), true);
  return s.copy_switch() ? runs_native_copy(s.verb()) : runs_native_body(s.verb(), s.flags_encoding());
}

// The inline form a verb's sites may take under this backend, if any, and
// for the counting forms the counter they bump. A flag-bits site of
// pte_flags takes the entry itself where pte_flags is the mask.
bool inline_op_for(unsigned slot, InlineOp& op, uint64_t* counter = nullptr, bool flag_bits = false,
                   bool loads = false) {
  const InlineForms forms = g_mmu.inline_forms;
  if (forms == InlineForms::None) return false;
  if (slot == offsetof(MmuOps, pte_flags))
    return op = loads ? InlineOp::FlagBitsAt : flag_bits ? InlineOp::FlagBits : InlineOp::FlagsMask, true;
  if (forms != InlineForms::NativeEncoding) return false;
  if (slot == offsetof(MmuOps, pte_val)) return op = InlineOp::Identity, true;
  if (slot == offsetof(MmuOps, pte_pfn)) return op = InlineOp::NativePfn, true;
  if (slot == offsetof(MmuOps, make_pte)) return op = InlineOp::NativeMake, true;
  if (slot == offsetof(MmuOps, flush_lazy_mmu) || slot == offsetof(MmuOps, leave_lazy_mmu))
    return op = InlineOp::ReturnOk, true;
  // Natively entering a lazy section only counts it; flushing one
  // translation counts it and invalidates it (pvops/native_ops.h).
  if (slot == offsetof(MmuOps, enter_lazy_mmu)) {
    if (counter) *counter = reinterpret_cast<uint64_t>(&g_mmu_counters.lazy_sections);
    return op = InlineOp::Count, true;
  }
  if (slot == offsetof(MmuOps, flush_tlb_one)) {
    if (counter) *counter = reinterpret_cast<uint64_t>(&g_mmu_counters.tlb_flush_one);
    return op = InlineOp::CountInvlpg, true;
  }
  return false;
}

// The backend's function must compute what its inline form computes: a
// backend that declares the forms but overrides a verb keeps its calls.
[[gnu::noinline]] bool verb_matches(InlineOp op) {  // noinline: the image test exempts it by name
  // Only what the backend declares is tried (calling, say, enter_lazy_mmu
  // under Xen would open a section).
  if (g_mmu.inline_forms == InlineForms::None) return false;
  // The entry serves as its flag image exactly when pte_flags is the mask.
  if (op == InlineOp::FlagBits || op == InlineOp::FlagBitsAt) op = InlineOp::FlagsMask;
  if (op != InlineOp::FlagsMask && g_mmu.inline_forms != InlineForms::NativeEncoding) return false;
  static constexpr uint64_t kSamples[] = {0, ~uint64_t{0}, 0x8000000012345067ull, 0x00000000000fffffull,
                                          0x7ff0000abcdef863ull};
  static constexpr uint64_t kFlagSamples[] = {0x63, 0x8000000000000025ull};
  for (uint64_t a : kSamples) {
    for (uint64_t b : kFlagSamples) {
      uint64_t got = 0;
      switch (op) {
        case InlineOp::FlagsMask:
        case InlineOp::FlagBits:
        case InlineOp::FlagBitsAt: got = g_mmu.pte_flags(Pte{a}).bits; break;
        case InlineOp::Identity: got = g_mmu.pte_val(Pte{a}); break;
        case InlineOp::NativePfn: got = raw(g_mmu.pte_pfn(Pte{a})); break;
        case InlineOp::ReturnOk:
          // Natively nothing is ever queued: both verbs only say so.
          return !g_mmu.flush_lazy_mmu().is_error() && !g_mmu.leave_lazy_mmu().is_error();
        case InlineOp::Count:
        case InlineOp::CountInvlpg: {
          // The verb must change its one counter by one and nothing else
          // the counters see; the counters are put back afterwards.
          const MmuCounters before = g_mmu_counters;
          uint64_t counter = 0;
          InlineOp expected{};
          inline_op_for(op == InlineOp::Count ? offsetof(MmuOps, enter_lazy_mmu) : offsetof(MmuOps, flush_tlb_one),
                        expected, &counter);
          if (op == InlineOp::Count) {
            g_mmu.enter_lazy_mmu(OnRefusal::Fail);
          } else {
            g_mmu.flush_tlb_one(VirtAddr{reinterpret_cast<uint64_t>(&before)});
          }
          MmuCounters want = before;
          ++*reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(&want) +
                                         (counter - reinterpret_cast<uint64_t>(&g_mmu_counters)));
          const bool same = memcmp(&want, &g_mmu_counters, sizeof want) == 0;
          g_mmu_counters = before;
          return same;
        }
        case InlineOp::NativeMake: {
          const uint64_t pfn = a >> 28;  // a frame number that fits the field
          got = g_mmu.make_pte(Pfn{pfn}, PteFlags{b}).raw;
          if (got != site_code::inline_result(op, pfn, b)) return false;
          continue;
        }
      }
      if (got != site_code::inline_result(op, a, b)) return false;
    }
  }
  return true;
}

void count_inline(PatchReport& r, InlineOp op) {
  ++r.inlined;
  switch (op) {
    case InlineOp::FlagsMask:
    case InlineOp::FlagBits:
    case InlineOp::FlagBitsAt: ++r.flags_mask; break;
    case InlineOp::Identity: ++r.identity; break;
    case InlineOp::NativePfn: ++r.native_pfn; break;
    case InlineOp::NativeMake: ++r.native_make; break;
    case InlineOp::ReturnOk:
    case InlineOp::Count:
    case InlineOp::CountInvlpg: ++r.lazy_tlb; break;
  }
}

}  // namespace

ErrorOr<PatchReport> patch_pvop_sites(bool patch, char* failure, size_t failure_size) {
  PatchReport r;
  constexpr unsigned kOps = static_cast<unsigned>(InlineOp::FlagBitsAt) + 1;
  bool inline_ok[kOps] = {};
  for (unsigned op = 0; op < kOps; ++op) inline_ok[op] = verb_matches(static_cast<InlineOp>(op));

  // Every site first: one that is not what the compiler left stops the boot
  // before any byte is written.
  for (const PvopSite* s = __pvop_sites_start; s != __pvop_sites_end; ++s) {
    ++r.sites;
    const uint64_t at = reinterpret_cast<uint64_t>(s->address());
    const auto d = site_code::decode(s->address(), s->length, at);
    if (!as_compiled(*s, d)) {
      format(failure, failure_size, "pvk: pvpatch: site %u at %p is not the call the compiler left for g_mmu slot %u",
             r.sites - 1, s->address(), s->verb());
      return Errno::EINVAL;
    }
    if (s->copy_switch()) continue;  // its group's verbs have sites of their own, checked here
    if (!slot_target(s->verb())) {
      format(failure, failure_size, "pvk: pvpatch: backend %s has no function for g_mmu slot %u", g_mmu.name,
             s->verb());
      return Errno::ENOSYS;
    }
  }
  if (!patch) {
    r.unpatched = r.sites;
    return r;
  }

  for (const PvopSite* s = __pvop_sites_start; s != __pvop_sites_end; ++s) {
    uint8_t code[32];
    const uint64_t at = reinterpret_cast<uint64_t>(s->address());
    if (s->native_body() || s->copy_switch()) {
      // The jump stays unless the native body (or copy) is this backend's.
      if (jump_becomes_nop(*s)) {
        site_code::encode_nops(code, s->length);
        memcpy(s->address(), code, s->length);
      }
      continue;
    }
    InlineOp op{};
    uint64_t counter = 0;
    // A load site keeps the register the compiler put its slot in.
    uint8_t base = site_code::kRdi;
    if (s->loads()) {
      const auto now = site_code::decode(s->address(), s->length, at);
      if (now.form != site_code::Form::LoadCall &&
          !(now.form == site_code::Form::Inline && now.op == InlineOp::FlagBitsAt)) {
        format(failure, failure_size, "pvk: pvpatch: load site at %p (%u bytes) holds no load", s->address(), s->length);
        return Errno::EINVAL;
      }
      base = now.base;
    }
    const bool as_inline = inline_op_for(s->verb(), op, &counter, s->flag_bits(), s->loads()) &&
                           inline_ok[static_cast<unsigned>(op)] &&
                           site_code::encode_inline(code, s->length, op, at, counter, base);
    if (!as_inline && !(s->loads() ? site_code::encode_load_call(code, s->length, at, load_thunk_address(), base)
                                   : site_code::encode_direct_call(code, s->length, at, direct_target(s->verb())))) {
      format(failure, failure_size, "pvk: pvpatch: site at %p (%u bytes) cannot hold a direct call", s->address(),
             s->length);
      return Errno::EINVAL;
    }
    memcpy(s->address(), code, s->length);
  }
  // Code was written through a data access: serialise before it runs.
  cpu::serialize();

  // The self-check: each site decodes to what was meant for it.
  for (const PvopSite* s = __pvop_sites_start; s != __pvop_sites_end; ++s) {
    const uint64_t at = reinterpret_cast<uint64_t>(s->address());
    const auto d = site_code::decode(s->address(), s->length, at);
    if (s->native_body() || s->copy_switch()) {
      const bool body = jump_becomes_nop(*s);
      if (d.form != (body ? site_code::Form::Nops : site_code::Form::Jump)) {
        format(failure, failure_size, "pvk: pvpatch: self-check: %s at %p (%s %u) reads back wrong",
               jump_kind(*s), s->address(), jump_names(*s), s->verb());
        return Errno::EIO;
      }
      ++r.verified;
      if (s->encoding_switch()) ++(body ? r.attrs_copies : r.flags_copies);
      else if (s->copy_switch()) ++(body ? r.native_copies : r.generic_copies);
      else ++(body ? r.native_body : r.generic_jumps);
      continue;
    }
    InlineOp op{};
    uint64_t counter = 0;
    const bool want_inline =
        inline_op_for(s->verb(), op, &counter, s->flag_bits(), s->loads()) && inline_ok[static_cast<unsigned>(op)];
    const bool good = want_inline ? d.form == site_code::Form::Inline && d.op == op &&
                                        ((op != InlineOp::Count && op != InlineOp::CountInvlpg) || d.target == counter)
                  : s->loads() ? d.form == site_code::Form::LoadCall && d.target == load_thunk_address()
                               : d.form == site_code::Form::DirectCall && d.target == direct_target(s->verb());
    if (!good) {
      format(failure, failure_size, "pvk: pvpatch: self-check: site at %p (g_mmu slot %u) reads back wrong",
             s->address(), s->verb());
      return Errno::EIO;
    }
    ++r.verified;
    if (want_inline) {
      count_inline(r, op);
    } else {
      ++r.direct;
    }
  }
  return r;
}

}  // namespace pvk

#endif
