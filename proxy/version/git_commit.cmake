# Writes OUTPUT, the definition of faultline::git_commit(), from the checkout at SOURCE_DIR; run at
# every build (cmake -P), it rewrites OUTPUT only when the text changes, so that a build with the
# same commit compiles and links nothing again.
#   -DSOURCE_DIR=... -DOUTPUT=... [-DGIT=git] [-DOVERRIDE=<commit>]
set(commit unknown)
if(OVERRIDE)
  set(commit "${OVERRIDE}")
elseif(GIT)
  # Only SOURCE_DIR's own repository: a source tree unpacked inside another checkout is "unknown".
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --show-toplevel
                  RESULT_VARIABLE rc OUTPUT_VARIABLE top ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc EQUAL 0)
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${SOURCE_DIR}" source)
  endif()
  if(rc EQUAL 0 AND top STREQUAL source)
    execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --short=12 --verify HEAD
                    RESULT_VARIABLE rc OUTPUT_VARIABLE head ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0 AND head MATCHES "^[0-9a-f]+$")
      set(commit "${head}")
      execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                      RESULT_VARIABLE rc OUTPUT_VARIABLE changes ERROR_QUIET)
      if(rc EQUAL 0 AND NOT changes STREQUAL "")
        string(APPEND commit "-dirty")
      endif()
    endif()
  endif()
endif()
string(REGEX REPLACE "[^0-9A-Za-z._+-]" "_" commit "${commit}")  # a C++ string literal whatever it was given
set(text "// Generated at build time by proxy/version/git_commit.cmake.\n#include \"faultline/version.hpp\"\n\nstd::string_view faultline::git_commit() { return \"${commit}\"; }\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
