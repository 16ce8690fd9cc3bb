#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "faultline/faults/match.hpp"

namespace faultline::faults {
namespace {

Request bind(std::string ns = "faultline", std::string name = "burst-1") {
  return make_request("POST", "/api/v1/namespaces/" + ns + "/pods/" + name + "/binding",
                      {{"User-Agent", "yunikorn-scheduler/v1.9.0"}, {"X-Test", "yes"}});
}

Match verbs(std::vector<std::string> values) {
  Match match;
  match.verbs = std::move(values);
  return match;
}

TEST(Glob, StarsAndQuestionMarks) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("burst-*", "burst-17"));
  EXPECT_TRUE(glob_match("*-scheduler/*", "kube-scheduler/v1.35.5 (linux/amd64)"));
  EXPECT_TRUE(glob_match("b?rst", "burst"));
  EXPECT_FALSE(glob_match("burst-*", "afterwards-1"));
  EXPECT_FALSE(glob_match("b?rst", "brst"));
  EXPECT_TRUE(glob_match("a*b*c", "a-b-b-c"));
  EXPECT_FALSE(glob_match("a*b*c", "a-b-b-d"));
}

// The definition of a glob, by dynamic programming over (pattern prefix, text prefix): slow,
// obviously right, and independent of how glob_match works.
bool reference_glob(std::string_view pattern, std::string_view text) {
  std::vector<std::vector<char>> m(pattern.size() + 1, std::vector<char>(text.size() + 1, 0));
  m[0][0] = 1;
  for (std::size_t i = 1; i <= pattern.size(); ++i) {
    char p = pattern[i - 1];
    for (std::size_t j = 0; j <= text.size(); ++j) {
      if (p == '*') m[i][j] = m[i - 1][j] || (j > 0 && m[i][j - 1]);
      else m[i][j] = j > 0 && m[i - 1][j - 1] && (p == '?' || p == text[j - 1]);
    }
  }
  return m[pattern.size()][text.size()];
}

// Every pattern of up to 5 characters over {a, b, ?, *} against every text of up to 6 characters
// over {a, b}.
TEST(Glob, AgreesWithTheDefinitionOnEverySmallCase) {
  std::vector<std::string> patterns{""}, texts{""};
  for (std::size_t n = 0; n < patterns.size() && patterns[n].size() < 5; ++n)
    for (char c : {'a', 'b', '?', '*'}) patterns.push_back(patterns[n] + c);
  for (std::size_t n = 0; n < texts.size() && texts[n].size() < 6; ++n)
    for (char c : {'a', 'b'}) texts.push_back(texts[n] + c);
  for (const auto& pattern : patterns)
    for (const auto& text : texts)
      ASSERT_EQ(glob_match(pattern, text), reference_glob(pattern, text)) << pattern << " vs " << text;
}

// Patterns longer than one 64-bit word of states, with stars and '?' at the word boundaries, and
// the inputs that make backtracking matchers slow: many stars, a near miss at the very end.
TEST(Glob, LongAndAdversarialPatternsMatchExactlyWhenTheyShould) {
  const std::string as(3000, 'a');
  std::string stars;  // *a*a*a...*a*b
  for (int i = 0; i < 500; ++i) stars += "*a";
  EXPECT_FALSE(glob_match(stars + "*b", as));
  EXPECT_TRUE(glob_match(stars + "*", as));
  EXPECT_TRUE(glob_match(stars + "*b", as + "b"));
  EXPECT_FALSE(glob_match(stars, std::string(499, 'a')));
  EXPECT_TRUE(glob_match(stars, std::string(500, 'a')));
  EXPECT_TRUE(glob_match(std::string(1024, '?'), std::string(1024, 'x')));
  EXPECT_FALSE(glob_match(std::string(1024, '?'), std::string(1023, 'x')));
  EXPECT_FALSE(glob_match(std::string(1024, '?'), std::string(1025, 'x')));
  EXPECT_TRUE(glob_match(std::string(1023, 'a') + "*", as));
  EXPECT_FALSE(glob_match("*" + std::string(1023, 'a') + "b*", as));
  EXPECT_TRUE(glob_match("*" + std::string(1023, 'a') + "b*", as + "b" + as));
  // Runs of stars count as one; a star at bit 63, 64 and 127 of the state words.
  std::string boundary = std::string(63, 'x') + "*" + "?" + std::string(62, 'y') + "**" + std::string(10, 'z');
  for (const std::string& text : {std::string(63, 'x') + "q" + std::string(62, 'y') + std::string(10, 'z'),
                                  std::string(63, 'x') + "qq" + std::string(62, 'y') + "zz" + std::string(10, 'z'),
                                  std::string(63, 'x') + std::string(62, 'y') + std::string(10, 'z'),
                                  std::string(64, 'x') + std::string(62, 'y') + std::string(9, 'z')})
    EXPECT_EQ(glob_match(boundary, text), reference_glob(boundary, text)) << text;
}

