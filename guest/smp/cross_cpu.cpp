// base/arch/cross_cpu.h for the kernel as it stands: processes run on the
// boot CPU only, so no CPU ever has to ask another for anything. The
// handlers are kept; send() refuses (the caller reports it), which is right
// until the scheduler puts processes on the APs and sends go through the
// platform's IPI path.
#include "base/arch/cross_cpu.h"

#include "guest/smp/percpu.h"

namespace pvk::xcpu {
namespace {

Handler g_handlers[static_cast<unsigned>(Ipi::kCount)] = {};

}  // namespace

unsigned this_cpu_id() {
  const PerCpu* pc = this_cpu();
  return pc ? pc->id : 0;
}

unsigned cpus_online() { return smp::counts().online(); }

bool online(unsigned cpu) { return cpu < smp::kMaxCpus && smp::cpu(cpu).online; }

void set_handler(Ipi kind, Handler h) { g_handlers[static_cast<unsigned>(kind)] = h; }

bool send(unsigned, Ipi) { return false; }

void poll() {}

}  // namespace pvk::xcpu
