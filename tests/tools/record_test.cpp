// Console protocol parsing: which lines are records, and malformed records
// being reported rather than dropped.
#include "pvk/record.hpp"

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
