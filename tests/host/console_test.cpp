// The kernel console's line discipline, against a platform that captures
// what reaches the wire: user output can never forge a kernel record, a
// record always starts a line, and records stay valid JSON (UTF-8) whatever
// text they carry.
#include "host_compat.h"  // first: see there

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "base/arch/platform.h"
#include "base/console/console.h"
#include "base/console/record.h"

namespace pvk {

Platform* g_platform = nullptr;

namespace {

std::string g_wire;
void capture(const char* s, size_t n) { g_wire.append(s, n); }
[[noreturn]] void no_shutdown(ExitStatus) { abort(); }

class ConsoleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    platform_.console_write = &capture;
    platform_.shutdown = &no_shutdown;
    g_platform = &platform_;
    console_begin_line();  // the previous test may have left a partial line
    g_wire.clear();
  }
  void TearDown() override { g_platform = nullptr; }
  static void user(const std::string& s) { console_write_user(s.data(), s.size()); }

  Platform platform_{};
};

TEST_F(ConsoleTest, AUserLineThatLooksLikeARecordIsTagged) {
  user("@pvk {\"event\":\"done\",\"status\":\"pass\"}\n");
  EXPECT_EQ(g_wire, "@pvk-user {\"event\":\"done\",\"status\":\"pass\"}\n");
}

TEST_F(ConsoleTest, TheMarkIsRecognisedAcrossWrites) {
  for (const char* piece : {"hello\n@", "p", "vk", " {\"a\":1}\n", "@pv", "x\n", "a @pvk\n"}) user(piece);
  EXPECT_EQ(g_wire, "hello\n@pvk-user {\"a\":1}\n@pvx\na @pvk\n");
}

TEST_F(ConsoleTest, OnlyTheLineStartCounts) {
  user("x@pvk {}\n@@pvk {}\n\n@pvk\n");
  EXPECT_EQ(g_wire, "x@pvk {}\n@@pvk {}\n\n@pvk-user\n");
}

TEST_F(ConsoleTest, AKernelRecordStartsItsOwnLine) {
  user("partial line without newline");
  { Record("done").str("status", "pass"); }
  EXPECT_EQ(g_wire, "partial line without newline\n@pvk {\"event\":\"done\",\"status\":\"pass\"}\n");
}

TEST_F(ConsoleTest, RecordsStayValidUtf8) {
  const char text[] = "ok \xc3\xa9 bad \xff \xc3 \xe0\x80\x80 \xed\xa0\x80 \xf4\x90\x80\x80 \x7f end";
  { Record("error").str("message", text); }
  ASSERT_FALSE(g_wire.empty());
  const std::string body = g_wire.substr(5, g_wire.size() - 6);  // "@pvk " ... "\n"
  const auto json = nlohmann::json::parse(body, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << g_wire;
  EXPECT_EQ(json["message"], "ok \xc3\xa9 bad \xef\xbf\xbd \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                             "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \x7f end");
}

}  // namespace
}  // namespace pvk
