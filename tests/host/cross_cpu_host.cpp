#include "cross_cpu_host.h"

namespace pvk {
namespace test {
FakeXcpu& fake_xcpu() {
  static FakeXcpu f;
  return f;
}
}  // namespace test

namespace xcpu {
namespace {
Handler g_handlers[static_cast<unsigned>(Ipi::kCount)] = {};
}  // namespace

unsigned this_cpu_id() { return test::fake_xcpu().this_cpu; }
unsigned cpus_online() { return test::fake_xcpu().online; }
bool online(unsigned cpu) { return cpu < test::fake_xcpu().online; }
void set_handler(Ipi kind, Handler h) { g_handlers[static_cast<unsigned>(kind)] = h; }

bool send(unsigned cpu, Ipi kind) {
  test::FakeXcpu& f = test::fake_xcpu();
  f.sent.push_back({f.this_cpu, cpu, kind});
  if (f.refuse) return false;
  if (f.deliver && g_handlers[static_cast<unsigned>(kind)]) {
    const unsigned me = f.this_cpu;
    f.this_cpu = cpu;
    g_handlers[static_cast<unsigned>(kind)]();
    f.this_cpu = me;
  }
  return true;
}

void poll() {}

}  // namespace xcpu
}  // namespace pvk
