#include "arch/smp/madt.h"

#include "base/lib/kstring.h"

namespace pvk::smp {
namespace {

// ACPI 6.x, 5.2.5.3 (RSDP), 5.2.6 (table header), 5.2.12 (MADT).
constexpr uint64_t kRsdpV1Length = 20;
constexpr uint64_t kRsdpV2Length = 36;
constexpr uint64_t kHeaderLength = 36;
constexpr uint64_t kMadtFixedLength = kHeaderLength + 8;  // LAPIC address, flags
constexpr uint32_t kMaxTableLength = 1u << 20;  // larger than any real MADT/XSDT: refuse, not read
constexpr uint8_t kLocalApic = 0, kLapicOverride = 5, kLocalX2Apic = 9;
constexpr uint32_t kEnabled = 1;

uint32_t le32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t{p[3]} << 24); }
uint64_t le64(const uint8_t* p) { return le32(p) | (uint64_t{le32(p + 4)} << 32); }

bool checksum_ok(const uint8_t* p, uint64_t n) {
  uint8_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum = static_cast<uint8_t>(sum + p[i]);
  return sum == 0;
}

// Maps a whole table after checking its header: signature (when asked),
// a length that holds the header, and the checksum over that length.
ErrorOr<const uint8_t*> map_table(const PhysWindow& mem, uint64_t paddr, const char* signature) {
  const uint8_t* h = mem.map(mem.ctx, paddr, kHeaderLength);
  if (!h) return Errno::EFAULT;
  if (signature && memcmp(h, signature, 4) != 0) return Errno::EINVAL;
  const uint32_t length = le32(h + 4);
  if (length < kHeaderLength || length > kMaxTableLength) return Errno::EINVAL;
  const uint8_t* t = mem.map(mem.ctx, paddr, length);
  if (!t) return Errno::EFAULT;
  if (!checksum_ok(t, length)) return Errno::EINVAL;
  return t;
}

void add_cpu(MadtCpus& out, uint32_t apic_id, uint32_t flags) {
  // Not enabled: absent, or (online-capable) hot-pluggable but not there at
  // boot; either way nothing to start.
  if (!(flags & kEnabled)) {
    ++out.disabled;
    return;
  }
  for (unsigned i = 0; i < out.count; ++i)
    if (out.apic_ids[i] == apic_id) return;  // a firmware listing one CPU twice
  if (out.count == kMaxCpus) {
    ++out.beyond_max;
    return;
  }
  out.apic_ids[out.count++] = apic_id;
}

ErrorOr<MadtCpus> parse_madt(const uint8_t* t) {
  const uint32_t length = le32(t + 4);
  if (length < kMadtFixedLength) return Errno::EINVAL;
  MadtCpus out;
  out.lapic_base = le32(t + kHeaderLength);
  for (uint64_t off = kMadtFixedLength; off < length;) {
    if (length - off < 2) return Errno::EINVAL;
    const uint8_t type = t[off], len = t[off + 1];
    if (len < 2 || len > length - off) return Errno::EINVAL;
    const uint8_t* e = t + off;
    if (type == kLocalApic) {
      if (len < 8) return Errno::EINVAL;
      add_cpu(out, e[3], le32(e + 4));
    } else if (type == kLocalX2Apic) {
      if (len < 16) return Errno::EINVAL;
      add_cpu(out, le32(e + 4), le32(e + 8));
    } else if (type == kLapicOverride) {
      if (len < 12) return Errno::EINVAL;
      out.lapic_base = le64(e + 4);
    }
    off += len;
  }
  return out;
}

}  // namespace

ErrorOr<MadtCpus> parse_madt_cpus(uint64_t rsdp_paddr, const PhysWindow& mem) {
  const uint8_t* rsdp = mem.map(mem.ctx, rsdp_paddr, kRsdpV1Length);
  if (!rsdp) return Errno::EFAULT;
  if (memcmp(rsdp, "RSD PTR ", 8) != 0 || !checksum_ok(rsdp, kRsdpV1Length)) return Errno::EINVAL;
  const uint8_t revision = rsdp[15];
  uint64_t root = le32(rsdp + 16);
  unsigned entry_size = 4;
  const char* root_signature = "RSDT";
  // ACPI 2.0+: prefer the XSDT (64-bit entries) when the extended checksum holds.
  if (revision >= 2) {
    const uint8_t* v2 = mem.map(mem.ctx, rsdp_paddr, kRsdpV2Length);
    if (!v2) return Errno::EFAULT;
    const uint32_t v2_length = le32(v2 + 20);
    if (v2_length >= kRsdpV2Length && v2_length <= 4096) {
      const uint8_t* full = mem.map(mem.ctx, rsdp_paddr, v2_length);
      if (full && checksum_ok(full, v2_length) && le64(v2 + 24)) {
        root = le64(v2 + 24);
        entry_size = 8;
        root_signature = "XSDT";
      }
    }
  }
  const uint8_t* rt = TRY(map_table(mem, root, root_signature));
  const uint32_t rt_length = le32(rt + 4);
  for (uint64_t off = kHeaderLength; off + entry_size <= rt_length; off += entry_size) {
    const uint64_t paddr = entry_size == 8 ? le64(rt + off) : le32(rt + off);
    const uint8_t* h = mem.map(mem.ctx, paddr, kHeaderLength);
    if (!h) return Errno::EFAULT;
    if (memcmp(h, "APIC", 4) != 0) continue;
    const uint8_t* madt = TRY(map_table(mem, paddr, "APIC"));
    return parse_madt(madt);
  }
  return Errno::ENOENT;
}

}  // namespace pvk::smp
