// The registry behind base/arch/cross_cpu.h: the handlers and the delivery
// installed from above, one CPU that sends nothing until then.
#include "base/arch/cross_cpu.h"

namespace pvk::xcpu {

bool g_one_cpu = false;
void set_one_cpu() { g_one_cpu = true; }
namespace {

unsigned one_cpu_id() { return 0; }
unsigned one_cpu_online() { return 1; }
bool one_cpu_is(unsigned cpu) { return cpu == 0; }
bool send_nowhere(unsigned, Ipi) { return false; }
void poll_nothing() {}

}  // namespace

Handler g_handlers[static_cast<unsigned>(Ipi::kCount)] = {};

// Constant-initialized: usable before anything runs.
Delivery g_delivery = {&one_cpu_id, &one_cpu_online, &one_cpu_is, &send_nowhere, &poll_nothing};

void install(const Delivery& delivery) { g_delivery = delivery; }

}  // namespace pvk::xcpu
