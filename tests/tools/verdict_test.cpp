// The run verdict: one passing shape, and every way a run can fail.
#include "pvk/verdict.hpp"

#include <gtest/gtest.h>

namespace pvk {
namespace {

using nlohmann::json;

json done(const char* status) { return {{"event", "done"}, {"status", status}}; }

const PlatformExit exit_pass{ExitVerdict::pass, "exit says pass"};
const PlatformExit exit_fail{ExitVerdict::fail, "exit says fail"};
const PlatformExit exit_none{ExitVerdict::none, "QEMU exited with status 0 (triple fault?)"};

Evidence evidence(std::vector<json> records, PlatformExit exit = exit_pass) {
  Evidence ev;
  ev.records = std::move(records);
  ev.exit = std::move(exit);
  ev.timeout = std::chrono::seconds{60};
  return ev;
}

void expect_fail(const Evidence& ev, const std::string& reason_part) {
  const Verdict v = decide(ev);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reason.find(reason_part), std::string::npos) << "reason: " << v.reason;
}

TEST(Verdict, DonePassWithAgreeingExitPasses) {
  const Verdict v = decide(evidence({{{"event", "selftest"}, {"pass", true}}, done("pass")}));
  EXPECT_TRUE(v.pass) << v.reason;
}

TEST(Verdict, DoneFailFails) {
  expect_fail(evidence({done("fail")}, exit_fail), "kernel reported fail");
}

TEST(Verdict, DoneFailQuotesKernelReason) {
  json record = done("fail");
  record["reason"] = "unknown parameter frobnicate";
  expect_fail(evidence({record}, exit_fail), "kernel reported fail: unknown parameter frobnicate");
}

TEST(Verdict, DoneFailFailsEvenIfExitSaysPass) {
  expect_fail(evidence({done("fail")}, exit_pass), "kernel reported fail");
}

TEST(Verdict, NoDoneRecordIsACrash) {
  expect_fail(evidence({{{"event", "selftest"}}}, exit_none), "no done record; QEMU exited with status 0");
}

TEST(Verdict, NoRecordsAtAll) { expect_fail(evidence({}, exit_none), "no done record"); }

TEST(Verdict, TimeoutWithoutDoneIsAHang) {
  Evidence ev = evidence({}, exit_none);
  ev.timed_out = true;
  expect_fail(ev, "timed out after 60 s without a done record");
}

TEST(Verdict, TimeoutAfterDonePassMeansNoShutdown) {
  Evidence ev = evidence({done("pass")}, exit_none);
  ev.timed_out = true;
  expect_fail(ev, "did not shut the machine down");
}

TEST(Verdict, TimeoutAfterDoneFail) {
  Evidence ev = evidence({done("fail")}, exit_none);
  ev.timed_out = true;
  expect_fail(ev, "kernel reported fail, then timed out");
}

TEST(Verdict, DonePassButExitSaysFailIsAMismatch) {
  expect_fail(evidence({done("pass")}, exit_fail), "kernel reported pass but exit says fail");
}

TEST(Verdict, DonePassButNoExitVerdictIsAMismatch) {
  expect_fail(evidence({done("pass")}, exit_none), "kernel reported pass but QEMU exited");
}

TEST(Verdict, DoneMustBeLastRecord) {
  expect_fail(evidence({done("pass"), {{"bench", "fork"}}}), "records after the done record");
}

TEST(Verdict, DoneWithBadStatus) {
  expect_fail(evidence({done("maybe")}), "done record has status \"maybe\"");
  expect_fail(evidence({{{"event", "done"}}}), "done record has status null");
}

TEST(Verdict, ProtocolErrorFailsAnOtherwisePassingRun) {
  Evidence ev = evidence({done("pass")});
  ev.protocol_errors = {"invalid JSON after \"@pvk \": @pvk {", "second"};
  expect_fail(ev, "protocol error: invalid JSON");
  expect_fail(ev, "(and 1 more)");
}

TEST(Verdict, ProtocolErrorIsMentionedWhenDoneIsMissing) {
  Evidence ev = evidence({}, exit_none);
  ev.protocol_errors = {"invalid JSON after \"@pvk \": @pvk {\"event\":\"done\""};
  expect_fail(ev, "protocol error");
}

}  // namespace
}  // namespace pvk
