// The kernel images themselves: pvk.elf's table of pvops call sites
// (.pvop_sites, pvops/call/pvop_site.h) is well formed and complete, and
// pvk-builtin.elf (the compiled-in native baseline) has no pvops table and
// refuses what it cannot do in one line.
#include "../host/host_compat.h"  // first: the kernel headers below spell Errno like <errno.h>

#include "boot_support.hpp"

#include <elf.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "pvops/mmu_ops.h"
#include "pvops/call/pvop_site.h"
#include "pvops/call/site_code.h"

namespace pvk::boot_test {
namespace {

// The parts of an ELF64 image these tests read.
class ElfImage {
 public:
  explicit ElfImage(const char* path) {
    std::ifstream in(path, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), {});
    if (bytes_.size() < sizeof(Elf64_Ehdr)) return;
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(bytes_.data());
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(bytes_.data() + eh->e_shoff);
    const char* names = reinterpret_cast<const char*>(bytes_.data() + sh[eh->e_shstrndx].sh_offset);
    for (unsigned i = 0; i < eh->e_shnum; ++i) sections_[names + sh[i].sh_name] = sh[i];
    if (const Elf64_Shdr* symtab = section(".symtab"); symtab) {
      const Elf64_Shdr& strtab = sh[symtab->sh_link];
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(bytes_.data() + symtab->sh_offset);
      for (size_t i = 0; i < symtab->sh_size / sizeof(Elf64_Sym); ++i)
        symbols_[reinterpret_cast<const char*>(bytes_.data() + strtab.sh_offset + syms[i].st_name)] = syms[i];
    }
  }
  bool loaded() const { return !sections_.empty(); }
  const Elf64_Shdr* section(const std::string& name) const {
    auto it = sections_.find(name);
    return it == sections_.end() ? nullptr : &it->second;
  }
  const Elf64_Sym* symbol(const std::string& name) const {
    auto it = symbols_.find(name);
    return it == symbols_.end() ? nullptr : &it->second;
  }
  // The file bytes at a virtual address inside section s.
  const uint8_t* at(const Elf64_Shdr& s, uint64_t va) const { return bytes_.data() + s.sh_offset + (va - s.sh_addr); }
  bool holds(const Elf64_Shdr& s, uint64_t va, uint64_t n) const { return va >= s.sh_addr && va + n <= s.sh_addr + s.sh_size; }

