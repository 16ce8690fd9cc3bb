#pragma once
// Included by a source file for which GCC 12 reports a mismatched new/delete on its coroutine
// frames: a false positive (Asio's awaitable frames allocate and free through the same pair of its
// own operators). Turns the warning off for the rest of that file only under GCC 12.

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
