// The boot parameter parser (kernel/params/boot_params.{h,cpp}).
#include "host_compat.h"  // first: see there

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string.h>

#include <functional>
#include <string>
#include <vector>

#include "kernel/params/boot_params.h"

namespace pvk {
namespace {

using testing::AllOf;
using testing::HasSubstr;
using testing::Not;

struct Parsed {
  ErrorOr<void, ParamError> result;
  BootParams params;
  const char* error() const { return result.error().message; }  // "" when accepted
};

Parsed parse(const char* cmdline, const BootParams& start = {}) {
  Parsed p{{}, start};
  p.result = parse_boot_params(cmdline, p.params);
  return p;
}

// Field-by-field equality (BootParams has no operator==).
std::string diff(const BootParams& a, const BootParams& b) {
  std::string d;
  if (a.mmu != b.mmu) d += " mmu";
  if (a.pte != b.pte) d += " pte";
  if (a.pvpatch != b.pvpatch) d += " pvpatch";
  if (a.batch != b.batch) d += " batch";
  if (a.zero_page != b.zero_page) d += " zero_page";
  if (a.pgd_cache != b.pgd_cache) d += " pgd_cache";
  if (a.ptshare != b.ptshare) d += " ptshare";
  if (a.file_map != b.file_map) d += " file_map";
  if (a.fault_around != b.fault_around) d += " fault_around";
  if (a.sched_cpus != b.sched_cpus) d += " sched_cpus";
  if (a.shootdown != b.shootdown) d += " shootdown";
  if (strcmp(a.selftest, b.selftest)) d += " selftest";
  if (strcmp(a.bench, b.bench)) d += " bench";
  if (strcmp(a.init, b.init)) d += " init";
  for (size_t k = 0; k < size_t(FailKind::Count); ++k)
    if (a.fail[k].num != b.fail[k].num || a.fail[k].den != b.fail[k].den) d += std::string(" fail.") + fail_kind_name(FailKind(k));
  if (a.fail_seed != b.fail_seed) d += " fail_seed";
  return d;
}

void expect_ok(const Parsed& p) {
  EXPECT_FALSE(p.result.is_error()) << p.error();
  EXPECT_STREQ(p.error(), "");
}

// An error is one NUL-terminated line inside its buffer.
void expect_error(const Parsed& p) {
  EXPECT_TRUE(p.result.is_error());
  const size_t len = strnlen(p.error(), sizeof ParamError::message);
  ASSERT_LT(len, sizeof ParamError::message) << "error not NUL-terminated";
  EXPECT_GT(len, 0u) << "empty error message";
  EXPECT_EQ(strchr(p.error(), '\n'), nullptr) << "error spans lines: " << p.error();
  EXPECT_THAT(p.error(), testing::StartsWith("pvk: "));
}

TEST(BootParams, DefaultsWithAnEmptyCommandLine) {
  for (const char* empty : {"", " ", "  \t\n ", static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(empty ? empty : "(null)");
    const Parsed p = parse(empty);
    expect_ok(p);
    EXPECT_EQ(diff(p.params, BootParams{}), "");
  }
  // The documented defaults.
  const BootParams d;
  EXPECT_EQ(d.mmu, MmuBackend::Default) << "the platform decides (native or batched)";
  EXPECT_EQ(d.pte, PteAccess::Attrs);
  EXPECT_EQ(d.pvpatch, Switch::On);
  EXPECT_EQ(d.sched_cpus, SchedCpus::Default) << "the platform decides (all natively, the boot vCPU under Xen)";
  EXPECT_EQ(d.batch, 32u) << "Linux's multicall batch";
  EXPECT_EQ(d.zero_page, Switch::On);
  EXPECT_EQ(d.pgd_cache, Switch::On);
  EXPECT_EQ(d.shootdown, Shootdown::Default) << "the platform decides (hypercall under Xen, IPIs natively)";
  EXPECT_STREQ(d.selftest, "");
  EXPECT_STREQ(d.bench, "");
  EXPECT_STREQ(d.init, "");
  for (const FailRate& f : d.fail) EXPECT_EQ(f.den, 0u) << "no fault injection unless asked";
  EXPECT_EQ(d.fail_seed, 1u);
}

struct ChoiceCase {
  const char* key;
  const char* word;
  std::function<uint8_t&(BootParams&)> field;
  uint8_t expected;
  uint8_t other;  // a different value to start from
};

std::vector<ChoiceCase> choice_cases() {
  auto mmu = [](BootParams& b) -> uint8_t& { return reinterpret_cast<uint8_t&>(b.mmu); };
  auto pte = [](BootParams& b) -> uint8_t& { return reinterpret_cast<uint8_t&>(b.pte); };
  auto pvpatch = [](BootParams& b) -> uint8_t& { return reinterpret_cast<uint8_t&>(b.pvpatch); };
  auto zero_page = [](BootParams& b) -> uint8_t& { return reinterpret_cast<uint8_t&>(b.zero_page); };
  auto pgd_cache = [](BootParams& b) -> uint8_t& { return reinterpret_cast<uint8_t&>(b.pgd_cache); };
  auto sched_cpus = [](BootParams& b) -> uint8_t& { return reinterpret_cast<uint8_t&>(b.sched_cpus); };
  auto file_map = [](BootParams& b) -> uint8_t& { return reinterpret_cast<uint8_t&>(b.file_map); };
  auto shootdown = [](BootParams& b) -> uint8_t& { return reinterpret_cast<uint8_t&>(b.shootdown); };
  const uint8_t on = uint8_t(Switch::On), off = uint8_t(Switch::Off);
  return {
      {"mmu", "native", mmu, uint8_t(MmuBackend::Native), uint8_t(MmuBackend::Default)},
      {"mmu", "batched", mmu, uint8_t(MmuBackend::Batched), uint8_t(MmuBackend::Default)},
      {"mmu", "direct", mmu, uint8_t(MmuBackend::Direct), uint8_t(MmuBackend::Default)},
      {"mmu", "wrpt", mmu, uint8_t(MmuBackend::Wrpt), uint8_t(MmuBackend::Default)},
      {"pte", "attrs", pte, uint8_t(PteAccess::Attrs), uint8_t(PteAccess::Flags)},
      {"pte", "flags", pte, uint8_t(PteAccess::Flags), uint8_t(PteAccess::Attrs)},
      {"pvpatch", "on", pvpatch, on, off},
      {"pvpatch", "off", pvpatch, off, on},
      {"zero_page", "on", zero_page, on, off},
      {"zero_page", "off", zero_page, off, on},
      {"pgd_cache", "on", pgd_cache, on, off},
      {"pgd_cache", "off", pgd_cache, off, on},
      {"file_map", "eager", file_map, uint8_t(FileMap::Eager), uint8_t(FileMap::Demand)},
      {"file_map", "demand", file_map, uint8_t(FileMap::Demand), uint8_t(FileMap::Eager)},
      {"sched_cpus", "all", sched_cpus, uint8_t(SchedCpus::All), uint8_t(SchedCpus::Default)},
      {"sched_cpus", "boot", sched_cpus, uint8_t(SchedCpus::Boot), uint8_t(SchedCpus::All)},
      {"shootdown", "hypercall", shootdown, uint8_t(Shootdown::Hypercall), uint8_t(Shootdown::Ipi)},
      {"shootdown", "ipi", shootdown, uint8_t(Shootdown::Ipi), uint8_t(Shootdown::Default)},
  };
}

TEST(BootParams, EveryChoiceSetsItsFieldAndNothingElse) {
  for (const ChoiceCase& c : choice_cases()) {
    const std::string line = std::string(c.key) + "=" + c.word;
    SCOPED_TRACE(line);
    BootParams start;
    c.field(start) = c.other;
    Parsed p = parse(line.c_str(), start);
    expect_ok(p);
    EXPECT_EQ(c.field(p.params), c.expected);
    BootParams expected = start;
    c.field(expected) = c.expected;
    EXPECT_EQ(diff(p.params, expected), "");
  }
}

TEST(BootParams, BadChoiceListsTheAcceptedValues) {
  struct Case {
    const char* line;
    const char* key;
    const char* value;
    const char* accepted;
  } cases[] = {
      {"mmu=xen", "mmu", "xen", "native|batched|direct|wrpt|unhook|auto"},
      {"mmu=Native", "mmu", "Native", "native|batched|direct|wrpt|unhook|auto"},
      {"mmu=native=1", "mmu", "native=1", "native|batched|direct|wrpt|unhook|auto"},
      {"pte=flag", "pte", "flag", "attrs|flags"},
      {"pvpatch=yes", "pvpatch", "yes", "on|off"},
      {"zero_page=1", "zero_page", "1", "on|off"},
      {"pgd_cache=onn", "pgd_cache", "onn", "on|off"},
      {"sched_cpus=2", "sched_cpus", "2", "all|boot"},
      {"shootdown=IPI", "shootdown", "IPI", "hypercall|ipi"},
      {"shootdown=hypercalls", "shootdown", "hypercalls", "hypercall|ipi"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    const Parsed p = parse(c.line);
    expect_error(p);
    EXPECT_THAT(p.error(), AllOf(HasSubstr(std::string("'") + c.key + "'"),
                                      HasSubstr(std::string("'") + c.value + "'"), HasSubstr(c.accepted)));
    EXPECT_EQ(diff(p.params, BootParams{}), "") << "nothing set on error";
  }
}

TEST(BootParams, EmptyValueIsRejected) {
  for (const char* line : {"mmu=", "pte=", "batch=", "init=", "selftest=", "bench="}) {
    SCOPED_TRACE(line);
    const Parsed p = parse(line);
    expect_error(p);
    const std::string key(line, strlen(line) - 1);
    EXPECT_THAT(p.error(), AllOf(HasSubstr("'" + key + "'"), HasSubstr("''"), HasSubstr("accepted")));
  }
}

TEST(BootParams, MissingEquals) {
  for (const char* key : {"mmu", "batch", "init", "zero_page"}) {
    SCOPED_TRACE(key);
    const Parsed p = parse(key);
    expect_error(p);
    EXPECT_THAT(p.error(), AllOf(HasSubstr(std::string("'") + key + "'"), HasSubstr("needs a value")));
  }
}

TEST(BootParams, UnknownKeyIsNamed) {
  for (const char* line : {"foo=bar", "quiet", "mm=native", "mmux=native", "MMU=native", "=native", "batch_size=4"}) {
    SCOPED_TRACE(line);
    const Parsed p = parse(line);
    expect_error(p);
    const char* eq = strchr(line, '=');
    const std::string key = eq ? std::string(line, eq - line) : line;
    EXPECT_THAT(p.error(), AllOf(HasSubstr("unknown"), HasSubstr("'" + key + "'")));
  }
  // Named even after valid ones.
  const Parsed p = parse("mmu=native  console=hvc0 pte=flags");
  expect_error(p);
  EXPECT_THAT(p.error(), HasSubstr("'console'"));
}

TEST(BootParams, RepeatedKeyIsAnError) {
  for (const char* line : {"mmu=native mmu=batched", "batch=4 batch=4", "pte=flags zero_page=on pte=flags",
                           "init=a init=b"}) {
    SCOPED_TRACE(line);
    const Parsed p = parse(line);
    expect_error(p);
    const std::string key(line, strchr(line, '=') - line);
    EXPECT_THAT(p.error(), AllOf(HasSubstr("'" + key + "'"), HasSubstr("twice")));
  }
}

TEST(BootParams, BatchAcceptsItsRange) {
  for (uint32_t n : {1u, 2u, 32u, 511u, kMaxBatch}) {
    const std::string line = "batch=" + std::to_string(n);
    SCOPED_TRACE(line);
    const Parsed p = parse(line.c_str());
    expect_ok(p);
    EXPECT_EQ(p.params.batch, n);
  }
  const Parsed p = parse("batch=0000000007");  // leading zeros, ten digits
  expect_ok(p);
  EXPECT_EQ(p.params.batch, 7u);
}

TEST(BootParams, BatchOutOfRangeOrMalformed) {
  const std::string range = "1.." + std::to_string(kMaxBatch);
  const std::string too_big = std::to_string(kMaxBatch + 1);
  for (const std::string& v : {std::string("0"), too_big, std::string("12x"), std::string("99999999999"),
                               std::string("4294967297"), std::string("-1"), std::string("+5"), std::string("0x10"),
                               std::string("1.5"), std::string("x")}) {
    const std::string line = "batch=" + v;
    SCOPED_TRACE(line);
    const Parsed p = parse(line.c_str());
    expect_error(p);
    EXPECT_THAT(p.error(), AllOf(HasSubstr("'batch'"), HasSubstr("'" + v + "'"), HasSubstr(range)));
    EXPECT_EQ(p.params.batch, BootParams{}.batch) << "unchanged";
  }
}

TEST(BootParams, FaultAroundIsAPowerOfTwoUpToATable) {
  for (uint32_t n : {1u, 2u, 16u, 64u, 512u}) {
    const std::string line = "file_map=demand fault_around=" + std::to_string(n);
    SCOPED_TRACE(line);
    const Parsed p = parse(line.c_str());
    expect_ok(p);
    EXPECT_EQ(p.params.fault_around, n);
    EXPECT_EQ(p.params.file_map, FileMap::Demand);
  }
  EXPECT_EQ(BootParams{}.fault_around, 16u) << "Linux's default window";
  EXPECT_EQ(BootParams{}.file_map, FileMap::Eager);
  for (const char* v : {"0", "3", "24", "513", "1024", "x"}) {
    const std::string line = std::string("fault_around=") + v;
    SCOPED_TRACE(line);
    const Parsed p = parse(line.c_str());
    expect_error(p);
    EXPECT_THAT(p.error(), HasSubstr("fault_around"));
  }
}

TEST(BootParams, TextValues) {
  Parsed p = parse("selftest=mm,fault bench=fork_dirty:pages=1280,lat_pipe");
  expect_ok(p);
  EXPECT_STREQ(p.params.selftest, "mm,fault");
  EXPECT_STREQ(p.params.bench, "fork_dirty:pages=1280,lat_pipe") << "'=' inside a value belongs to the value";
  p = parse("selftest=mm init=hello");
  expect_ok(p);
  EXPECT_STREQ(p.params.init, "hello");
}

TEST(BootParams, TextUpToItsBufferAndNoLonger) {
  struct Case {
    const char* key;
    size_t size;
    char* (*field)(BootParams&);
  } cases[] = {
      {"selftest", sizeof BootParams::selftest, [](BootParams& b) { return b.selftest; }},
      {"bench", sizeof BootParams::bench, [](BootParams& b) { return b.bench; }},
      {"init", sizeof BootParams::init, [](BootParams& b) { return b.init; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    const std::string longest(c.size - 1, 'a');
    Parsed p = parse((std::string(c.key) + "=" + longest).c_str());
    expect_ok(p);
    EXPECT_EQ(std::string(c.field(p.params)), longest);

    const std::string too_long(c.size, 'b');
    p = parse((std::string(c.key) + "=" + too_long).c_str());
    expect_error(p);
    EXPECT_THAT(p.error(), AllOf(HasSubstr(std::string("'") + c.key + "'"),
                                      HasSubstr("1.." + std::to_string(c.size - 1) + " characters"),
                                      HasSubstr("too long")));
    EXPECT_STREQ(c.field(p.params), "") << "nothing copied";
  }
}

TEST(BootParams, WhitespaceVariants) {
  for (const char* line : {"mmu=batched pte=flags batch=64", "  mmu=batched   pte=flags  batch=64  ",
                           "mmu=batched\tpte=flags\tbatch=64", "\nmmu=batched\npte=flags\nbatch=64\n",
                           " \t mmu=batched \t\n pte=flags\t \nbatch=64"}) {
    SCOPED_TRACE(testing::PrintToString(std::string(line)));
    const Parsed p = parse(line);
    expect_ok(p);
    EXPECT_EQ(p.params.mmu, MmuBackend::Batched);
    EXPECT_EQ(p.params.pte, PteAccess::Flags);
    EXPECT_EQ(p.params.batch, 64u);
  }
}

TEST(BootParams, EverythingAtOnce) {
  const Parsed p = parse(
      "mmu=wrpt pte=flags pvpatch=on batch=128 zero_page=off pgd_cache=off selftest=mm bench=all "
      "fail=frame_alloc:1/2 fail_seed=9");
  expect_ok(p);
  EXPECT_EQ(p.params.mmu, MmuBackend::Wrpt);
  EXPECT_EQ(p.params.pte, PteAccess::Flags);
  EXPECT_EQ(p.params.pvpatch, Switch::On);
  EXPECT_EQ(p.params.batch, 128u);
  EXPECT_EQ(p.params.zero_page, Switch::Off);
  EXPECT_EQ(p.params.pgd_cache, Switch::Off);
  EXPECT_STREQ(p.params.selftest, "mm");
  EXPECT_STREQ(p.params.bench, "all");
  EXPECT_EQ(p.params.fail[size_t(FailKind::FrameAlloc)].den, 2u);
  EXPECT_EQ(p.params.fail_seed, 9u);
}

TEST(BootParams, HugeWordsAreTruncatedInTheMessageNotOverflowed) {
  const std::string key(500, 'k');
  Parsed p = parse((key + "=1").c_str());
  expect_error(p);
  EXPECT_THAT(p.error(), HasSubstr(std::string(40, 'k')));

  const std::string value(500, 'v');
  p = parse(("mmu=" + value).c_str());
  expect_error(p);
  EXPECT_THAT(p.error(), HasSubstr("'mmu'"));
}

// The command line: up to kMaxCmdline bytes parse; one more is refused as a
// whole (before, the platform cut it at 1023 and a parameter straddling the
// cut silently changed value, e.g. batch=128 became batch=12).
TEST(BootParams, CommandLineLongerThanTheLimitIsRefusedNotCut) {
  const std::string tail = " batch=128";
  std::string fits = std::string(kMaxCmdline - tail.size(), ' ') + tail;
  ASSERT_EQ(fits.size(), kMaxCmdline);
  Parsed p = parse(fits.c_str());
  expect_ok(p);
  EXPECT_EQ(p.params.batch, 128u);

  for (size_t extra : {1u, 2u, 1000u}) {
    const std::string too_long = std::string(kMaxCmdline + extra - tail.size(), ' ') + tail;
    SCOPED_TRACE(too_long.size());
    p = parse(too_long.c_str());
    expect_error(p);
    EXPECT_THAT(p.error(), AllOf(HasSubstr("command line"), HasSubstr(std::to_string(kMaxCmdline))));
    EXPECT_EQ(p.params.batch, BootParams{}.batch) << "nothing parsed";
  }
  // What Xen hands over when it cut a line: exactly 1023 bytes.
  p = parse(std::string(1023, 'x').c_str());
  expect_error(p);
  EXPECT_THAT(p.error(), HasSubstr("command line"));
}

TEST(BootParams, BenchAcceptsUpToItsItemLimit) {
  std::string items = "a";
  for (unsigned i = 1; i < kMaxBenchItems; ++i) items += ",a";
  Parsed p = parse(("bench=" + items).c_str());
  expect_ok(p);
  EXPECT_EQ(std::string(p.params.bench), items);

  p = parse(("bench=" + items + ",b").c_str());  // one item too many: before, dropped silently
  expect_error(p);
  EXPECT_THAT(p.error(), AllOf(HasSubstr("'bench'"), HasSubstr(std::to_string(kMaxBenchItems + 1) + " items"),
                                    HasSubstr("at most " + std::to_string(kMaxBenchItems))));
  EXPECT_STREQ(p.params.bench, "");
}

TEST(BootParams, BenchEmptyItemsAreRefused) {
  for (const char* line : {"bench=,a", "bench=a,", "bench=a,,b", "bench=,"}) {
    SCOPED_TRACE(line);
    const Parsed p = parse(line);
    expect_error(p);
    EXPECT_THAT(p.error(), AllOf(HasSubstr("'bench'"), HasSubstr("empty item")));
  }
}

TEST(BootParams, InitAndBenchTogetherAreRefused) {
  for (const char* line : {"init=proctest bench=getppid", "bench=getppid mmu=native init=proctest"}) {
    SCOPED_TRACE(line);
    const Parsed p = parse(line);
    expect_error(p);
    EXPECT_THAT(p.error(), AllOf(HasSubstr("'init'"), HasSubstr("'bench'")));
  }
  expect_ok(parse("init=proctest"));
  expect_ok(parse("bench=getppid"));
}

// init_args=A,B: init's arguments (proctest's sub-tests), a list like bench=.
TEST(BootParams, InitArgsAreAListForInit) {
  Parsed p = parse("init=proctest init_args=tlb_mprotect,tlb_munmap");
  expect_ok(p);
  EXPECT_STREQ(p.params.init_args, "tlb_mprotect,tlb_munmap");
  const Parsed alone = parse("init_args=tlb_mprotect");
  expect_error(alone);
  EXPECT_THAT(alone.error(), HasSubstr("'init_args' without 'init'"));
  for (const char* line : {"init=proctest init_args=,a", "init=proctest init_args=a,,b"}) {
    SCOPED_TRACE(line);
    expect_error(parse(line));
  }
}

TEST(BootParams, FailRatesParse) {
  Parsed p = parse("fail=mmu_update:1/1000,mmuext_op:1/500,frame_alloc:1/2000");
  expect_ok(p);
  auto rate = [&](FailKind k) { return p.params.fail[size_t(k)]; };
  EXPECT_EQ(rate(FailKind::MmuUpdate).num, 1u);
  EXPECT_EQ(rate(FailKind::MmuUpdate).den, 1000u);
  EXPECT_EQ(rate(FailKind::MmuextOp).den, 500u);
  EXPECT_EQ(rate(FailKind::FrameAlloc).den, 2000u);
  EXPECT_EQ(p.params.fail_seed, 1u) << "the default seed";

  p = parse("fail=frame_alloc:4294967295/4294967295 fail_seed=18446744073709551615");
  expect_ok(p);
  EXPECT_EQ(rate(FailKind::FrameAlloc).num, UINT32_MAX);
  EXPECT_EQ(rate(FailKind::MmuUpdate).den, 0u) << "kinds not named never fail";
  EXPECT_EQ(p.params.fail_seed, UINT64_MAX);

  p = parse("fail=mmuext_op:0/7 fail_seed=0");  // 0/DEN: never, but well-formed
  expect_ok(p);
  EXPECT_EQ(rate(FailKind::MmuextOp).num, 0u);
  EXPECT_EQ(rate(FailKind::MmuextOp).den, 7u);
  EXPECT_EQ(p.params.fail_seed, 0u);

  for (size_t k = 0; k < size_t(FailKind::Count); ++k) {
    const std::string line = std::string("fail=") + fail_kind_name(FailKind(k)) + ":1/1";
    p = parse(line.c_str());
    expect_ok(p);
    EXPECT_EQ(p.params.fail[k].den, 1u) << line;
  }
}

TEST(BootParams, FailMalformedIsAnError) {
  struct Case {
    const char* value;
    const char* why;
  } cases[] = {
      {"mmu_update:1/0", "denominator 0"},
      {"mmu_update:3/2", "NUM above DEN"},
      {"mmu:1/2", "unknown kind"},
      {"MMU_UPDATE:1/2", "unknown kind"},
      {":1/2", "unknown kind"},
      {"frame_alloc:1/2,frame_alloc:1/3", "given twice"},
      {"mmu_update", "KIND:NUM/DEN"},
      {"mmu_update:", "KIND:NUM/DEN"},
      {"mmu_update:1", "KIND:NUM/DEN"},
      {"mmu_update:1/", "KIND:NUM/DEN"},
      {"mmu_update:/2", "KIND:NUM/DEN"},
      {"mmu_update:-1/2", "KIND:NUM/DEN"},
      {"mmu_update:1/4294967296", "KIND:NUM/DEN"},
      {"mmu_update:1/2/3", "KIND:NUM/DEN"},
      {"mmu_update:0x1/2", "KIND:NUM/DEN"},
      {"mmu_update:1/2,", "unknown kind"},
      {"mmu_update:1/2,,mmuext_op:1/2", "unknown kind"},
  };
  for (const Case& c : cases) {
    const std::string line = std::string("fail=") + c.value;
    SCOPED_TRACE(line);
    const Parsed p = parse(line.c_str());
    expect_error(p);
    EXPECT_THAT(p.error(), AllOf(HasSubstr("'fail'"), HasSubstr(c.why), HasSubstr("mmu_update|mmuext_op|frame_alloc")));
    EXPECT_EQ(diff(p.params, BootParams{}), "") << "nothing set on error";
  }
  expect_error(parse("fail="));
  expect_error(parse("fail=mmu_update:1/2 fail=mmuext_op:1/2"));
}

TEST(BootParams, FailSeedMalformed) {
  for (const char* v : {"", "-1", "x", "18446744073709551616", "99999999999999999999", "1e3", "0x10"}) {
    const std::string line = std::string("fail_seed=") + v;
    SCOPED_TRACE(line);
    const Parsed p = parse(line.c_str());
    expect_error(p);
    EXPECT_THAT(p.error(), HasSubstr("'fail_seed'"));
    EXPECT_EQ(p.params.fail_seed, 1u);
  }
}

TEST(BootParams, FailKindNames) {
  EXPECT_STREQ(fail_kind_name(FailKind::MmuUpdate), "mmu_update");
  EXPECT_STREQ(fail_kind_name(FailKind::MmuextOp), "mmuext_op");
  EXPECT_STREQ(fail_kind_name(FailKind::FrameAlloc), "frame_alloc");
  EXPECT_STREQ(fail_kind_name(FailKind::Count), "?");
}

// Words echoed in an error keep it one printable line: a '\r' or an escape
// sequence from the command line would split or rewrite the console line,
// a non-UTF-8 byte would make the error record invalid JSON.
TEST(BootParams, ErrorsEchoOnlyPrintableAscii) {
  for (const char* line : {"mmu=nat\rive", "k\x1b[2Jey=1", "mmu=\xff\xfe", "fail=mmu_update:1/\x80", "bench=a\r"}) {
    SCOPED_TRACE(testing::PrintToString(std::string(line)));
    const Parsed p = parse(line);
    if (!strcmp(line, "bench=a\r")) {
      expect_ok(p);  // accepted values are the program's business
      continue;
    }
    expect_error(p);
    for (const char* c = p.error(); *c; ++c) EXPECT_TRUE(*c >= 0x20 && *c <= 0x7e) << int(*c);
    EXPECT_THAT(p.error(), HasSubstr("?"));
  }
}

TEST(BootParams, BackendNames) {
  EXPECT_STREQ(backend_name(MmuBackend::Default), "default");
  // Each name parses back to its backend.
  for (MmuBackend b : {MmuBackend::Native, MmuBackend::Batched, MmuBackend::Direct, MmuBackend::Wrpt}) {
    const std::string line = std::string("mmu=") + backend_name(b);
    const Parsed p = parse(line.c_str());
    expect_ok(p);
    EXPECT_EQ(p.params.mmu, b) << line;
  }
}

}  // namespace
}  // namespace pvk
