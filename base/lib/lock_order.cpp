#include "base/lib/lock_order.h"

namespace pvk {

const LockClass* LockOrder::conflict(const LockClass& next) const {
  if (depth_ == kMaxHeld) return held_[depth_ - 1];
  // Ranks only rise from the outermost lock in, so the innermost one is the
  // highest; checking it alone would do, every entry is checked to catch a
  // book that an earlier unchecked push left out of order.
  for (unsigned i = 0; i < depth_; ++i)
    if (static_cast<uint8_t>(next.rank) <= static_cast<uint8_t>(held_[i]->rank)) return held_[i];
  return nullptr;
}

void LockOrder::push(const LockClass& next) {
  if (depth_ < kMaxHeld) held_[depth_++] = &next;
}

bool LockOrder::pop(const LockClass& cls) {
  if (depth_ == 0 || held_[depth_ - 1] != &cls) return false;
  held_[--depth_] = nullptr;
  return true;
}

}  // namespace pvk
