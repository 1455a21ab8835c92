// Choosing and enabling the FP/SIMD save method (arch/fpu/fpu.h).
#include "arch/fpu/fpu.h"

#include "base/arch/cpu.h"
#include "base/lib/kstring.h"
#include "hypercalls/hypercall.h"

extern "C" {
void pvk_fpu_xsave(void* area);
void pvk_fpu_xsaveopt(void* area);
void pvk_fpu_fxsave(void* area);
bool pvk_fpu_xrstor(const void* area);
bool pvk_fpu_fxrstor(const void* area);
bool pvk_fpu_xsetbv(uint64_t xcr0);
}

namespace pvk::fpu {
namespace {

Config g_config;
// The clean state, restored when a user's image is refused.
alignas(64) uint8_t g_init_image[kAreaBytes];
// The boot CPU's FXSAVE, to read the MXCSR mask from.
alignas(64) uint8_t g_probe[kAreaBytes];

namespace cr0 {
inline constexpr uint64_t MP = 1u << 1, EM = 1u << 2, TS = 1u << 3, NE = 1u << 5;
}
namespace cr4 {
inline constexpr uint64_t OSFXSR = 1u << 9, OSXMMEXCPT = 1u << 10, OSXSAVE = 1u << 18;
}
namespace xfeature {
inline constexpr uint64_t X87 = 1, SSE = 2, AVX = 4, OPMASK = 1u << 5, ZMM_HI256 = 1u << 6, HI16_ZMM = 1u << 7;
inline constexpr uint64_t AVX512 = OPMASK | ZMM_HI256 | HI16_ZMM;
}  // namespace xfeature
constexpr uint32_t kCpuid1EcxXsave = 1u << 26;
constexpr uint32_t kCpuidDXsaveopt = 1u << 0;

uint64_t read_cr0() {
  uint64_t v;
  asm volatile("mov %%cr0, %0" : "=r"(v));
  return v;
}
void write_cr0(uint64_t v) { asm volatile("mov %0, %%cr0" : : "r"(v) : "memory"); }

// The standard-format size of the features in xcr0: the end of the
// highest component (CPUID leaf 0xD, sub-leaf i: EAX size, EBX offset).
uint32_t area_size(uint64_t xcr0) {
  uint32_t size = sigframe::kLegacySize + sigframe::kHeaderSize;
  for (uint32_t i = 2; i < 64; ++i) {
    if (!(xcr0 & (uint64_t{1} << i))) continue;
    uint32_t a, b, c, d;
    cpu::cpuid(0xd, i, a, b, c, d);
    if (a + b > size) size = a + b;
  }
  return size;
}

// Which user features to enable: x87, SSE, AVX, and AVX-512 if the area
// still fits a frame. Nothing needing more kernel support (PKRU, AMX's
// permission dance, MPX's bounds).
uint64_t choose_xcr0() {
  uint32_t a, b, c, d;
  cpu::cpuid(0xd, 0, a, b, c, d);
  const uint64_t supported = (uint64_t{d} << 32) | a;
  uint64_t x = supported & (xfeature::X87 | xfeature::SSE);
  if (x != (xfeature::X87 | xfeature::SSE)) return 0;
  if (supported & xfeature::AVX) x |= xfeature::AVX;
  if ((x & xfeature::AVX) && (supported & xfeature::AVX512) == xfeature::AVX512) x |= xfeature::AVX512;
  if (area_size(x) + sigframe::kMagic2Size > kAreaBytes) x &= ~xfeature::AVX512;
  return x;
}

// This CPU's control registers and XCR0 for the chosen method.
bool enable_this_cpu(bool xsave, uint64_t xcr0) {
  if (!g_config.xen_pv) {
    // Natively: FP instructions run (EM clear, no TS), WAIT honours TS
    // (MP), x87 errors are #MF (NE); FXSAVE and SSE exceptions (OSFXSR,
    // OSXMMEXCPT).
    write_cr0((read_cr0() & ~(cr0::EM | cr0::TS)) | cr0::MP | cr0::NE);
    uint64_t c4 = cpu::read_cr4() | cr4::OSFXSR | cr4::OSXMMEXCPT;
    if (xsave) c4 |= cr4::OSXSAVE;
    cpu::write_cr4(c4);
  } else {
    // Xen owns CR0 and keeps CR4.OSFXSR/OSXMMEXCPT set; the guest controls
    // CR0.TS (fpu_taskswitch) and its virtual CR4.OSXSAVE, which Xen's
    // XSETBV emulation requires (mov to CR4 is emulated too).
    xen::hypercall_uncounted(__HYPERVISOR_fpu_taskswitch, 0);
    if (xsave) cpu::write_cr4(cpu::read_cr4() | cr4::OSXSAVE);
  }
  return !xsave || pvk_fpu_xsetbv(xcr0);
}

}  // namespace

void init_boot_cpu(bool xen_pv) {
  g_config.xen_pv = xen_pv;
  uint32_t a, b, c, d;
  cpu::cpuid(1, 0, a, b, c, d);
  const bool xsave = (c & kCpuid1EcxXsave) != 0;
  uint64_t xcr0 = xsave ? choose_xcr0() : 0;
  bool use_xsave = xcr0 != 0;
  if (!enable_this_cpu(use_xsave, xcr0) && use_xsave) {
    // Refused (Xen's policy is narrower than CPUID said): x87 and SSE, which
    // every PV vCPU has in XCR0.
    xcr0 = xfeature::X87 | xfeature::SSE;
    use_xsave = enable_this_cpu(true, xcr0);
  }
  Config& cfg = g_config;
  if (use_xsave) {
    cpu::cpuid(0xd, 1, a, b, c, d);
    cfg.method = (a & kCpuidDXsaveopt) ? Method::Xsaveopt : Method::Xsave;
    cfg.xcr0 = xcr0;
    cfg.size = area_size(xcr0);
  } else {
    cfg.method = Method::Fxsave;
    cfg.xcr0 = 0;
    cfg.size = sigframe::kLegacySize;
  }
  pvk_fpu_fxsave(g_probe);
  uint32_t mask;
  memcpy(&mask, g_probe + sigframe::kMxcsrMaskOffset, 4);
  cfg.mxcsr_mask = mask ? mask : 0xffbf;  // 0: the CPU predates the field (SDM)
  write_init_image(g_init_image);
}

void init_secondary_cpu() {
  if (!enable_this_cpu(g_config.method != Method::Fxsave, g_config.xcr0) && g_config.method != Method::Fxsave)
    cpu::halt_forever();  // the boot CPU's features refused here: never report in
}

const Config& config() { return g_config; }

const char* method_name(Method m) {
  switch (m) {
    case Method::Xsaveopt: return "xsaveopt";
    case Method::Xsave: return "xsave";
    case Method::Fxsave: return "fxsave";
  }
  return "?";
}

sigframe::FpFormat frame_format() {
  return {g_config.method != Method::Fxsave, g_config.xcr0, g_config.size, g_config.mxcsr_mask};
}

// Under Xen PV the hypervisor switches FP state lazily: a vCPU whose state
// is not in the registers runs with CR0.TS set, and its first FP
// instruction (#NM) makes Xen load it. The XSAVE family must take that #NM
// too (the SDM says it does), but QEMU's TCG executes XSAVE, XSAVEOPT and
// XRSTOR without looking at CR0.TS — so under TCG they would save another
// domain's registers, or load ours behind Xen's back where Xen never saves
// them. One x87 no-op first, which does honour TS, takes the #NM when it
// is due; on hardware it is redundant and harmless. FXSAVE/FXRSTOR check TS
// themselves. Natively TS is never set, so nothing is done there.
static inline void claim_registers() {
  if (g_config.xen_pv && g_config.method != Method::Fxsave) asm volatile("fnop" ::: "memory");
}

void save(void* area) {
  claim_registers();
  switch (g_config.method) {
    case Method::Xsaveopt: pvk_fpu_xsaveopt(area); break;
    case Method::Xsave: pvk_fpu_xsave(area); break;
    case Method::Fxsave: pvk_fpu_fxsave(area); break;
  }
}

bool restore(const void* area) {
  const bool xsave = g_config.method != Method::Fxsave;
  claim_registers();
  if (xsave ? pvk_fpu_xrstor(area) : pvk_fpu_fxrstor(area)) return true;
  if (xsave) pvk_fpu_xrstor(g_init_image);
  else pvk_fpu_fxrstor(g_init_image);
  return false;
}

void write_init_image(void* area) {
  // XSTATE_BV = 0: XRSTOR puts every component in its init state, but
  // still loads MXCSR from the image; FXRSTOR loads all of it.
  auto* p = static_cast<uint8_t*>(area);
  memset(p, 0, g_config.size);
  const uint16_t fcw = sigframe::kFcwDefault;
  const uint32_t mxcsr = sigframe::kMxcsrDefault;
  memcpy(p, &fcw, 2);
  memcpy(p + sigframe::kMxcsrOffset, &mxcsr, 4);
}

void device_not_available() {
  if (g_config.xen_pv) xen::hypercall_uncounted(__HYPERVISOR_fpu_taskswitch, 0);
  else write_cr0(read_cr0() & ~cr0::TS);
}

}  // namespace pvk::fpu
