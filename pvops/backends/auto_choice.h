// mmu=auto's decision, per range operation and per L1 table: how the entries
// an operation will store into one table should reach it. Pure arithmetic,
// so the host tests cover it whole.
//
// A queued entry costs Xen one validation (and a share of one hypercall);
// unhooking costs a fixed amount per table whatever the count — an L2 clear
// that devalidates the table, two alias remaps, an L2 store that validates
// the table again — plus a plain store per entry. So below some count the
// queue wins and above it the unhook does: the threshold is that break-even,
// measured at boot (calibrate_auto in pvops/backends/auto_calibration.cpp) or
// given by auto_threshold=. The table's cost is not one constant: Xen's
// revalidation checks each present entry (get_page_from_l1e) and passes
// over empty ones, so a table holding 64 leaves rehooks for much less than
// a full one. The break-even is measured at both ends — a full table and a
// nearly empty one — and the threshold for a table of p present entries
// lies on the line between them.
//
// Nor is the unhook's fixed cost independent of what came before it: its
// first L2 store is an immediate update, so whatever the queue holds then
// (fork has just queued the child's L2 entry) leaves early in a hypercall of
// its own, one the batch would otherwise have absorbed. The calibration
// prices that split too, as entries (busy_extra), and the choice adds them
// to the threshold when the queue is not empty as the table begins.
#pragma once
#include <stdint.h>

namespace pvk {

enum class TableMode : uint8_t { Unhook, Auto };
enum class Strategy : uint8_t { Queue, Unhook };

struct AutoThresholds {
  // Entries of one full table (512 present leaves) an operation must store
  // for auto to unhook it; 0 never unhooks (a threshold of 1 always does).
  unsigned unhook_at = 0;
  // Mapped leaves a table needs for auto to let fork share it (ptshare=on)
  // instead of copying its leaves.
  unsigned share_at = 0;
  // unhook_at's counterpart for a table with no present leaf (its rehook
  // validates nothing); 0: as unhook_at (one threshold whatever the table holds).
  unsigned unhook_at_empty = 0;
  // Entries added to the threshold when the update queue is not empty as a
  // table begins (the unhook sends it early: one more hypercall); 0: the
  // queue's state does not matter (auto_threshold=, or no measurable cost).
  unsigned busy_extra = 0;
};

// The threshold for a table holding `present` leaves (0..512), with the
// queue holding updates (busy) or not. Never above 512: a table stored
// whole is unhooked whatever it costs (threshold_from_costs' rule).
inline unsigned unhook_threshold(AutoThresholds t, unsigned present, bool busy = false) {
  if (t.unhook_at == 0) return 0;
  unsigned base = t.unhook_at;
  if (t.unhook_at_empty != 0 && t.unhook_at_empty < t.unhook_at) {
    const unsigned span = t.unhook_at - t.unhook_at_empty;
    base = t.unhook_at_empty + (span * (present > 512 ? 512 : present) + 511) / 512;
  }
  const unsigned n = base + (busy ? t.busy_extra : 0);
  return n > 512 ? 512 : n;
}

// count_present() is asked only when the entry count lies between the two
// ends (reading a table's 512 entries costs about what one queued entry does).
// queue_busy() is asked only past the first test: below an empty table's
// threshold a table is queued whatever the queue holds (a busy queue only
// raises the threshold), which decides every small update (a one-page
// mprotect, a fault) in a compare.
template <typename CountPresent, typename QueueBusy>
Strategy choose_strategy_lazily(unsigned entries, AutoThresholds t, CountPresent count_present, QueueBusy queue_busy) {
  if (t.unhook_at == 0) return Strategy::Queue;
  const unsigned low = t.unhook_at_empty != 0 && t.unhook_at_empty < t.unhook_at ? t.unhook_at_empty : t.unhook_at;
  if (entries < low) return Strategy::Queue;
  const bool busy = queue_busy();
  if (entries >= unhook_threshold(t, 512, busy)) return Strategy::Unhook;
  if (entries < unhook_threshold(t, 0, busy)) return Strategy::Queue;
  return entries >= unhook_threshold(t, count_present(), busy) ? Strategy::Unhook : Strategy::Queue;
}
template <typename CountPresent>
Strategy choose_strategy(unsigned entries, AutoThresholds t, CountPresent count_present, bool busy = false) {
  return choose_strategy_lazily(entries, t, count_present, [busy] { return busy; });
}
inline Strategy choose_strategy(unsigned entries, AutoThresholds t) {
  return choose_strategy(entries, t, [] { return 512u; });
}

inline bool choose_share(unsigned mapped_leaves, AutoThresholds t) { return mapped_leaves >= t.share_at; }

// The break-even from measured unit costs (ns): the smallest n with
// n * queued >= table_cycle + n * plain, clamped to 1..512 (a table has 512
// entries; at 512 auto unhooks only full tables). With queued <= plain the
// queue always wins: 0 (never unhook).
inline unsigned threshold_from_costs(uint64_t queued_ns, uint64_t plain_ns, uint64_t table_cycle_ns) {
  if (queued_ns <= plain_ns) return 0;
  const uint64_t per = queued_ns - plain_ns;
  uint64_t n = (table_cycle_ns + per - 1) / per;
  if (n < 1) n = 1;
  if (n > 512) n = 512;
  return static_cast<unsigned>(n);
}

// The early send of a non-empty queue, in entries: the smallest n whose
// saving n * (queued - plain) pays for it. 0 when it costs nothing or the
// queue always wins anyway.
inline unsigned busy_extra_from_costs(uint64_t queued_ns, uint64_t plain_ns, uint64_t split_ns) {
  if (queued_ns <= plain_ns || split_ns == 0) return 0;
  const uint64_t per = queued_ns - plain_ns;
  const uint64_t n = (split_ns + per - 1) / per;
  return static_cast<unsigned>(n > 512 ? 512 : n);
}

// Sharing a table at fork costs two L2 stores now (each a validation-free
// type reference, but a TLB flush: docs/design.md measures 11-18 µs) and a copy
// of the table on its first write later; copying costs a queued entry per
// leaf for the parent's write-protect. Share when the leaves' cost is above
// the two L2 stores and one later copy-out (a hook: one table validation).
inline unsigned share_threshold_from_costs(uint64_t queued_ns, uint64_t l2_store_ns, uint64_t table_cycle_ns) {
  if (queued_ns == 0) return 512;
  uint64_t n = (2 * l2_store_ns + table_cycle_ns / 2 + queued_ns - 1) / queued_ns;
  if (n < 1) n = 1;
  if (n > 512) n = 512;
  return static_cast<unsigned>(n);
}

}  // namespace pvk
