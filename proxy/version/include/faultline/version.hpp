#pragma once
// The release of faultline (project(VERSION) in the top CMakeLists.txt, its one definition) and the
// git commit the binary was built from ("unknown" outside a git checkout; "-dirty" appended when
// tracked files differed from the commit). What --version prints and the reports carry.
#include <string>
#include <string_view>

namespace faultline {

std::string_view version();     // "0.1.0"
std::string_view git_commit();  // "1884980abc12", "1884980abc12-dirty" or "unknown"

// "<program> 0.1.0 (commit 1884980abc12)", the line --version prints.
std::string version_line(std::string_view program);

}  // namespace faultline
