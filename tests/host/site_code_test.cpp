// The machine code of pvops call sites (pvops/call/site_code.h): every form the
// patcher writes decodes back to itself, nops are recognised as GAS and the
// SDM write them, and the inline forms — run from an executable page —
// compute what the native verbs compute.
#include "host_compat.h"  // first: see there

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <vector>

#include "pvops/pte.h"
#include "pvops/call/site_code.h"

namespace pvk::test {
namespace {

using site_code::Form;
using site_code::InlineOp;

constexpr InlineOp kOps[] = {InlineOp::FlagsMask, InlineOp::Identity, InlineOp::NativePfn, InlineOp::NativeMake,
                             InlineOp::ReturnOk, InlineOp::FlagBits};
constexpr uint64_t kSite = 0xffffffff80123450ull;

TEST(SiteCode, IndirectCallAsTheCompilerLeavesItDecodes) {
  // ff 15 disp32 then a 7-byte nopl, as `.nops 7` assembles.
  const uint8_t site[] = {0xff, 0x15, 0x10, 0x00, 0x00, 0x00, 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00};
  const auto d = site_code::decode(site, sizeof site, kSite);
  EXPECT_EQ(d.form, Form::IndirectCall);
  EXPECT_EQ(d.target, kSite + 6 + 0x10);
  EXPECT_EQ(site_code::decode(site, 6, kSite).form, Form::IndirectCall);
  // Anything but nops after the call is not a site.
  uint8_t bad[13];
  memcpy(bad, site, sizeof bad);
  bad[7] = 0x1e;
  EXPECT_EQ(site_code::decode(bad, sizeof bad, kSite).form, Form::Unknown);
}

TEST(SiteCode, DirectCallRoundTripsAtEverySiteLength) {
  for (unsigned len : {5u, 6u, 9u, 13u, 20u}) {
    for (int64_t delta : {int64_t{-0x100000}, int64_t{0}, int64_t{0x7fff0000}}) {
      std::vector<uint8_t> buf(len, 0xcc);
      const uint64_t target = kSite + delta;
      ASSERT_TRUE(site_code::encode_direct_call(buf.data(), len, kSite, target)) << len;
      const auto d = site_code::decode(buf.data(), len, kSite);
      EXPECT_EQ(d.form, Form::DirectCall) << len;
      EXPECT_EQ(d.target, target) << len;
    }
  }
}

TEST(SiteCode, DirectCallRefusesWhatDoesNotFit) {
  uint8_t buf[16];
  EXPECT_FALSE(site_code::encode_direct_call(buf, 4, kSite, kSite + 64));             // too short
  EXPECT_FALSE(site_code::encode_direct_call(buf, 6, kSite, kSite + (1ull << 32)));  // beyond rel32
}

TEST(SiteCode, FlagBitsFormFillsItsFiveByteSite) {
  EXPECT_EQ(site_code::inline_length(InlineOp::FlagBits), 5u) << "one instruction, no nops after it";
  EXPECT_EQ(site_code::inline_length(InlineOp::FlagBitsAt), site_code::kLoadCallLength)
      << "one instruction, no nops after it";
  uint8_t buf[site_code::kLoadCallLength];
  ASSERT_TRUE(site_code::encode_inline(buf, sizeof buf, InlineOp::FlagBitsAt));
  const auto d = site_code::decode(buf, sizeof buf, kSite);
  EXPECT_EQ(d.form, Form::Inline);
  EXPECT_EQ(d.op, InlineOp::FlagBitsAt);
  const uint64_t slot = 0x8000000012345067ull;
  EXPECT_EQ(site_code::inline_result(InlineOp::FlagBitsAt, reinterpret_cast<uint64_t>(&slot), 0), slot);
}

TEST(SiteCode, LoadCallRoundTrips) {
  for (unsigned len : {8u, 13u}) {
    std::vector<uint8_t> buf(len, 0xcc);
    ASSERT_TRUE(site_code::encode_load_call(buf.data(), len, kSite, kSite + 0x1234));
    const auto d = site_code::decode(buf.data(), len, kSite);
    EXPECT_EQ(d.form, Form::LoadCall) << len;
    EXPECT_EQ(d.target, kSite + 0x1234) << len;
  }
  uint8_t small[7];
  EXPECT_FALSE(site_code::encode_load_call(small, sizeof small, kSite, kSite + 64));
}

// A load site's slot is in whichever register the compiler chose: both its
// forms keep that register, and decode reads it back.
TEST(SiteCode, LoadFormsKeepTheirBaseRegister) {
  for (uint8_t base = 0; base < 8; ++base) {
    uint8_t call[site_code::kLoadCallLength], load[site_code::kLoadCallLength];
    const bool ok = site_code::load_base_ok(base);
    EXPECT_EQ(ok, base != 4 && base != 5) << "rsp/r12 need a SIB byte, rbp/r13 a displacement: " << int(base);
    EXPECT_EQ(site_code::encode_load_call(call, sizeof call, kSite, kSite + 0x40, base), ok) << int(base);
    EXPECT_EQ(site_code::encode_inline(load, sizeof load, InlineOp::FlagBitsAt, 0, 0, base), ok) << int(base);
    if (!ok) continue;
    const auto c = site_code::decode(call, sizeof call, kSite);
    EXPECT_EQ(c.form, Form::LoadCall) << int(base);
    EXPECT_EQ(c.base, base);
    EXPECT_EQ(c.target, kSite + 0x40);
    const auto l = site_code::decode(load, sizeof load, kSite);
    EXPECT_EQ(l.form, Form::Inline) << int(base);
    EXPECT_EQ(l.op, InlineOp::FlagBitsAt);
    EXPECT_EQ(l.base, base);
  }
}

TEST(SiteCode, InlineFormsRoundTripAndFitTheRoom) {
  for (InlineOp op : kOps) {
    const unsigned n = site_code::inline_length(op);
    EXPECT_LE(n, 13u);
    for (unsigned len = n; len <= 16; ++len) {
      std::vector<uint8_t> buf(len, 0xcc);
      ASSERT_TRUE(site_code::encode_inline(buf.data(), len, op));
      const auto d = site_code::decode(buf.data(), len, kSite);
      EXPECT_EQ(d.form, Form::Inline) << static_cast<int>(op) << " len " << len;
      EXPECT_EQ(d.op, op) << len;
    }
    std::vector<uint8_t> small(n - 1);
    EXPECT_FALSE(site_code::encode_inline(small.data(), n - 1, op));
  }
}

TEST(SiteCode, CountingFormsCarryTheirCounterRipRelative) {
  for (InlineOp op : {InlineOp::Count, InlineOp::CountInvlpg}) {
    for (int64_t delta : {int64_t{-0x7000000}, int64_t{64}, int64_t{0x200000}}) {
      uint8_t buf[13];
      const uint64_t counter = kSite + delta;
      ASSERT_TRUE(site_code::encode_inline(buf, sizeof buf, op, kSite, counter));
      const auto d = site_code::decode(buf, sizeof buf, kSite);
      EXPECT_EQ(d.form, Form::Inline);
      EXPECT_EQ(d.op, op);
      EXPECT_EQ(d.target, counter) << delta;
    }
    uint8_t buf[13];
    EXPECT_FALSE(site_code::encode_inline(buf, sizeof buf, op, kSite, kSite + (1ull << 33))) << "out of reach";
  }
}

TEST(SiteCode, NopsOfEveryLengthDecodeAsPadding) {
  for (unsigned len = 0; len <= 30; ++len) {
    std::vector<uint8_t> buf(5 + len);
    ASSERT_TRUE(site_code::encode_direct_call(buf.data(), 5 + len, kSite, kSite + 100));
    EXPECT_EQ(site_code::decode(buf.data(), 5 + len, kSite).form, Form::DirectCall) << len;
  }
}

// Runs the inline form as a function: the bytes, then `ret`, on a page made
// executable. The SysV convention is the site's: rdi, rsi in, rax out.
class InlineExec : public ::testing::Test {
 protected:
  void SetUp() override {
    page_ = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(page_, MAP_FAILED);
  }
  void TearDown() override { munmap(page_, 4096); }
  uint64_t run(InlineOp op, uint64_t rdi, uint64_t rsi) {
    auto* code = static_cast<uint8_t*>(page_);
    EXPECT_EQ(mprotect(page_, 4096, PROT_READ | PROT_WRITE), 0);
    EXPECT_TRUE(site_code::encode_inline(code, 13, op));
    code[13] = 0xc3;  // ret
    EXPECT_EQ(mprotect(page_, 4096, PROT_READ | PROT_EXEC), 0);
    auto fn = reinterpret_cast<uint64_t (*)(uint64_t, uint64_t)>(page_);
    return fn(rdi, rsi);
  }
  void* page_ = nullptr;
};

TEST_F(InlineExec, CountBumpsItsCounter) {
  // The counter sits on the same page, in reach of the rip-relative form.
  auto* code = static_cast<uint8_t*>(page_);
  auto* counter = reinterpret_cast<uint64_t*>(code + 2048);
  *counter = 41;
  ASSERT_TRUE(site_code::encode_inline(code, 13, InlineOp::Count, reinterpret_cast<uint64_t>(code),
                                       reinterpret_cast<uint64_t>(counter)));
  code[13] = 0xc3;  // ret
  ASSERT_EQ(mprotect(page_, 4096, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
  reinterpret_cast<void (*)()>(page_)();
  EXPECT_EQ(*counter, 42u);
}

TEST_F(InlineExec, LoadFormReadsTheSlotItsRegisterHolds) {
  const uint64_t slot = 0x8000000012345067ull;
  auto* code = static_cast<uint8_t*>(page_);
  for (uint8_t base : {site_code::kRdi, uint8_t{6}}) {  // rdi, rsi: the two arguments
    ASSERT_EQ(mprotect(page_, 4096, PROT_READ | PROT_WRITE), 0);
    ASSERT_TRUE(site_code::encode_inline(code, 13, InlineOp::FlagBitsAt, 0, 0, base));
    code[13] = 0xc3;  // ret
    ASSERT_EQ(mprotect(page_, 4096, PROT_READ | PROT_EXEC), 0);
    auto fn = reinterpret_cast<uint64_t (*)(uint64_t, uint64_t)>(page_);
    const uint64_t s = reinterpret_cast<uint64_t>(&slot);
    EXPECT_EQ(base == site_code::kRdi ? fn(s, 0) : fn(0, s), slot) << int(base);
  }
}

TEST_F(InlineExec, EachFormComputesTheNativeVerb) {
  const uint64_t entries[] = {0, ~uint64_t{0}, 0x8000000012345067ull, 0x000ffffffffff000ull, 0x7ff0000abcdef863ull};
  for (uint64_t e : entries) {
    EXPECT_EQ(run(InlineOp::FlagsMask, e, 0), e & pte_bit::FlagMask);
    EXPECT_EQ(run(InlineOp::Identity, e, 0), e);
    // A flag-bits site's caller masks: the entry is its own flag image.
    EXPECT_EQ(run(InlineOp::FlagBits, e, 0) & pte_bit::FlagMask, e & pte_bit::FlagMask);
    EXPECT_EQ(run(InlineOp::NativePfn, e, 0), (e & pte_bit::FrameMask) >> kPageShift);
    const uint64_t pfn = (e & pte_bit::FrameMask) >> kPageShift;
    EXPECT_EQ(run(InlineOp::NativeMake, pfn, 0x8000000000000063ull), (pfn << kPageShift) | 0x8000000000000063ull);
    EXPECT_EQ(run(InlineOp::ReturnOk, e, 0x25) & 0xffffffffu, 0u) << "ErrorOr<void>'s success is eax = 0";
    for (InlineOp op : kOps)
      if (op != InlineOp::ReturnOk) EXPECT_EQ(run(op, e, 0x25), site_code::inline_result(op, e, 0x25));
  }
}

}  // namespace
}  // namespace pvk::test