 private:
  std::vector<uint8_t> bytes_;
  std::map<std::string, Elf64_Shdr> sections_;
  std::map<std::string, Elf64_Sym> symbols_;
};

constexpr const char* kGmmu = "_ZN3pvk5g_mmuE";

struct Site {
  uint64_t address;
  uint16_t slot;  // the verb's (a flag-bits site: flag_bits)
  uint8_t length;
  bool flag_bits;
  bool loads;  // a flag-bits load site
  bool native_body;  // a jump over the native backend's body to the verb's ordinary site
  bool copy_switch;  // a jump from a function's native copy to its generic one; slot: the VerbGroup
  bool flags_encoding;  // native body: pte=flags's; copy switch: an encoding switch (slot: a g_mmu slot)
};

std::vector<Site> sites_of(const ElfImage& elf) {
  std::vector<Site> out;
  const Elf64_Shdr* s = elf.section(".pvop_sites");
  if (!s) return out;
  for (uint64_t off = 0; off + sizeof(PvopSite) <= s->sh_size; off += sizeof(PvopSite)) {
    PvopSite rec;
    memcpy(&rec, elf.at(*s, s->sh_addr + off), sizeof rec);
    out.push_back({s->sh_addr + off + static_cast<int64_t>(rec.at), static_cast<uint16_t>(rec.verb()), rec.length,
                   rec.flag_bits(), rec.loads(), rec.native_body(), rec.copy_switch(), rec.flags_encoding()});
  }
  return out;
}

// Every indirect call or jump through g_mmu in the disassembly, with the
// function it sits in.
std::vector<std::pair<uint64_t, std::string>> calls_through_gmmu(const char* path) {
  std::vector<std::pair<uint64_t, std::string>> out;
  const std::string cmd = std::string("objdump -d --no-show-raw-insn ") + path;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return out;
  static const std::regex function(R"(^[0-9a-f]+ <(.*)>:$)");
  static const std::regex call(R"(^\s*([0-9a-f]+):\s+(call|jmp)\s+\*.*<_ZN3pvk5g_mmuE(\+0x[0-9a-f]+)?>)");
  std::string current;
  char line[4096];
  std::smatch m;
  while (fgets(line, sizeof line, p.get())) {
    std::string l(line);
    if (!l.empty() && l.back() == '\n') l.pop_back();
    if (std::regex_match(l, m, function)) current = m[1];
    else if (std::regex_search(l, m, call)) out.push_back({std::stoull(m[1], nullptr, 16), current});
  }
  return out;
}

std::string light_thunk(uint16_t slot) {
  if (slot == offsetof(MmuOps, pte_flags)) return "pvk_pvop_thunk_pte_flags";
  if (slot == offsetof(MmuOps, pte_val)) return "pvk_pvop_thunk_pte_val";
  if (slot == offsetof(MmuOps, pte_pfn)) return "pvk_pvop_thunk_pte_pfn";
  return "";
}

class ImageSites : public ::testing::TestWithParam<Platform> {};

TEST_P(ImageSites, EveryRecordIsAnIndirectCallThroughItsSlot) {
  ElfImage elf(PVK_KERNEL_PATH);
  ASSERT_TRUE(elf.loaded());
  const Elf64_Shdr* text = elf.section(".text");
  const Elf64_Sym* g_mmu = elf.symbol(kGmmu);
  ASSERT_TRUE(text && g_mmu);
  EXPECT_EQ(g_mmu->st_size, sizeof(MmuOps));
  const auto sites = sites_of(elf);
  ASSERT_GE(sites.size(), 100u) << "the kernel makes far more pvops calls than that";
  std::set<uint64_t> seen;
  std::map<uint16_t, unsigned> per_slot;
  std::vector<std::pair<uint64_t, uint16_t>> jumps;  // native-body sites: where they jump, their verb
  unsigned copy_switches = 0, encoding_switches = 0, flags_bodies = 0;
  for (const Site& s : sites) {
    SCOPED_TRACE(::testing::Message() << std::hex << "site 0x" << s.address << " slot 0x" << s.slot);
    EXPECT_TRUE(seen.insert(s.address).second) << "recorded twice";
    if (s.copy_switch) {
      // A 5-byte jump to the generic copy, for a verb group that exists; an
      // encoding switch's to a function's pte=flags copy, named by the verb
      // whose native pte=flags body that copy inlines.
      if (s.flags_encoding) {
        EXPECT_TRUE(pvop_detail::native_first(s.slot));
        ++encoding_switches;
      } else {
        EXPECT_TRUE(valid_group(s.slot));
        ++copy_switches;
      }
      EXPECT_FALSE(s.flag_bits || s.loads || s.native_body);
      EXPECT_EQ(s.length, site_code::kJumpLength);
      ASSERT_TRUE(elf.holds(*text, s.address, s.length)) << "outside .text";
      EXPECT_EQ(site_code::decode(elf.at(*text, s.address), s.length, s.address).form, site_code::Form::Jump);
      continue;
    }
    EXPECT_EQ(s.slot % 8, 0u);
    EXPECT_LT(s.slot, sizeof(MmuOps));
    EXPECT_NE(s.slot, offsetof(MmuOps, name));
    // Room for the inline form where a verb may take one, a bare call elsewhere;
    // a flag-bits site is pte_flags' and holds its 5-byte call.
    if (s.native_body) {
      // A 5-byte jump, forward or back, to an ordinary site of the same verb
      // in the same function (checked below, once every site is known).
      EXPECT_TRUE(pvop_detail::native_first(s.slot));
      EXPECT_FALSE(s.flag_bits || s.loads);
      EXPECT_EQ(s.length, site_code::kJumpLength);
      ASSERT_TRUE(elf.holds(*text, s.address, s.length)) << "outside .text";
      const auto d = site_code::decode(elf.at(*text, s.address), s.length, s.address);
      EXPECT_EQ(d.form, site_code::Form::Jump);
      jumps.push_back({d.target, s.slot});
      flags_bodies += s.flags_encoding;
      ++per_slot[s.slot];
      continue;
    }
    if (s.flag_bits) {
      EXPECT_EQ(s.slot, offsetof(MmuOps, pte_flags));
    }
    if (s.loads) {
      EXPECT_TRUE(s.flag_bits);
    }
    EXPECT_EQ(s.length, s.loads               ? site_code::kLoadCallLength
                        : s.flag_bits         ? kFlagBitsRoom
                        : may_inline(s.slot) ? kInlineRoom
                                             : site_code::kIndirectCallLength);
    ASSERT_TRUE(elf.holds(*text, s.address, s.length)) << "outside .text";
    const auto d = site_code::decode(elf.at(*text, s.address), s.length, s.address);
    if (s.loads) {
      // A flag-bits load site loads the entry and calls the thunk taking it in rax.
      const Elf64_Sym* thunk = elf.symbol("pvk_pvop_thunk_pte_flags_at");
      ASSERT_TRUE(thunk);
      EXPECT_EQ(d.form, site_code::Form::LoadCall);
      EXPECT_EQ(d.target, thunk->st_value);
    } else if (pvop_detail::is_light(s.slot)) {
      // A light verb's site calls its register-saving thunk.
      const Elf64_Sym* thunk = elf.symbol(light_thunk(s.slot));
      ASSERT_TRUE(thunk) << light_thunk(s.slot);
      EXPECT_EQ(d.form, site_code::Form::DirectCall);
      EXPECT_EQ(d.target, thunk->st_value) << "calls another thunk than its slot's";
    } else {
      EXPECT_EQ(d.form, site_code::Form::IndirectCall);
      EXPECT_EQ(d.target, g_mmu->st_value + s.slot) << "calls another slot than recorded";
    }
    ++per_slot[s.slot];
  }
  // A native-body site's jump lands on the verb's ordinary site (the
  // compiler may put moves of the arguments before it: up to 64 bytes).
  ASSERT_GT(jumps.size(), 0u) << "no native-body site";
  EXPECT_GT(copy_switches, 0u) << "no copy switch: the lazy-MMU section is compiled twice";
  EXPECT_GT(encoding_switches, 0u) << "no encoding switch: mprotect is compiled once per encoding";
  EXPECT_GT(flags_bodies, 0u) << "no pte=flags native body: mprotect's pte=flags copy inlines one";
  for (const auto& [target, slot] : jumps) {
    bool found = false;
    for (const Site& s : sites)
      found |= !s.native_body && !s.copy_switch && s.slot == slot && s.address >= target && s.address - target <= 64;
    EXPECT_TRUE(found) << std::hex << "the jump to 0x" << target << " reaches no site of slot 0x" << slot;
  }
  // The hot verbs are there: flag reads (pte=flags walks), range operations,
  // the lazy-MMU verbs and single-entry stores.
  for (size_t slot : {offsetof(MmuOps, pte_flags), offsetof(MmuOps, range.protect), offsetof(MmuOps, range.map),
                      offsetof(MmuOps, enter_lazy_mmu), offsetof(MmuOps, leave_lazy_mmu), offsetof(MmuOps, set_pte),
                      offsetof(MmuOps, pte_pfn), offsetof(MmuOps, make_pte)})
    EXPECT_GT(per_slot[slot], 0u) << "no site of the verb at slot " << slot;
}

TEST_P(ImageSites, NoCallThroughTheTableEscapesTheRecord) {
  ElfImage elf(PVK_KERNEL_PATH);
  ASSERT_TRUE(elf.loaded());
  std::set<uint64_t> recorded;
  size_t through_table = 0;  // the sites of light verbs call their thunk instead
  for (const Site& s : sites_of(elf)) {
    recorded.insert(s.address);
    through_table += !pvop_detail::is_light(s.slot) && !s.native_body && !s.copy_switch;
  }
  const auto calls = calls_through_gmmu(PVK_KERNEL_PATH);
  ASSERT_GE(calls.size(), through_table) << "objdump found fewer calls than there are sites";
  for (const auto& [address, function] : calls) {
    // The patcher's own check of a backend's verbs calls them directly, and
    // the light verbs' thunks call through the table for their sites.
    if (function.find("verb_matches") != std::string::npos || function.starts_with("pvk_pvop_thunk_")) continue;
    EXPECT_TRUE(recorded.count(address)) << std::hex << "0x" << address << " in " << function
                                         << " calls through g_mmu without a site record (use PVOP)";
  }
}

TEST_P(ImageSites, TheBuiltinImageHasNoTable) {
  ElfImage elf(PVK_BUILTIN_KERNEL_PATH);
  ASSERT_TRUE(elf.loaded());
  EXPECT_EQ(elf.symbol(kGmmu), nullptr) << "pvk-builtin.elf defines g_mmu";
  EXPECT_TRUE(sites_of(elf).empty()) << "pvk-builtin.elf records pvops sites";
  EXPECT_TRUE(calls_through_gmmu(PVK_BUILTIN_KERNEL_PATH).empty());
}

INSTANTIATE_TEST_SUITE_P(Native, ImageSites, ::testing::Values(Platform::native));

// The compiled-in image boots natively only, with pte=attrs; anything else
// is one clear line and a failing status.
class BuiltinImage : public ::testing::TestWithParam<Platform> {};

TEST_P(BuiltinImage, RefusesWhatItCannotRun) {
  const Platform platform = GetParam();
  const std::string params = platform == Platform::xen ? "selftest=mm" : "mmu=native pte=flags selftest=mm";
  const RunResult r = boot(platform, params, Image::builtin);
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  const char* expected = platform == Platform::xen ? "cannot run as a xen pv guest" : "pte=flags";
  EXPECT_TRUE(any_text_line(r, [&](std::string_view l) {
    return contains(lower(l), "compiled-in native image") && contains(lower(l), expected);
  })) << transcript(r);
}

INSTANTIATE_TEST_SUITE_P(Native, BuiltinImage, ::testing::Values(Platform::native));
INSTANTIATE_TEST_SUITE_P(Xen, BuiltinImage, ::testing::Values(Platform::xen));

}  // namespace
}  // namespace pvk::boot_test
