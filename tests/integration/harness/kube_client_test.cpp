// KubeClient against a real kube-apiserver: the local stack without scheduler and proxy
// (etcd, kube-apiserver, kwok), started once for this test program in a temporary run dir.
#include "faultline/harness/kube_client.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <mutex>
#include <thread>

#include "local_stack.hpp"

namespace faultline::harness {
namespace {

namespace json = boost::json;

testing::LocalStackEnvironment* g_api = nullptr;

class KubeClientTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(g_api->stack.started()) << "the local stack did not start:\n" << g_api->stack.log();
        KubeClientOptions o;
        o.cluster = net::load_kubeconfig(g_api->stack.var("FAULTLINE_ADMIN_KUBECONFIG"));
        client = std::make_unique<KubeClient>(o);
        ns = "kube-client-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
        for (auto& c : ns) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        client->create("/api/v1/namespaces", json::object{{"apiVersion", "v1"}, {"kind", "Namespace"},
                                                          {"metadata", {{"name", ns}}}});
    }
    json::value config_map(const std::string& name, const std::string& label = "x") {
        return json::object{{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                            {"metadata", {{"name", name}, {"labels", {{"group", label}}}}},
                            {"data", {{"k", "v"}}}};
    }
    std::string collection() const { return "/api/v1/namespaces/" + ns + "/configmaps"; }
    std::unique_ptr<KubeClient> client;
    std::string ns;
};

TEST_F(KubeClientTest, CreateGetPatchDelete) {
    json::value created = client->create(collection(), config_map("one"));
    EXPECT_EQ(created.at("metadata").at("name").as_string(), "one");
    auto got = client->get(collection() + "/one");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->at("data").at("k").as_string(), "v");
    json::value patched = client->patch(collection() + "/one", json::object{{"data", {{"k", "w"}}}});
    EXPECT_EQ(patched.at("data").at("k").as_string(), "w");
    EXPECT_TRUE(client->remove(collection() + "/one"));
    EXPECT_FALSE(client->remove(collection() + "/one"));
    EXPECT_FALSE(client->get(collection() + "/one"));
}

TEST_F(KubeClientTest, CreatingTwiceIsAnApiErrorWithTheReason) {
    client->create(collection(), config_map("dup"));
    try {
        client->create(collection(), config_map("dup"));
        FAIL() << "the second create must fail";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 409);
        EXPECT_EQ(e.reason, "AlreadyExists");
    }
}

TEST_F(KubeClientTest, ListFollowsContinueTokensAcrossPages) {
    for (int i = 0; i < 25; ++i) client->create(collection(), config_map("cm-" + std::to_string(i), i % 5 == 0 ? "five" : "x"));
    ListResult all = client->list(collection(), {}, 10);
    EXPECT_EQ(all.items.size(), 25u);  // three pages of at most 10
    EXPECT_FALSE(all.resourceVersion.empty());
    EXPECT_EQ(client->list(collection(), "group=five", 2).items.size(), 5u);
}

TEST_F(KubeClientTest, WatchDeliversEventsFromTheResourceVersion) {
    ListResult start = client->list(collection());
    std::atomic<bool> stop{false};
    std::vector<std::string> seen;
    std::mutex m;
    std::thread watcher([&] {
        client->watch(collection(), start.resourceVersion, [&](const WatchEvent& ev) {
            std::lock_guard lock(m);
            if (ev.type != "BOOKMARK") seen.push_back(ev.type + " " + std::string(ev.object.at("metadata").at("name").as_string()));
        }, stop);
    });
    client->create(collection(), config_map("watched"));
    client->remove(collection() + "/watched");
    for (int i = 0; i < 100; ++i) {
        {
            std::lock_guard lock(m);
            if (seen.size() >= 2) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    stop = true;
    watcher.join();
    std::lock_guard lock(m);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0], "ADDED watched");
    EXPECT_EQ(seen[1], "DELETED watched");
}

TEST_F(KubeClientTest, ConcurrentCallsShareThePool) {
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 10; ++i) {
                client->create(collection(), config_map("c-" + std::to_string(t) + "-" + std::to_string(i)));
                ++ok;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok.load(), 80);
    EXPECT_EQ(client->list(collection()).items.size(), 80u);
    EXPECT_TRUE(client->retries().empty());  // nothing transient against a healthy apiserver
}

}  // namespace
}  // namespace faultline::harness

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    faultline::harness::g_api =
        new faultline::testing::LocalStackEnvironment("faultline-kube-client", "--no-scheduler --nodes 0");
    ::testing::AddGlobalTestEnvironment(faultline::harness::g_api);
    return RUN_ALL_TESTS();
}
