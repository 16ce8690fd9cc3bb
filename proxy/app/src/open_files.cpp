#include "faultline/app/open_files.hpp"

#include <sys/resource.h>

namespace faultline::app {

OpenFilesLimit raise_open_files_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  OpenFilesLimit result{limit.rlim_cur, limit.rlim_cur, limit.rlim_max};
  if (limit.rlim_cur == limit.rlim_max) return result;
  // An unlimited hard limit cannot be the soft one (the kernel caps it at fs.nr_open): ask for the
  // kernel's default nr_open instead.
  constexpr rlim_t kNrOpenDefault = 1024 * 1024;
  rlimit wanted{limit.rlim_max == RLIM_INFINITY ? kNrOpenDefault : limit.rlim_max, limit.rlim_max};
  if (::setrlimit(RLIMIT_NOFILE, &wanted) == 0) result.now = wanted.rlim_cur;
  return result;
}

}  // namespace faultline::app
