// pvk through libvirt: the native platform as a libvirt domain (QEMU driver,
// tools/libvirt/pvk-native.xml) defined and started with the libvirt C API on
// a libvirtd the test starts and stops itself, and the two domain templates
// checked against libvirt's schema with virt-xml-validate.
#include "domu_support.hpp"
#include "pvk/libvirt.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include <unistd.h>

namespace pvk::boot_test {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One private libvirtd for the suite; its socket must be gone afterwards.
class Libvirt : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = std::make_unique<PrivateLibvirtd>(PVK_TOOLS_DIR); }
  static void TearDownTestSuite() {
    const fs::path socket = daemon_->dir() / "libvirt-sock";
    daemon_.reset();
    EXPECT_FALSE(fs::exists(socket)) << "libvirtd's socket outlived it";
  }
  static std::unique_ptr<PrivateLibvirtd> daemon_;
};
std::unique_ptr<PrivateLibvirtd> Libvirt::daemon_;

TEST_F(Libvirt, NativeMmSelftestPasses) {
  const RunResult r = boot_libvirt("mmu=native selftest=mm", daemon_->uri());
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(booted_with(r, "mmu", "native")) << transcript(r);
  EXPECT_TRUE(find_record(r, "selftest", [](const json& rec) {
    return rec.value("name", "") == "mm" && rec.value("pass", false) == true;
  })) << transcript(r);
}

TEST_F(Libvirt, NativeProcessTestsPass) {
  const RunResult r = boot_libvirt("init=proctest", daemon_->uri());
  ASSERT_TRUE(r.pass) << transcript(r);
  const auto summary = find_record(r, "user_tests");
  ASSERT_TRUE(summary) << transcript(r);
  EXPECT_EQ(r.records[*summary].value("failed", -1), 0) << r.records[*summary].dump();
}

// QEMU's exit status does not reach libvirt, so the done record alone says
// fail; the run must still end promptly with the kernel's reason.
TEST_F(Libvirt, NativeFaultFails) {
  const RunResult r = boot_libvirt("selftest=fault", daemon_->uri());
  EXPECT_FALSE(r.pass) << transcript(r);
  EXPECT_FALSE(r.timed_out) << transcript(r);
  ASSERT_TRUE(r.done) << transcript(r);
  EXPECT_EQ(r.done->value("status", ""), "fail") << transcript(r);
  EXPECT_NE(r.reason.find("kernel reported fail"), std::string::npos) << r.reason;
}

// What `pvk run --via libvirt` does without a URI: its own libvirtd, started
// and stopped around the run.
TEST(LibvirtOwnDaemon, NativeBootPasses) {
  const RunResult r = boot_libvirt("selftest=mm");
  EXPECT_TRUE(r.pass) << transcript(r);
}

// Both templates, filled in, are valid libvirt domain XML.
class DomainTemplate : public ::testing::TestWithParam<std::string> {};

TEST_P(DomainTemplate, ValidatesAgainstLibvirtSchema) {
  const fs::path templ = fs::path(PVK_TOOLS_DIR) / GetParam();
  const std::string xml = render_domain_xml(read_text(templ), {{"NAME", "pvk-test"},
                                                               {"KERNEL", "/boot/pvk & co/pvk.elf"},
                                                               {"CMDLINE", "mmu=batched selftest=mm <\"'>"},
                                                               {"CONSOLE_LOG", "/tmp/pvk-console.log"},
                                                               {"MEMORY_MIB", "256"}});
  EXPECT_EQ(xml.find('@'), std::string::npos) << "a placeholder was left:\n" << xml;
  const fs::path file = fs::temp_directory_path() / ("pvk-domain-" + std::to_string(::getpid()) + ".xml");
  std::ofstream(file) << xml;
  const std::string command = "virt-xml-validate " + file.string() + " domain > " + file.string() + ".out 2>&1";
  const int status = std::system(command.c_str());
  const std::string output = read_text(file.string() + ".out");
  fs::remove(file);
  fs::remove(file.string() + ".out");
  EXPECT_EQ(status, 0) << command << ":\n" << output << "\n" << xml;
}

INSTANTIATE_TEST_SUITE_P(Libvirt, DomainTemplate,
                         ::testing::Values(std::string(libvirt_native_template), std::string(libvirt_xen_template)),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.find("xen") != std::string::npos ? std::string("xen") : std::string("native");
                         });

TEST(DomainXml, PlaceholdersAreFilledAndEscaped) {
  EXPECT_EQ(render_domain_xml("<a>@X@</a>@", {{"X", "a<b&\"c'"}}), "<a>a&lt;b&amp;&quot;c&apos;</a>@");
  EXPECT_THROW(render_domain_xml("<a>@MISSING@</a>", {}), std::invalid_argument);
}

}  // namespace
}  // namespace pvk::boot_test
