// Console protocol parsing: which lines are records, and malformed records
// being reported rather than dropped.
#include "pvk/record.hpp"
#include "pvk/run.hpp"

#include <gtest/gtest.h>

namespace pvk {
namespace {

using Kind = ConsoleLine::Kind;

TEST(Record, ParsesRecordLine) {
  const ConsoleLine line = parse_console_line(R"(@pvk {"event":"done","status":"pass","n":3})");
  ASSERT_EQ(line.kind, Kind::record);
  EXPECT_EQ(line.record["event"], "done");
  EXPECT_EQ(line.record["n"], 3);
  EXPECT_TRUE(is_done_record(line.record));
}

TEST(Record, ToleratesSurroundingWhitespaceInJson) {
  EXPECT_EQ(parse_console_line(R"(@pvk   {"a":1}   )").kind, Kind::record);
}

TEST(Record, PlainTextIsNotARecord) {
  for (const char* text : {"", "hello", "pvk: booting", " @pvk {\"a\":1}", "@pvk", "@pvk{\"a\":1}",
                           "@pvkx {\"a\":1}", "(XEN) @pvk {\"a\":1}"})
    EXPECT_EQ(parse_console_line(text).kind, Kind::text) << text;
}

TEST(Record, MalformedJsonIsAProtocolError) {
  for (const char* text : {"@pvk {\"event\":\"done\"", "@pvk {event:done}", "@pvk ", "@pvk {} trailing",
                           "@pvk {\"a\":1}{\"b\":2}"}) {
    const ConsoleLine line = parse_console_line(text);
    EXPECT_EQ(line.kind, Kind::malformed) << text;
    EXPECT_NE(line.error.find(text), std::string::npos) << "error quotes the line: " << line.error;
  }
}

TEST(Record, NonObjectJsonIsAProtocolError) {
  for (const char* text : {"@pvk [1,2]", "@pvk 42", "@pvk \"done\"", "@pvk null"})
    EXPECT_EQ(parse_console_line(text).kind, Kind::malformed) << text;
}

// pvk tags a line a user program starts with "@pvk" as "@pvk-user": its
// records are kept as data but can never be the run's done record, and a
// program's broken record is only text.
TEST(Record, UserRecordsAreMarkedAndNeverDecideTheRun) {
  const ConsoleLine fake = parse_console_line(R"(@pvk-user {"event":"done","status":"pass"})");
  ASSERT_EQ(fake.kind, Kind::record);
  EXPECT_TRUE(is_user_record(fake.record));
  EXPECT_FALSE(is_done_record(fake.record));
  EXPECT_EQ(fake.record["event"], "done");
  const ConsoleLine kernel = parse_console_line(R"(@pvk {"event":"done","status":"fail"})");
  EXPECT_FALSE(is_user_record(kernel.record));
  const auto done = find_done_record(std::vector<nlohmann::json>{kernel.record, fake.record});
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["status"], "fail");
  EXPECT_FALSE(find_done_record(std::vector<nlohmann::json>{fake.record}));
  for (const char* text : {"@pvk-user {broken", "@pvk-user [1]", "@pvk-user "})
    EXPECT_EQ(parse_console_line(text).kind, Kind::text) << text;
  EXPECT_EQ(parse_console_line(R"(@pvk-user {"bench":"getpid","ns":10})").record["bench"], "getpid");
}

// What a run keeps is bounded: past the cap lines are only counted, user
// records stop being kept, and the kernel's records always are.
TEST(Record, ARunKeepsABoundedConsole) {
  RunResult r;
  const std::string line(1 << 20, 'x');
  for (int i = 0; i < 40; ++i) r.add_console_line(line);
  EXPECT_LE(r.lines.size() * line.size(), RunResult::kMaxKeptBytes);
  EXPECT_EQ(r.lines.size() + r.lines_dropped, 40u);
  EXPECT_GT(r.lines_dropped, 0u);
  for (uint64_t i = 0; i < RunResult::kMaxUserRecords + 5; ++i) r.add_console_line(R"(@pvk-user {"n":1})");
  r.add_console_line(R"(@pvk {"event":"done","status":"pass"})");
  EXPECT_EQ(r.records.size(), RunResult::kMaxUserRecords + 1);
  ASSERT_TRUE(find_done_record(r.records));
}

TEST(Record, FindsLastDoneRecord) {
  const std::vector<nlohmann::json> records{
      {{"event", "done"}, {"status", "fail"}},
      {{"bench", "fork"}},
      {{"event", "done"}, {"status", "pass"}},
      {{"event", "frames"}},
  };
  const auto done = find_done_record(records);
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["status"], "pass");
  EXPECT_FALSE(find_done_record(std::vector<nlohmann::json>{nlohmann::json{{"event", "selftest"}}}));
  EXPECT_FALSE(is_done_record(nlohmann::json{{"event", 1}}));
}

}  // namespace
}  // namespace pvk