// Random patterns of up to 200 characters (several state words) against texts built to nearly
// match them, compared with the definition; a fixed seed, so every run checks the same cases.
TEST(Glob, AgreesWithTheDefinitionOnLongRandomCases) {
  std::mt19937 random(20261201);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  for (int round = 0; round < 2000; ++round) {
    std::string pattern, text;
    std::size_t length = 1 + pick(200);
    for (std::size_t i = 0; i < length; ++i) {
      std::size_t kind = pick(10);
      char letter = "ab"[pick(2)];
      if (kind == 0) {
        pattern += '*';
        for (std::size_t k = pick(4); k > 0; --k) text += "ab"[pick(2)];
      } else if (kind == 1) {
        pattern += '?';
        text += "ab"[pick(2)];
      } else {
        pattern += letter;
        text += pick(50) == 0 ? "ab"[pick(2)] : letter;  // now and then a mismatch
      }
    }
    ASSERT_EQ(glob_match(pattern, text), reference_glob(pattern, text)) << pattern << " vs " << text;
  }
}

TEST(ResourcePattern, SubresourcesFollowRbacRules) {
  RequestInfo binding = bind().info;
  RequestInfo pod = classify("GET", "/api/v1/namespaces/a/pods/b");
  EXPECT_TRUE(resource_matches("pods/binding", binding));
  EXPECT_FALSE(resource_matches("pods", binding));  // "pods" does not cover its subresources
  EXPECT_TRUE(resource_matches("pods", pod));
  EXPECT_TRUE(resource_matches("pods/*", binding));
  EXPECT_FALSE(resource_matches("pods/*", pod));
  EXPECT_TRUE(resource_matches("*/binding", binding));
  EXPECT_TRUE(resource_matches("*", binding));
  EXPECT_FALSE(resource_matches("*", classify("GET", "/healthz")));
}

TEST(ResourcePattern, GroupSuffixPinsTheApiGroup) {
  RequestInfo deployment = classify("GET", "/apis/apps/v1/namespaces/a/deployments/web");
  EXPECT_TRUE(resource_matches("deployments.apps", deployment));
  EXPECT_TRUE(resource_matches("deployments", deployment));
  EXPECT_FALSE(resource_matches("deployments.extensions", deployment));
  EXPECT_TRUE(resource_matches("leases.coordination.k8s.io",
                               classify("PUT", "/apis/coordination.k8s.io/v1/namespaces/k/leases/l")));
  EXPECT_FALSE(resource_matches("pods.apps", classify("GET", "/api/v1/pods")));
}

TEST(Match, EmptyMatchesEverything) {
  EXPECT_TRUE(Match{}.matches(bind()));
  EXPECT_TRUE(Match{}.matches(make_request("GET", "/healthz")));
  EXPECT_TRUE(Match{}.empty());
}

TEST(Match, EveryGivenKeyMustMatch) {
  Match match;
  match.verbs = {"create"};
  match.resources = {"pods/binding"};
  match.namespaces = {"fault*"};
  match.names = {"burst-*"};
  match.user_agents = {"yunikorn*"};
  EXPECT_TRUE(match.matches(bind()));
  EXPECT_FALSE(match.matches(bind("default")));
  EXPECT_FALSE(match.matches(bind("faultline", "other")));
  EXPECT_FALSE(match.matches(make_request("POST", "/api/v1/namespaces/faultline/pods/burst-1/binding",
                                          {{"User-Agent", "kube-scheduler/v1.35.5"}})));
}

TEST(Match, AnyEntryOfAKeyMayMatch) {
  Match match = verbs({"get", "create"});
  EXPECT_TRUE(match.matches(bind()));
  EXPECT_FALSE(match.matches(make_request("GET", "/api/v1/pods")));  // that is a list
}

TEST(Match, ConnectAndStarVerbs) {
  Request exec = make_request("GET", "/api/v1/namespaces/a/pods/b/exec?command=sh");
  EXPECT_TRUE(verbs({"connect"}).matches(exec));
  EXPECT_FALSE(verbs({"connect"}).matches(bind()));
  EXPECT_TRUE(verbs({"*"}).matches(bind()));
}

TEST(Match, PathsAndHeaders) {
  Match readyz;
  readyz.paths = {"/readyz*"};
  EXPECT_TRUE(readyz.matches(make_request("GET", "/readyz?verbose")));
  EXPECT_FALSE(readyz.matches(make_request("GET", "/livez")));
  auto header = [](std::string name, std::string value) {
    Match match;
    match.headers.push_back({std::move(name), std::move(value)});
    return match;
  };
  EXPECT_TRUE(header("x-test", "y*").matches(bind()));
  EXPECT_FALSE(header("x-test", "no").matches(bind()));
  EXPECT_FALSE(header("x-absent", "*").matches(bind()));
}

}  // namespace
}  // namespace faultline::faults
