#include "faultline/admin/token_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "proxy_process.hpp"

namespace faultline::admin {
namespace {

namespace fs = std::filesystem;

class TokenFile : public ::testing::Test {
 protected:
  testing::TempDir dir{"faultline-token-file"};
  fs::path write(const std::string& name, const std::string& content) {
    fs::path path = dir.path() / name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  // The message of the TokenFileError read_token_file throws for `path`.
  static std::string error_of(const fs::path& path) {
    try {
      read_token_file(path);
    } catch (const TokenFileError& e) {
      return e.what();
    }
    return "(no error)";
  }
};

TEST_F(TokenFile, SurroundingWhitespaceIsNotPartOfTheToken) {
  EXPECT_EQ(read_token_file(write("a", "s3cret-token\n")), "s3cret-token");
  EXPECT_EQ(read_token_file(write("b", " \t s3cret-token \r\n\n")), "s3cret-token");
}

TEST_F(TokenFile, EmptyOrBlankFileIsAnErrorNamingTheFile) {
  for (std::string content : {"", "\n", " \t\r\n \n"}) {
    const fs::path path = write("blank", content);
    const std::string message = error_of(path);
    EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
    EXPECT_NE(message.find("empty or only whitespace"), std::string::npos) << message;
  }
}

TEST_F(TokenFile, TokenThatCannotBeSentInAHeaderIsAnError) {
  EXPECT_NE(error_of(write("two", "line-one\nline-two\n")).find("character 9 of the token"), std::string::npos);
  EXPECT_NE(error_of(write("space", "two words")).find("character 4 of the token"), std::string::npos);
  EXPECT_NE(error_of(write("utf8", "caf\xC3\xA9")).find("non-ASCII"), std::string::npos);
}

TEST_F(TokenFile, MissingDirectoryFifoAndHugeFilesAreErrors) {
  EXPECT_NE(error_of(dir.path() / "missing").find("cannot open"), std::string::npos);
  EXPECT_NE(error_of(dir.path()).find("not a regular file"), std::string::npos);
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of(fifo).find("not a regular file"), std::string::npos) << "must not wait for a writer";
  EXPECT_NE(error_of(write("huge", std::string(kMaxTokenFileBytes + 1, 'x'))).find("at most"), std::string::npos);
  EXPECT_EQ(read_token_file(write("largest", std::string(kMaxTokenFileBytes, 'x'))).size(), kMaxTokenFileBytes);
}

}  // namespace
}  // namespace faultline::admin
