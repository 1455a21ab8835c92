// The MADT parser (arch/smp/madt.cpp) on synthetic ACPI tables laid out
// in a fake physical memory, and the bring-up bookkeeping (CpuCounts).
#include "host_compat.h"

#include "arch/smp/madt.h"
#include "arch/smp/percpu.h"

#include <cstring>
#include <vector>

namespace pvk::smp {
namespace {

// A small fake physical memory: tables are placed at chosen addresses.
struct FakePhys {
  static constexpr uint64_t kBase = 0xe0000;
  std::vector<uint8_t> bytes = std::vector<uint8_t>(64 * 1024, 0);

  uint8_t* at(uint64_t paddr) { return bytes.data() + (paddr - kBase); }
  static const uint8_t* map(void* ctx, uint64_t paddr, uint64_t len) {
    auto* self = static_cast<FakePhys*>(ctx);
    if (paddr < kBase || paddr - kBase > self->bytes.size() || len > self->bytes.size() - (paddr - kBase))
      return nullptr;
    return self->at(paddr);
  }
  PhysWindow window() { return PhysWindow{&FakePhys::map, this}; }
};

void put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
void fix_checksum(uint8_t* p, size_t n, size_t at) {
  p[at] = 0;
  uint8_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum = static_cast<uint8_t>(sum + p[i]);
  p[at] = static_cast<uint8_t>(-sum);
}

// An SDT: header (36 bytes) + body, checksum fixed.
void write_table(uint8_t* p, const char* sig, const std::vector<uint8_t>& body) {
  std::memset(p, 0, 36);
  std::memcpy(p, sig, 4);
  put32(p + 4, static_cast<uint32_t>(36 + body.size()));
  p[8] = 1;
  std::memcpy(p + 36, body.data(), body.size());
  fix_checksum(p, 36 + body.size(), 9);
}

std::vector<uint8_t> lapic_entry(uint8_t acpi_id, uint8_t apic_id, uint32_t flags) {
  std::vector<uint8_t> e{0, 8, acpi_id, apic_id, 0, 0, 0, 0};
  put32(e.data() + 4, flags);
  return e;
}

std::vector<uint8_t> x2apic_entry(uint32_t x2apic_id, uint32_t flags) {
  std::vector<uint8_t> e(16, 0);
  e[0] = 9;
  e[1] = 16;
  put32(e.data() + 4, x2apic_id);
  put32(e.data() + 8, flags);
  return e;
}

std::vector<uint8_t> madt_body(uint32_t lapic, const std::vector<std::vector<uint8_t>>& entries) {
  std::vector<uint8_t> b(8, 0);
  put32(b.data(), lapic);
  put32(b.data() + 4, 1);  // PCAT_COMPAT
  for (const auto& e : entries) b.insert(b.end(), e.begin(), e.end());
  return b;
}

constexpr uint64_t kRsdp = 0xe0000, kXsdt = 0xe1000, kRsdt = 0xe2000, kFacp = 0xe3000, kMadt = 0xe4000;

// RSDP revision 2 pointing at an XSDT (and an RSDT) that list a FACP-like
// table and then the MADT.
void write_acpi(FakePhys& m, const std::vector<uint8_t>& madt, uint8_t revision = 2) {
  uint8_t* r = m.at(kRsdp);
  std::memcpy(r, "RSD PTR ", 8);
  std::memcpy(r + 9, "PVKTST", 6);
  r[15] = revision;
  put32(r + 16, static_cast<uint32_t>(kRsdt));
  put32(r + 20, 36);
  put64(r + 24, kXsdt);
  fix_checksum(r, 20, 8);
  fix_checksum(r, 36, 32);
  std::vector<uint8_t> xsdt(16);
  put64(xsdt.data(), kFacp);
  put64(xsdt.data() + 8, kMadt);
  write_table(m.at(kXsdt), "XSDT", xsdt);
  std::vector<uint8_t> rsdt(8);
  put32(rsdt.data(), static_cast<uint32_t>(kFacp));
  put32(rsdt.data() + 4, static_cast<uint32_t>(kMadt));
  write_table(m.at(kRsdt), "RSDT", rsdt);
  write_table(m.at(kFacp), "FACP", std::vector<uint8_t>(80, 0));
  write_table(m.at(kMadt), "APIC", madt);
}

TEST(Madt, FindsEnabledProcessorsThroughTheXsdt) {
  FakePhys m;
  write_acpi(m, madt_body(0xfee00000, {lapic_entry(0, 0, 1), lapic_entry(1, 1, 1), lapic_entry(2, 4, 1)}));
  auto r = parse_madt_cpus(kRsdp, m.window());
  ASSERT_FALSE(r.is_error()) << errno_name(r.error());
  const MadtCpus c = r.value();
  EXPECT_EQ(c.lapic_base, 0xfee00000u);
  ASSERT_EQ(c.count, 3u);
  EXPECT_EQ(c.apic_ids[0], 0u);
  EXPECT_EQ(c.apic_ids[1], 1u);
  EXPECT_EQ(c.apic_ids[2], 4u);
  EXPECT_EQ(c.disabled, 0u);
}

TEST(Madt, ReadsTheRsdtOnAnAcpi1Rsdp) {
  FakePhys m;
  write_acpi(m, madt_body(0xfee00000, {lapic_entry(0, 0, 1), lapic_entry(1, 2, 1)}), /*revision=*/0);
  std::memset(m.at(kXsdt), 0, 36);  // an ACPI 1.0 machine has no XSDT: never read
  auto r = parse_madt_cpus(kRsdp, m.window());
  ASSERT_FALSE(r.is_error()) << errno_name(r.error());
  EXPECT_EQ(r.value().count, 2u);
  EXPECT_EQ(r.value().apic_ids[1], 2u);
}

TEST(Madt, SkipsDisabledAndHotplugEntriesAndDuplicates) {
  FakePhys m;
  write_acpi(m, madt_body(0xfee00000, {lapic_entry(0, 0, 1), lapic_entry(1, 1, 0), lapic_entry(2, 2, 2),
                                       lapic_entry(3, 0, 1), lapic_entry(4, 3, 1)}));
  auto r = parse_madt_cpus(kRsdp, m.window());
  ASSERT_FALSE(r.is_error());
  ASSERT_EQ(r.value().count, 2u);
  EXPECT_EQ(r.value().apic_ids[1], 3u);
  EXPECT_EQ(r.value().disabled, 2u);
}

TEST(Madt, TakesX2ApicEntriesAndTheAddressOverride) {
  FakePhys m;
  std::vector<uint8_t> override_entry(12, 0);
  override_entry[0] = 5;
  override_entry[1] = 12;
  put64(override_entry.data() + 4, 0xfed00000);
  write_acpi(m, madt_body(0xfee00000, {lapic_entry(0, 0, 1), x2apic_entry(300, 1), override_entry}));
  auto r = parse_madt_cpus(kRsdp, m.window());
  ASSERT_FALSE(r.is_error());
  EXPECT_EQ(r.value().lapic_base, 0xfed00000u);
  ASSERT_EQ(r.value().count, 2u);
  EXPECT_EQ(r.value().apic_ids[1], 300u);
}

TEST(Madt, CountsCpusBeyondTheMaximum) {
  FakePhys m;
  std::vector<std::vector<uint8_t>> entries;
  for (unsigned i = 0; i < kMaxCpus + 3; ++i) entries.push_back(lapic_entry(static_cast<uint8_t>(i), static_cast<uint8_t>(i), 1));
  write_acpi(m, madt_body(0xfee00000, entries));
  auto r = parse_madt_cpus(kRsdp, m.window());
  ASSERT_FALSE(r.is_error());
  EXPECT_EQ(r.value().count, kMaxCpus);
  EXPECT_EQ(r.value().beyond_max, 3u);
}

TEST(Madt, RefusesBadSignaturesChecksumsAndLengths) {
  {
    FakePhys m;
    write_acpi(m, madt_body(0xfee00000, {lapic_entry(0, 0, 1)}));
    m.at(kRsdp)[0] = 'X';
    EXPECT_EQ(parse_madt_cpus(kRsdp, m.window()).error(), Errno::EINVAL);
  }
  {
    FakePhys m;
    write_acpi(m, madt_body(0xfee00000, {lapic_entry(0, 0, 1)}));
    m.at(kMadt)[40] ^= 1;  // a flag bit: the checksum no longer holds
    EXPECT_EQ(parse_madt_cpus(kRsdp, m.window()).error(), Errno::EINVAL);
  }
  {
    // An entry whose length runs past the table.
    FakePhys m;
    auto body = madt_body(0xfee00000, {lapic_entry(0, 0, 1)});
    body[8 + 1] = 40;
    write_acpi(m, body);
    EXPECT_EQ(parse_madt_cpus(kRsdp, m.window()).error(), Errno::EINVAL);
  }
  {
    // A zero-length entry would never advance.
    FakePhys m;
    auto body = madt_body(0xfee00000, {lapic_entry(0, 0, 1)});
    body[8 + 1] = 0;
    write_acpi(m, body);
    EXPECT_EQ(parse_madt_cpus(kRsdp, m.window()).error(), Errno::EINVAL);
  }
  {
    // A table length beyond what the window reaches: EFAULT, nothing read past.
    FakePhys m;
    write_acpi(m, madt_body(0xfee00000, {lapic_entry(0, 0, 1)}));
    put32(m.at(kMadt) + 4, 0x80000);
    EXPECT_NE(parse_madt_cpus(kRsdp, m.window()).error(), Errno::Ok);
  }
}

TEST(Madt, NoMadtIsEnoent) {
  FakePhys m;
  write_acpi(m, madt_body(0xfee00000, {lapic_entry(0, 0, 1)}));
  std::memcpy(m.at(kMadt), "SSDT", 4);
  fix_checksum(m.at(kMadt), 36 + 16, 9);
  EXPECT_EQ(parse_madt_cpus(kRsdp, m.window()).error(), Errno::ENOENT);
}

TEST(Madt, RsdpOutsideTheWindowIsEfault) {
  FakePhys m;
  EXPECT_EQ(parse_madt_cpus(0x1000, m.window()).error(), Errno::EFAULT);
}

TEST(CpuCounts, BootCpuIsOnlineAndEachCpuCountsOnce) {
  CpuCounts c;
  EXPECT_EQ(c.found(), 1u);
  EXPECT_EQ(c.online(), 1u);
  c.set_found(4);
  EXPECT_TRUE(c.mark_online(1));
  EXPECT_FALSE(c.mark_online(1));
  EXPECT_TRUE(c.mark_online(3));
  EXPECT_EQ(c.online(), 3u);
  EXPECT_FALSE(c.mark_online(4));  // not found
  EXPECT_FALSE(c.mark_online(kMaxCpus));
  EXPECT_FALSE(c.mark_online(0));  // the boot CPU already is
  EXPECT_EQ(c.online(), 3u);
}

TEST(PerCpuTable, EntriesAreDistinct) {
  EXPECT_NE(&cpu(0), &cpu(1));
  EXPECT_NE(&cpu(1), &cpu(kMaxCpus - 1));
}

}  // namespace
}  // namespace pvk::smp
