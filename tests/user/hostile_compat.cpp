// hostile's attacks from compatibility mode: far transfers to every
// selector, then syscall, int $0x80 and sysenter from 32-bit code; and a
// stack on an untouched MAP_SHARED page (found by the far transfers).
#include "hostile_attacks.h"

extern "C" char hostile_compat_entry[];
extern "C" const char hostile_ring0_payload[], hostile_ring0_payload_end[];

namespace hostile {

// ===========================================================================
// Compatibility mode: far transfers to every selector, then syscall,
// int $0x80 and sysenter from 32-bit code.

namespace {

constexpr uint64_t kMarkers = 0x30000000;  // MAP_SHARED, below 4 GiB
volatile uint32_t* g_markers;

struct [[gnu::packed]] FarPtr32 {
  uint32_t off;
  uint16_t sel;
};
FarPtr32 g_far;

struct FarCase {
  int method;  // 0 ljmp, 1 lcall, 2 lret
  uint16_t sel;
  uint32_t mode;  // hostile_compat_entry's %ebx
};
FarCase g_case;

const char* const kMethods[] = {"ljmp", "lcall", "lretq"};
const char* const kModes[] = {"ud2", "syscall", "int $0x80", "sysenter"};

void far_victim(uint64_t) {
  const uint64_t stack = kMarkers + 2 * kPage - 64;
  const uint64_t target = reinterpret_cast<uint64_t>(hostile_compat_entry);
  g_far = {static_cast<uint32_t>(target), g_case.sel};
  const uint64_t sel = g_case.sel;
  switch (g_case.method) {
    case 0:
      asm volatile("mov %0, %%rsp\n\tljmpl *%1" : : "r"(stack), "m"(g_far), "b"(g_case.mode), "D"(kMarkers), "S"(stack)
                   : "memory");
      break;
    case 1:
      asm volatile("mov %0, %%rsp\n\tlcalll *%1" : : "r"(stack), "m"(g_far), "b"(g_case.mode), "D"(kMarkers), "S"(stack)
                   : "memory");
      break;
    default:
      asm volatile("mov %0, %%rsp\n\tpushq %1\n\tpushq %2\n\tlretq"
                   :
                   : "r"(stack), "r"(sel), "r"(target), "b"(g_case.mode), "D"(kMarkers), "S"(stack)
                   : "memory");
      break;
  }
  exit_group(kVictimSurvived);
}

bool g_page0_mapped;

void setup_compat() {
  g_markers = static_cast<volatile uint32_t*>(map_fixed_shared(kMarkers, 2 * kPage, PROT_READ | PROT_WRITE));
  HCHECK(g_markers != nullptr, "cannot map the marker block at 0x%lx", kMarkers);
  // Populate both pages here: the victims' stack pushes then hit present
  // pages (see shared_stack_push for what happens otherwise).
  if (g_markers) {
    g_markers[1024] = 0;
    g_markers[2047] = 0;
  }
  // If page 0 can be mapped, it holds a payload that would only run if the
  // kernel jumped to user address 0 in ring 0 (syscall from compatibility
  // mode with MSR_CSTAR never set).
  const int64_t r = mmap(nullptr, kPage, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED);
  g_page0_mapped = r == 0;
  if (g_page0_mapped) {
    auto* p = reinterpret_cast<volatile uint8_t*>(0);
    const uint64_t n = static_cast<uint64_t>(hostile_ring0_payload_end - hostile_ring0_payload);
    for (uint64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(hostile_ring0_payload[i]);
  } else if (r >= 0 && !is_err(r)) {
    munmap(reinterpret_cast<void*>(r), kPage);
  }
  detail("page0_mappable", g_page0_mapped ? 1 : 0);
}

// One far transfer in a victim. Returns true if the victim entered the payload.
bool far_case(const FarCase& c, bool verbose) {
  for (int i = 0; i < 8; ++i) g_markers[i] = 0;
  g_case = c;
  if (verbose) printf("hostile: %s to 0x%x, then %s\n", kMethods[c.method], c.sel, kModes[c.mode]);
  PvkCounters c0, c1;
  read_counters(&c0);
  const Outcome o = run_victim(far_victim, 0);
  read_counters(&c1);
  // A victim that hangs: page faults taken meanwhile tell a fault loop from a spin.
  if (o.timed_out) detail("hung_victim_page_faults", static_cast<int64_t>(c1.page_faults - c0.page_faults));
  char what[80];
  pvk::format(what, sizeof what, "%s to selector 0x%x, then %s", kMethods[c.method], c.sel, kModes[c.mode]);
  EXPECT_SIGNAL(what, o, SIGSEGV, SIGILL, SIGKILL, SIGBUS, SIGTRAP);
  HCHECK(g_markers[4] != 0x52494e47, "%s: the kernel ran a user page in ring 0", what);
  const bool entered = g_markers[0] == 0x434f4d50;
  if (entered && c.mode != 0 && g_markers[2] == 0x52455455)
    detail_str("returned_from", what);  // the instruction came back to 32-bit code (then ud2)
  return entered;
}

}  // namespace

void attack_compat_far() {
  setup_compat();
  if (!g_markers) return;
  uint16_t sels[64];
  unsigned n = 0;
  for (uint16_t s = 0; s <= 0x40; s += 8) sels[n++] = s, sels[n++] = s | 3;
  for (uint16_t s = 0xe000; s <= 0xe060; s += 8) sels[n++] = s, sels[n++] = s | 3;
  sels[n++] = 0x04 | 3;  // LDT selectors: there is no LDT
  sels[n++] = 0x0c | 3;
  unsigned entered = 0;
  for (unsigned i = 0; i < n; ++i)
    for (int m = 0; m < 2; ++m)
      if (far_case({m, sels[i], 0}, false)) {
        ++entered;
        detail("entered_cs", g_markers[1]);
      }
  detail("entered", entered);
}

// lretq separately, over fewer selectors: natively a lretq to a selector
// that is not user code was seen to leave the victim spinning until killed.
void attack_compat_far_lret() {
  setup_compat();
  if (!g_markers) return;
  const uint16_t sels[] = {0x00, 0x08, 0x13, 0x1b, 0x23, 0x2b, 0x30, 0xe008, 0xe023, 0xe033};
  unsigned entered = 0;
  for (uint16_t s : sels) entered += far_case({2, s, 0}, true) ? 1 : 0;
  detail("entered", entered);
}

void attack_compat_syscall() {
  setup_compat();
  if (!g_markers) return;
  const uint16_t sels[] = {0x1b, 0xe023, 0x2b, 0xe033};  // native and Xen 32-bit user code, then 64-bit
  unsigned entered = 0;
  for (uint16_t s : sels)
    for (int m = 0; m < 2; ++m)
      for (uint32_t mode = 1; mode <= 3; ++mode) entered += far_case({m, s, mode}, true) ? 1 : 0;
  // lretq into 32-bit code, then each instruction.
  for (uint32_t mode = 1; mode <= 3; ++mode) entered += far_case({2, sels[0], mode}, true) ? 1 : 0;
  for (uint32_t mode = 1; mode <= 3; ++mode) entered += far_case({2, sels[1], mode}, true) ? 1 : 0;
  detail("entered", entered);
}

namespace {

// A stack on a MAP_SHARED page the parent never touched: the first push
// faults the page in. (Found by compat_far: lcall/lretq victims whose stack
// was such a page spun until killed, natively.)
constexpr uint64_t kSharedStack = 0x31000000;
void push_on_shared(uint64_t variant) {
  const uint64_t top = kSharedStack + 2 * kPage - 64;
  if (variant == 0) {  // a plain store first, then pushes
    *reinterpret_cast<volatile uint64_t*>(top - 8) = 1;
  }
  asm volatile(
      "mov %%rsp, %%r12\n\t"
      "mov %0, %%rsp\n\t"
      "pushq $1\n\t"
      "pushq $2\n\t"
      "popq %%rax\n\t"
      "popq %%rax\n\t"
      "mov %%r12, %%rsp"
      :
      : "r"(top)
      : "r12", "rax", "memory");
}

}  // namespace

void attack_shared_stack_push() {
  HCHECK(map_fixed_shared(kSharedStack, 2 * kPage, PROT_READ | PROT_WRITE) != nullptr, "mmap shared");
  EXPECT_EXIT("pushes onto an untouched MAP_SHARED page after a store", run_victim(push_on_shared, 0),
              kVictimSurvived);
  EXPECT_EXIT("pushes onto an untouched MAP_SHARED page", run_victim(push_on_shared, 1), kVictimSurvived);
}

}  // namespace hostile
