// The records cluster DNS answers for headless Services, from Services and EndpointSlices as the
// EndpointSlice controller writes them, and the file written in place.
#include "tests/devcluster/kubelet/hosts_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "tests/support/test_environment.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

json Service(const std::string& name, bool headless, bool publish_not_ready) {
  json spec = {{"clusterIP", headless ? "None" : "10.96.0.7"}, {"selector", {{"job", name}}}};
  if (publish_not_ready) {
    spec["publishNotReadyAddresses"] = true;
  }
  return {{"metadata", {{"name", name}, {"namespace", "ml"}}}, {"spec", spec}};
}

json Endpoint(const std::string& ip, const std::string& hostname, std::optional<bool> ready) {
  json endpoint = {{"addresses", {ip}}, {"conditions", json::object()}};
  if (!hostname.empty()) {
    endpoint["hostname"] = hostname;
  }
  if (ready) {
    endpoint["conditions"]["ready"] = *ready;
  }
  return endpoint;
}

json Slice(const std::string& service, const json& endpoints, const std::string& type = "IPv4") {
  return {{"metadata",
           {{"name", service + "-abcde"}, {"namespace", "ml"}, {"labels", {{"kubernetes.io/service-name", service}}}}},
          {"addressType", type},
          {"endpoints", endpoints}};
}

std::vector<std::string> Lines(const std::vector<HostEntry>& entries) {
  std::vector<std::string> lines;
  for (const HostEntry& entry : entries) {
    lines.push_back(entry.ip + " " + entry.name);
  }
  return lines;
}

TEST(ClusterHostEntriesTest, AHeadlessServiceNamesItsEndpointsByHostnameAndItself) {
  const auto entries = ClusterHostEntries(
      {Service("job", true, false)},
      {Slice("job", json::array({Endpoint("10.200.0.3", "job-0", true),
                                 Endpoint("10.200.0.4", "job-1", std::nullopt)}))});
  EXPECT_EQ(Lines(entries), (std::vector<std::string>{"10.200.0.3 job-0.job.ml.svc.cluster.local",
                                                      "10.200.0.4 job-1.job.ml.svc.cluster.local",
                                                      "10.200.0.3 job.ml.svc.cluster.local",
                                                      "10.200.0.4 job.ml.svc.cluster.local"}));
}

TEST(ClusterHostEntriesTest, NotReadyEndpointsCountOnlyWhenTheServicePublishesThem) {
  const json slice = Slice("job", json::array({Endpoint("10.200.0.3", "job-0", false)}));
  EXPECT_TRUE(ClusterHostEntries({Service("job", true, false)}, {slice}).empty());
  EXPECT_EQ(Lines(ClusterHostEntries({Service("job", true, true)}, {slice})),
            (std::vector<std::string>{"10.200.0.3 job-0.job.ml.svc.cluster.local",
                                      "10.200.0.3 job.ml.svc.cluster.local"}));
}

TEST(ClusterHostEntriesTest, ServicesWithAClusterIpOtherNamespacesAndIpv6SlicesGiveNoRecords) {
  const json endpoints = json::array({Endpoint("10.200.0.3", "job-0", true)});
  EXPECT_TRUE(ClusterHostEntries({Service("job", false, false)}, {Slice("job", endpoints)}).empty());
  json elsewhere = Slice("job", endpoints);
  elsewhere["metadata"]["namespace"] = "other";
  EXPECT_TRUE(ClusterHostEntries({Service("job", true, false)}, {elsewhere}).empty());
  EXPECT_TRUE(ClusterHostEntries({Service("job", true, false)}, {Slice("job", endpoints, "IPv6")}).empty());
  EXPECT_TRUE(ClusterHostEntries({}, {Slice("job", endpoints)}).empty()) << "a slice without its Service";
}

TEST(HostsFileTest, IsRewrittenInPlaceSoABindMountSeesTheNewContent) {
  const std::filesystem::path dir = ringleader::testing::MakeTempDir("hosts-file-test");
  HostsFile hosts(dir / "hosts");
  struct stat before {};
  ASSERT_EQ(::stat(hosts.path().c_str(), &before), 0);
  EXPECT_TRUE(hosts.Update(RenderHosts({{"10.200.0.3", "job-0.job.ml.svc.cluster.local"}})));
  EXPECT_FALSE(hosts.Update(RenderHosts({{"10.200.0.3", "job-0.job.ml.svc.cluster.local"}})));
  struct stat after {};
  ASSERT_EQ(::stat(hosts.path().c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  std::ifstream in(hosts.path());
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("127.0.0.1\tlocalhost\n"), std::string::npos);
  EXPECT_NE(text.str().find("10.200.0.3\tjob-0.job.ml.svc.cluster.local\n"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
