#include "pvops/call/site_code.h"

#include "base/lib/kstring.h"
#include "pvops/pte.h"

namespace pvk::site_code {
namespace {

constexpr uint8_t kMovRaxRdi[] = {0x48, 0x89, 0xf8};   // mov %rdi,%rax
constexpr uint8_t kShlRax12[] = {0x48, 0xc1, 0xe0, 12};  // shl $12,%rax
constexpr uint8_t kShrRax24[] = {0x48, 0xc1, 0xe8, 24};  // shr $24,%rax
constexpr uint8_t kOrRaxRsi[] = {0x48, 0x09, 0xf0};    // or %rsi,%rax
constexpr uint8_t kAndRaxRdi[] = {0x48, 0x21, 0xf8};   // and %rdi,%rax
constexpr uint8_t kMovabsRax[] = {0x48, 0xb8};         // movabs $imm64,%rax
constexpr uint8_t kXorEaxEax[] = {0x31, 0xc0};         // xor %eax,%eax
constexpr uint8_t kIncqRip[] = {0x48, 0xff, 0x05};     // incq disp32(%rip), disp32 follows
constexpr uint8_t kInvlpgRdi[] = {0x0f, 0x01, 0x3f};   // invlpg (%rdi)
constexpr uint8_t kLeaRaxRdi5[] = {0x48, 0x8d, 0x44, 0x27, 0x00};  // lea 0x0(%rdi,%riz,1),%rax: 5 bytes
// A load site's two forms, for a base register b (load_base_ok):
//   48 8b 0b                    mov (%b),%rax                (compiled, before its call)
//   48 8b 84 2b 00 00 00 00     mov 0x0(%b,%riz,1),%rax      (patched: 8 bytes)
constexpr uint8_t kLoadRex = 0x48, kLoadOpcode = 0x8b, kLoadModRmSib = 0x84, kSibRizBase = 0x20;

// Appends bytes to a form being built.
struct Writer {
  uint8_t* p;
  template <unsigned N>
  void put(const uint8_t (&b)[N]) {
    memcpy(p, b, N);
    p += N;
  }
  void put64(uint64_t v) {
    memcpy(p, &v, 8);
    p += 8;
  }
  void put32(int32_t v) {
    memcpy(p, &v, 4);
    p += 4;
  }
};

// The rip-relative displacement from the end of an instruction of `length`
// bytes at `at` to `target`, if it fits.
bool rip_disp(uint64_t at, unsigned length, uint64_t target, int32_t& disp) {
  const int64_t d = static_cast<int64_t>(target - (at + length));
  disp = static_cast<int32_t>(d);
  return d == disp;
}

// 0 if the counter is out of rip-relative reach.
unsigned build_inline(uint8_t* out, InlineOp op, uint64_t at = 0, uint64_t counter = 0, uint8_t base = kRdi) {
  Writer w{out};
  switch (op) {
    case InlineOp::FlagsMask:
      w.put(kMovabsRax);
      w.put64(pte_bit::FlagMask);
      w.put(kAndRaxRdi);
      break;
    case InlineOp::Identity: w.put(kMovRaxRdi); break;
    case InlineOp::FlagBits: w.put(kLeaRaxRdi5); break;
    case InlineOp::FlagBitsAt: {
      if (!load_base_ok(base)) return 0;
      const uint8_t load[] = {kLoadRex, kLoadOpcode, kLoadModRmSib, static_cast<uint8_t>(kSibRizBase | base), 0, 0, 0, 0};
      w.put(load);
      break;
    }
    case InlineOp::NativePfn:
      w.put(kMovRaxRdi);
      w.put(kShlRax12);
      w.put(kShrRax24);
      break;
    case InlineOp::NativeMake:
      w.put(kMovRaxRdi);
      w.put(kShlRax12);
      w.put(kOrRaxRsi);
      break;
    case InlineOp::ReturnOk: w.put(kXorEaxEax); break;
    case InlineOp::Count:
    case InlineOp::CountInvlpg: {
      int32_t disp;
      if (!rip_disp(at, sizeof kIncqRip + 4, counter, disp)) return 0;
      w.put(kIncqRip);
      w.put32(disp);
      if (op == InlineOp::CountInvlpg) w.put(kInvlpgRdi);
      break;
    }
  }
  return static_cast<unsigned>(w.p - out);
}

int32_t read32(const uint8_t* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

// Length of the nop instruction at p (the forms GAS's .nops and
// encode_nops emit: 90, or 0f 1f /0 with optional 66/2e prefixes), 0 if p
// holds something else.
unsigned nop_length(const uint8_t* p, unsigned avail) {
  unsigned n = 0;
  while (n < avail && (p[n] == 0x66 || p[n] == 0x2e)) ++n;
  if (n < avail && p[n] == 0x90) return n + 1;
  if (n + 3 > avail || p[n] != 0x0f || p[n + 1] != 0x1f) return 0;
  const uint8_t modrm = p[n + 2];
  if (((modrm >> 3) & 7) != 0) return 0;
  unsigned len = n + 3;
  const unsigned mod = modrm >> 6, rm = modrm & 7;
  if (mod == 3) return 0;
  if (rm == 4) ++len;  // SIB
  if (mod == 1) len += 1;
  if (mod == 2) len += 4;
  if (mod == 0 && rm == 5) len += 4;
  return len <= avail ? len : 0;
}

bool only_nops(const uint8_t* p, unsigned length) {
  for (unsigned i = 0; i < length;) {
    const unsigned n = nop_length(p + i, length - i);
    if (!n) return false;
    i += n;
  }
  return true;
}

}  // namespace

unsigned inline_length(InlineOp op) {
  uint8_t scratch[16];
  return build_inline(scratch, op);
}

uint64_t inline_result(InlineOp op, uint64_t rdi, uint64_t rsi) {
  switch (op) {
    case InlineOp::FlagsMask: return rdi & pte_bit::FlagMask;
    case InlineOp::Identity:
    case InlineOp::FlagBits: return rdi;
    case InlineOp::FlagBitsAt: return *reinterpret_cast<const uint64_t*>(rdi);  // rdi: the slot
    case InlineOp::NativePfn: return (rdi & pte_bit::FrameMask) >> kPageShift;
    case InlineOp::NativeMake: return (rdi << kPageShift) | rsi;
    case InlineOp::ReturnOk:
    case InlineOp::Count:
    case InlineOp::CountInvlpg: return 0;
  }
  return 0;
}

void encode_nops(uint8_t* buf, unsigned length) {
  // The recommended long nops (Intel SDM, "NOP"), longest first.
  static constexpr uint8_t kNops[9][9] = {
      {0x90},
      {0x66, 0x90},
      {0x0f, 0x1f, 0x00},
      {0x0f, 0x1f, 0x40, 0x00},
      {0x0f, 0x1f, 0x44, 0x00, 0x00},
      {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
      {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
      {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
      {0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
  };
  while (length) {
    const unsigned n = length > 9 ? 9 : length;
    memcpy(buf, kNops[n - 1], n);
    buf += n;
    length -= n;
  }
}

bool encode_direct_call(uint8_t* buf, unsigned length, uint64_t at, uint64_t target) {
  if (length < kDirectCallLength) return false;
  const int64_t rel = static_cast<int64_t>(target - (at + kDirectCallLength));
  if (rel != static_cast<int32_t>(rel)) return false;
  buf[0] = 0xe8;
  const int32_t rel32 = static_cast<int32_t>(rel);
  memcpy(buf + 1, &rel32, 4);
  encode_nops(buf + kDirectCallLength, length - kDirectCallLength);
  return true;
}

bool encode_load_call(uint8_t* buf, unsigned length, uint64_t at, uint64_t target, uint8_t base) {
  if (length < kLoadCallLength || !load_base_ok(base)) return false;
  const int64_t rel = static_cast<int64_t>(target - (at + kLoadCallLength));
  if (rel != static_cast<int32_t>(rel)) return false;
  buf[0] = kLoadRex;
  buf[1] = kLoadOpcode;
  buf[2] = base;  // ModRM: mod 00, reg rax, rm base
  buf[3] = 0xe8;
  const int32_t rel32 = static_cast<int32_t>(rel);
  memcpy(buf + 4, &rel32, 4);
  encode_nops(buf + kLoadCallLength, length - kLoadCallLength);
  return true;
}

bool encode_inline(uint8_t* buf, unsigned length, InlineOp op, uint64_t at, uint64_t counter, uint8_t base) {
  uint8_t code[16];
  const unsigned n = build_inline(code, op, at, counter, base);
  if (n == 0 || n > length) return false;
  memcpy(buf, code, n);
  encode_nops(buf + n, length - n);
  return true;
}

Decoded decode(const uint8_t* buf, unsigned length, uint64_t at) {
  Decoded d;
  if (length >= kIndirectCallLength && buf[0] == 0xff && buf[1] == 0x15 &&
      only_nops(buf + kIndirectCallLength, length - kIndirectCallLength)) {
    d.form = Form::IndirectCall;
    d.target = at + kIndirectCallLength + static_cast<int64_t>(read32(buf + 2));
    return d;
  }
  if (length >= kDirectCallLength && buf[0] == 0xe8 &&
      only_nops(buf + kDirectCallLength, length - kDirectCallLength)) {
    d.form = Form::DirectCall;
    d.target = at + kDirectCallLength + static_cast<int64_t>(read32(buf + 1));
    return d;
  }
  if (length == kJumpLength && buf[0] == 0xe9) {
    d.form = Form::Jump;
    d.target = at + kJumpLength + static_cast<int64_t>(read32(buf + 1));
    return d;
  }
  // Nothing but nops (checked before the inline forms, none of which is empty).
  if (length > 0 && only_nops(buf, length)) {
    d.form = Form::Nops;
    return d;
  }
  // The counting forms first: read their counter back from the displacement.
  for (unsigned k = 0; k < 2; ++k) {
    const InlineOp op = k == 0 ? InlineOp::CountInvlpg : InlineOp::Count;
    constexpr unsigned kIncq = sizeof kIncqRip + 4;
    const unsigned n = op == InlineOp::Count ? kIncq : kIncq + sizeof kInvlpgRdi;
    if (n > length || memcmp(buf, kIncqRip, sizeof kIncqRip) != 0) continue;
    if (op == InlineOp::CountInvlpg && memcmp(buf + kIncq, kInvlpgRdi, sizeof kInvlpgRdi) != 0) continue;
    if (!only_nops(buf + n, length - n)) continue;
    d.form = Form::Inline;
    d.op = op;
    d.target = at + kIncq + static_cast<int64_t>(read32(buf + sizeof kIncqRip));
    return d;
  }
  if (length >= kLoadCallLength && buf[0] == kLoadRex && buf[1] == kLoadOpcode && load_base_ok(buf[2]) &&
      buf[3] == 0xe8 && only_nops(buf + kLoadCallLength, length - kLoadCallLength)) {
    d.form = Form::LoadCall;
    d.target = at + kLoadCallLength + static_cast<int64_t>(read32(buf + 4));
    d.base = buf[2];
    return d;
  }
  if (length >= kLoadCallLength && buf[0] == kLoadRex && buf[1] == kLoadOpcode && buf[2] == kLoadModRmSib &&
      (buf[3] & 0xf8) == kSibRizBase && load_base_ok(buf[3] & 7) && read32(buf + 4) == 0 &&
      only_nops(buf + kLoadCallLength, length - kLoadCallLength)) {
    d.form = Form::Inline;
    d.op = InlineOp::FlagBitsAt;
    d.base = buf[3] & 7;
    return d;
  }
  for (unsigned i = 0; i <= static_cast<unsigned>(InlineOp::FlagBitsAt); ++i) {
    const auto op = static_cast<InlineOp>(i);
    // (the counting forms and the load form are decoded above)
    if (op == InlineOp::Count || op == InlineOp::CountInvlpg || op == InlineOp::FlagBitsAt) continue;
    uint8_t code[16];
    const unsigned n = build_inline(code, op);
    if (n <= length && !memcmp(buf, code, n) && only_nops(buf + n, length - n)) {
      d.form = Form::Inline;
      d.op = op;
      return d;
    }
  }
  return d;
}

}  // namespace pvk::site_code
