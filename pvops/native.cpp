// The native backend's pvops table (its verbs: pvops/native_ops.h).
#include "pvops/backends.h"
#include "pvops/native_ops.h"

namespace pvk {

MmuOps make_native_ops(PteAccess access) { return native::ops(access); }

void install_native_shootdown() { init_tlb_shootdown({&native::target_flush_one, &native::target_flush_all}); }

}  // namespace pvk
