// The machine code of a pvops call site (pvops/call/pvop_site.h): what the
// compiler left there (an indirect call through g_mmu) and what pvpatch=on
// may put there instead (a direct call, or the verb's own instructions),
// padded with nops to the site's length. Pure byte work, so the host tests
// can check every form on buffers — and run the inline forms.
#pragma once
#include "base/lib/types.h"

namespace pvk::site_code {

// LoadCall: a flag-bits site that loads its entry (mov (%base),%rax, the
// slot in any of rax, rcx, rdx, rbx, rsi, rdi: the compiler picks) and
// calls the thunk that takes the entry in rax, as the compiler leaves it.
// Jump: a native-body site as compiled (e9 rel32 to the generic call beside
// it); Nops: the same site patched to fall into the native body.
enum class Form : uint8_t { IndirectCall, DirectCall, Inline, Unknown, LoadCall, Jump, Nops };

// The inline forms, each the SysV body of a one-line verb: argument in rdi
// (and rsi), result in rax.
enum class InlineOp : uint8_t {
  FlagsMask,   // pte_flags:  rax = rdi & FlagMask
  Identity,    // pte_val:    rax = rdi (natively the frame field is the pfn)
  NativePfn,   // pte_pfn:    rax = (rdi & FrameMask) >> 12
  NativeMake,  // make_pte:   rax = rdi << 12 | rsi
  ReturnOk,    // flush_lazy_mmu, leave_lazy_mmu natively (no queue): eax = 0, ErrorOr<void>'s success
  // Natively, verbs that only count themselves (and invalidate one TLB
  // entry): the counter is a memory operand, rip-relative to the site.
  Count,         // enter_lazy_mmu: ++*counter
  CountInvlpg,   // flush_tlb_one:  ++*counter; invlpg (rdi)
  // A flag-bits site of pte_flags (pvops/call/pvop_site.h: its caller masks
  // the result with the flag bits it tests, so where pte_flags is the mask
  // the entry itself serves): rax = rdi, one 5-byte instruction that fills
  // the site, no nops after it.
  FlagBits,
  // The same for a site that loads the entry from the slot its base
  // register holds: rax = *(uint64_t*)base, one 8-byte instruction that
  // fills the site (Decoded::base; rdi where none is named).
  FlagBitsAt,
};

inline constexpr unsigned kIndirectCallLength = 6;  // ff 15 disp32
inline constexpr unsigned kDirectCallLength = 5;    // e8 rel32
inline constexpr unsigned kLoadCallLength = 8;      // 48 8b 0b (mov (%base),%rax), e8 rel32

// A load site's base register (its x86 number): rax, rcx, rdx, rbx, rsi or
// rdi, the ones a mod-00 ModRM names without a SIB byte or rip.
inline constexpr uint8_t kRdi = 7;
constexpr bool load_base_ok(uint8_t base) { return base <= 3 || base == 6 || base == 7; }
inline constexpr unsigned kJumpLength = 5;          // e9 rel32

// Bytes an inline form takes (before padding).
unsigned inline_length(InlineOp op);
// What an inline form computes, for checking a backend's verb against it.
uint64_t inline_result(InlineOp op, uint64_t rdi, uint64_t rsi);

// Each writes exactly `length` bytes at buf (the code that will sit at
// address `at`), padding with nops; false if the form does not fit.
bool encode_direct_call(uint8_t* buf, unsigned length, uint64_t at, uint64_t target);
// `counter`: the address Count and CountInvlpg increment (the others ignore it).
// `base`: FlagBitsAt's base register (the others ignore it).
bool encode_inline(uint8_t* buf, unsigned length, InlineOp op, uint64_t at = 0, uint64_t counter = 0,
                   uint8_t base = kRdi);
void encode_nops(uint8_t* buf, unsigned length);
// A flag-bits load site as compiled: the load into rax, a direct call to target.
bool encode_load_call(uint8_t* buf, unsigned length, uint64_t at, uint64_t target, uint8_t base = kRdi);

struct Decoded {
  Form form = Form::Unknown;
  uint64_t target = 0;  // DirectCall: the callee; IndirectCall: the slot read; Jump: where it goes
  InlineOp op{};        // Inline (target: the counter of Count / CountInvlpg)
  uint8_t base = 0;     // LoadCall, Inline FlagBitsAt: the slot's register
};
// Reads back a site of `length` bytes at address `at`: one of the forms
// followed only by nops, or Unknown.
Decoded decode(const uint8_t* buf, unsigned length, uint64_t at);

}  // namespace pvk::site_code
