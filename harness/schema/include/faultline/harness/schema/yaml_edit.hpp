#pragma once
// Setting one value of a scenario's YAML text in place. Only that place of the text changes, so
// quoting, comments and every other value stay as written (writing a parsed document out again
// would drop the quotes of strings such as "32"). Used by `faultline-harness run --seed` and by
// the matrix expansion (faultline/harness/schema/matrix.hpp).

#include <stdexcept>
#include <string>
#include <string_view>

namespace faultline::harness::schema {

class YamlEditError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `yaml` with the scalar at `path` replaced by `value_text` (YAML as it is to be written: `300`,
// `10s`, `"32"`). A path is keys and list indexes: `seed`, `faults[0].when.afterMatches`,
// `workload.phases[1].rate`. The last key may be missing from an existing mapping: it is added as
// that mapping's first key, in its style (block or flow). Throws YamlEditError, naming the part of
// the path that is wrong, when the path is malformed, a key before the last or an index does not
// exist, the value there is a mapping or a list (only single values are set), or the value is
// written across lines (a block scalar, a folded plain scalar). `yaml` must be valid YAML.
std::string with_value_at(std::string_view yaml, std::string_view path, std::string_view value_text);

// The text of the scalar starting at byte `at` of `text` as written there: plain, 'single' or
// "double" quoted (quotes included). Empty when it is not on one line (a block scalar, a quoted
// scalar running into the next line) or `scalar` (the parsed value) does not start there.
std::string_view scalar_source(std::string_view text, std::size_t at, std::string_view scalar);

}  // namespace faultline::harness::schema
