// The lock-order checker (base/lib/lock_order.h): locks must be taken in
// strictly rising rank and released innermost first; a violation names the
// held lock it conflicts with.
#include <gtest/gtest.h>

#include "base/lib/lock_order.h"

namespace pvk {
namespace {

constexpr LockClass kKernel{"kernel", LockRank::Kernel};
constexpr LockClass kMm{"mm", LockRank::Mm};
constexpr LockClass kMm2{"mm-other", LockRank::Mm};
constexpr LockClass kFrames{"frames", LockRank::Frames};
constexpr LockClass kConsole{"console", LockRank::Console};

TEST(LockOrder, RisingRanksAreAllowed) {
  LockOrder held;
  for (const LockClass* c : {&kKernel, &kMm, &kFrames, &kConsole}) {
    EXPECT_EQ(held.conflict(*c), nullptr) << c->name;
    held.push(*c);
  }
  EXPECT_EQ(held.depth(), 4u);
}

TEST(LockOrder, LowerRankThanAHeldLockConflictsWithIt) {
  LockOrder held;
  held.push(kKernel);
  held.push(kFrames);
  const LockClass* c = held.conflict(kMm);
  ASSERT_NE(c, nullptr);
  EXPECT_STREQ(c->name, "frames");
}

TEST(LockOrder, EqualRankConflicts) {
  LockOrder held;
  held.push(kMm);
  EXPECT_EQ(held.conflict(kMm2), &kMm);  // two address spaces' locks at once: no order between them
  EXPECT_EQ(held.conflict(kMm), &kMm);   // the same class again (recursion)
}

TEST(LockOrder, ReleasingTheInnermostAllowsItAgain) {
  LockOrder held;
  held.push(kKernel);
  held.push(kFrames);
  EXPECT_TRUE(held.pop(kFrames));
  EXPECT_EQ(held.conflict(kMm), nullptr);
  EXPECT_TRUE(held.pop(kKernel));
  EXPECT_EQ(held.depth(), 0u);
  EXPECT_EQ(held.conflict(kKernel), nullptr);
}

TEST(LockOrder, ReleaseOutOfOrderOrOfAnUnheldLockIsRefused) {
  LockOrder held;
  EXPECT_FALSE(held.pop(kKernel));
  held.push(kKernel);
  held.push(kFrames);
  EXPECT_FALSE(held.pop(kKernel));  // not the innermost
  EXPECT_EQ(held.depth(), 2u);
}

TEST(LockOrder, TooManyHeldLocksIsAViolation) {
  LockOrder held;
  static LockClass many[LockOrder::kMaxHeld];
  for (unsigned i = 0; i < LockOrder::kMaxHeld; ++i) {
    many[i] = LockClass{"nested", static_cast<LockRank>(100 + i)};
    ASSERT_EQ(held.conflict(many[i]), nullptr);
    held.push(many[i]);
  }
  const LockClass deeper{"deeper", static_cast<LockRank>(200)};
  EXPECT_EQ(held.conflict(deeper), &many[LockOrder::kMaxHeld - 1]);
}

}  // namespace
}  // namespace pvk
