#pragma once
// The KWOK node manifest the local stack and kind mode create their nodes from
// (scripts/stack.d/kwok-node.yaml), built into the harness: it needs no source tree to run.
#include <string_view>

namespace faultline::harness {

// The template, placeholders ${NAME} and ${CAPACITY} as the file has them.
std::string_view kwok_node_manifest();

}  // namespace faultline::harness
