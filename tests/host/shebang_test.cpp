// `#!` lines (kernel/proc/shebang.{h,cpp}): what exec runs for a script.
#include "host_compat.h"  // first: see there

#include <string>

#include "kernel/proc/shebang.h"

namespace pvk {
namespace {

struct Parsed {
  Errno error = Errno::Ok;
  bool script = false;
  std::string interpreter, argument;
  bool has_argument = false;
};

Parsed parse(std::string text, size_t n = std::string::npos) {
  const bool whole = n == std::string::npos;
  if (whole) n = text.size();
  text.push_back(0);  // room for the name's NUL, as exec's buffer has
  Shebang s;
  Parsed out;
  auto r = parse_shebang(text.data(), n, whole, s);
  if (r.is_error()) return out.error = r.error(), out;
  out.script = r.value();
  if (s.interpreter) out.interpreter = s.interpreter;
  if (s.argument) out.argument = s.argument, out.has_argument = true;
  return out;
}

TEST(Shebang, NotAScript) {
  EXPECT_FALSE(parse("\x7f" "ELF").script);
  EXPECT_FALSE(parse("#").script);
  EXPECT_FALSE(parse("").script);
  EXPECT_FALSE(parse("# !/bin/sh\n").script);
}

TEST(Shebang, InterpreterAndOneArgument) {
  const Parsed p = parse("#!/bin/busybox sh\necho hi\n");
  ASSERT_TRUE(p.script);
  EXPECT_EQ(p.interpreter, "/bin/busybox");
  EXPECT_EQ(p.argument, "sh");
  const Parsed q = parse("#!  /bin/sh  \t\n");
  EXPECT_EQ(q.interpreter, "/bin/sh");
  EXPECT_FALSE(q.has_argument) << "trailing blanks are no argument";
  const Parsed r = parse("#!/usr/bin/env  a b  c \n");
  EXPECT_EQ(r.interpreter, "/usr/bin/env");
  EXPECT_EQ(r.argument, "a b  c") << "the rest of the line is one argument, as on Linux";
}

TEST(Shebang, NoInterpreterIsENOEXEC) {
  EXPECT_EQ(parse("#!\n").error, Errno::ENOEXEC);
  EXPECT_EQ(parse("#!   \n").error, Errno::ENOEXEC);
  EXPECT_EQ(parse("#!").error, Errno::ENOEXEC);
}

TEST(Shebang, ALineLongerThanWhatWasRead) {
  // The interpreter's name runs to the end of what was read: it may be cut
  // short, so it is refused rather than run.
  EXPECT_EQ(parse("#!" + std::string(300, 'x'), 256).error, Errno::ENOEXEC);
  // A whole name with an argument cut short is run, with what was read.
  const Parsed p = parse("#!/bin/sh " + std::string(300, 'a'), 256);
  ASSERT_TRUE(p.script);
  EXPECT_EQ(p.interpreter, "/bin/sh");
  EXPECT_EQ(p.argument.size(), 256u - 10u - 1u);
}

TEST(Shebang, AFileWithoutANewline) {
  const Parsed p = parse("#!/bin/sh");
  ASSERT_TRUE(p.script) << "a short file read whole ends its line";
  EXPECT_EQ(p.interpreter, "/bin/sh");
  EXPECT_EQ(parse("#!/bin/sh", 9).error, Errno::ENOEXEC) << "the same bytes as the start of a longer file";
}

}  // namespace
}  // namespace pvk
