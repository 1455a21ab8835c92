#include "cross_cpu_host.h"

namespace pvk {
namespace test {
FakeXcpu& fake_xcpu() {
  static FakeXcpu f;
  return f;
}
thread_local int t_cpu = -1;
void act_as_cpu(unsigned cpu) { t_cpu = static_cast<int>(cpu); }
}  // namespace test

namespace {

unsigned fake_this_cpu_id() { return test::t_cpu >= 0 ? static_cast<unsigned>(test::t_cpu) : test::fake_xcpu().this_cpu; }
unsigned fake_cpus_online() { return test::fake_xcpu().online; }
bool fake_online(unsigned cpu) { return cpu < test::fake_xcpu().online; }

bool fake_send(unsigned cpu, xcpu::Ipi kind) {
  test::FakeXcpu& f = test::fake_xcpu();
  f.sent.push_back({f.this_cpu, cpu, kind});
  if (f.refuse) return false;
  if (f.deliver && xcpu::handler(kind)) {
    const unsigned me = f.this_cpu;
    f.this_cpu = cpu;
    xcpu::handler(kind)();
    f.this_cpu = me;
  }
  return true;
}

void fake_poll() {}

// The fake is the delivery from before main on, as the kernel's own is from
// the first line of its boot entry (host code: a constructor may do this).
struct InstallFake {
  InstallFake() { xcpu::install({&fake_this_cpu_id, &fake_cpus_online, &fake_online, &fake_send, &fake_poll}); }
} g_install_fake;

}  // namespace
}  // namespace pvk
