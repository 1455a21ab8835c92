// kernel_isolation.
#include "base/layout.h"
#include "harness.h"

namespace proctest {
namespace {

struct KernelAddr {
  const char* what;
  uint64_t addr;
};

// Addresses above user space that hold something in every boot: all of RAM
// (the physmap), the kernel's own text, and the range Xen reserves for
// itself in a PV guest (its read-only machine-to-phys table starts there;
// natively it is simply unmapped). None may be reachable from user mode.
constexpr KernelAddr kKernelAddrs[] = {
    {"physmap", PVK_PHYSMAP_BASE},
    {"kernel_image", PVK_KERNEL_VMA + PVK_KERNEL_LOAD},
    {"xen_reserved", 0xffff800000000000ull},
};

void read_addr(void* arg) { peek(reinterpret_cast<uint64_t>(arg)); }
void write_addr(void* arg) { poke(reinterpret_cast<uint64_t>(arg), 0x6b65726e656cull); }
// An indirect jump: the fault is an instruction fetch at the target, with
// the target in %rip (a kernel address) and user mode still in %cs.
void jump_to(void* arg) { asm volatile("jmp *%0" : : "r"(arg) : "memory"); }

// Which access of which address, for the failure message and the record.
void check_killed_by_segv(int status, const char* access, const KernelAddr& k, int line, int* faults) {
  count_check(line);
  if ((status & ~0x80) != ::pvk::abi::wait_signaled(SIGSEGV)) {
    char what[96];
    pvk::format(what, sizeof what, "user %s of %s 0x%lx must die of SIGSEGV", access, k.what, k.addr);
    check_failed(line, what, true, status, ::pvk::abi::wait_signaled(SIGSEGV));
    return;
  }
  ++*faults;
}

JmpBuf g_jmp;
volatile int g_handled;
volatile int g_handled_sig;
void escape_handler(int sig) {
  g_handled = g_handled + 1;
  g_handled_sig = sig;
  pvk_longjmp(&g_jmp, 1);
}

}  // namespace

// User mode cannot touch the kernel: in a forked child, a read, a write and
// a jump to a kernel address (the physmap, the kernel image, Xen's reserved
// range) each kill the child with SIGSEGV, seen through wait4. Under Xen PV
// user mode runs on its own user-only root, natively on the same root with
// the kernel's pages supervisor-only: either way all of these must fault.
// A non-canonical address (#GP rather than #PF) kills the same way. With a
// SIGSEGV handler, the same faults run the handler (which leaves with
// longjmp) once each, and the process carries on: a fault whose %rip or
// address is a kernel address is still the user's fault.
void test_kernel_isolation() {
  int faults = 0;
  for (const KernelAddr& k : kKernelAddrs) {
    void* a = reinterpret_cast<void*>(k.addr);
    check_killed_by_segv(wait_status_of(read_addr, a), "read", k, __LINE__, &faults);
    check_killed_by_segv(wait_status_of(write_addr, a), "write", k, __LINE__, &faults);
    check_killed_by_segv(wait_status_of(jump_to, a), "jump", k, __LINE__, &faults);
  }
  const KernelAddr noncanonical{"noncanonical", kNonCanonicalStart};
  check_killed_by_segv(wait_status_of(read_addr, reinterpret_cast<void*>(kNonCanonicalStart)), "read", noncanonical, __LINE__,
                       &faults);
  check_killed_by_segv(wait_status_of(jump_to, reinterpret_cast<void*>(kNonCanonicalStart)), "jump", noncanonical, __LINE__,
                       &faults);
  detail("killed", faults);

  // Handled: read, write and jump of each address, one handler run each.
  CHECK_EQ(sigaction(SIGSEGV, escape_handler, kSaNodefer), 0);
  void (*const accesses[])(void*) = {read_addr, write_addr, jump_to};
  volatile int expected = 0;
  for (const KernelAddr& k : kKernelAddrs) {
    for (auto access : accesses) {
      if (pvk_setjmp(&g_jmp) == 0) {
        access(reinterpret_cast<void*>(k.addr));
        CHECK(!"an access to a kernel address completed");
      }
      expected = expected + 1;
      CHECK_EQ(g_handled, expected);
    }
  }
  CHECK_EQ(g_handled_sig, SIGSEGV);
  CHECK_EQ(sigaction(SIGSEGV, SIG_DFL), 0);
  CHECK(getpid() > 0);  // system calls still work
  detail("handled", g_handled);
}

}  // namespace proctest
