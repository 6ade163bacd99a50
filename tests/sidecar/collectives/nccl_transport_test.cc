// Naming NCCL's transport from its INFO log: IB with and without GPUDirect, RoCE, the socket
// fallback, one node's P2P/SHM/NVLS, several per-process files merged, and garbage. The samples
// are written from NCCL 2.18-2.28's format strings, not pasted from real logs.
#include "sidecar/collectives/nccl_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace ringleader::collectives {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// One INFO line as NCCL's logger prints it: "<host>:<pid>:<tid> [<dev>] NCCL INFO <message>".
std::string Info(std::string_view host, int pid, int dev, std::string_view message) {
  return std::string(host) + ":" + std::to_string(pid) + ":" + std::to_string(pid + 40) + " [" +
         std::to_string(dev) + "] NCCL INFO " + std::string(message) + "\n";
}

// Two nodes, two GPUs each, one process per GPU, eight HCAs listed of which rank 0/1 and 2/3
// use mlx5_0 and mlx5_3 with GPUDirect RDMA; NVLink inside a node.
std::string TwoNodesOverIb() {
  std::string log;
  const std::string hcas =
      "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB "
      "eth0:10.10.0.11<0>";
  log += Info("gpu-a", 3101, 0, "NCCL version 2.21.5+cuda12.4");
  for (const auto& [host, pid] : {std::pair{"gpu-a", 3101}, {"gpu-a", 3102}, {"gpu-b", 4101},
                                  {"gpu-b", 4102}}) {
    log += Info(host, pid, pid % 2 == 0 ? 1 : 0, hcas);
    log += Info(host, pid, pid % 2 == 0 ? 1 : 0, "Using network IB");
  }
  log += Info("gpu-a", 3101, 0, "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read");
  log += Info("gpu-a", 3101, 0, "Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read");
  log += Info("gpu-b", 4101, 0, "Channel 00/0 : 2[0] -> 3[1] via P2P/CUMEM/read");
  // Each NET connection is logged by both ends: counted once.
  log += Info("gpu-a", 3102, 1, "Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0/GDRDMA");
  log += Info("gpu-b", 4101, 0, "Channel 00/0 : 1[1] -> 2[0] [receive] via NET/IB/0/GDRDMA");
  log += Info("gpu-b", 4102, 1, "Channel 01/0 : 3[1] -> 0[0] [send] via NET/IB/3/GDRDMA");
  log += Info("gpu-a", 3101, 0, "Channel 01/0 : 3[1] -> 0[0] [receive] via NET/IB/3/GDRDMA");
  log += Info("gpu-a", 3101, 0, "Connected all rings");
  return log;
}

TEST(NcclTransportTest, IbWithGpuDirectNamesTheHcasTheChannelsUsed) {
  const NcclTransportSummary summary = SummariseNcclDebugText(TwoNodesOverIb());

  EXPECT_EQ(summary.nccl_version, "2.21.5+cuda12.4");
  EXPECT_EQ(summary.network, "IB");
  EXPECT_THAT(summary.networks, ElementsAre("IB"));
  EXPECT_EQ(summary.processes, 4);
  EXPECT_EQ(summary.socket_processes, 0);
  EXPECT_THAT(summary.ib_devices, ElementsAre(NcclIbDevice{"mlx5_0", 1, "IB"},
                                              NcclIbDevice{"mlx5_3", 1, "IB"}));
  EXPECT_TRUE(summary.gpudirect_rdma);
  EXPECT_THAT(summary.connections,
              ElementsAre(Pair("NET/IB/GDRDMA", 2), Pair("P2P/CUMEM/read", 3)));
  EXPECT_EQ(summary.NetConnections(), 2);
  EXPECT_FALSE(summary.truncated);
  EXPECT_EQ(NcclTransportLabel(summary), "NET/IB (mlx5_0:1, mlx5_3:1, GDRDMA) + P2P/CUMEM/read");
  EXPECT_EQ(RdmaFallbackReason(summary, /*asked_for_rdma=*/true), std::nullopt);
}

TEST(NcclTransportTest, RoceWithoutGpuDirectAndNewerPrefixes) {
  // 2.26+ names the plugin with "Assigned NET plugin"; a timestamp may lead the line; PXN sends
  // through a proxy rank ("/1(3)") and p2p connectors share buffers ("/Shared").
  std::string log;
  log += "[2025-03-04 10:00:00] roce-1:700:720 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE "
         "[1]mlx5_1:1/RoCE ; OOB ens1f0:192.168.5.1<0>\n";
  log += "[2025-03-04 10:00:00] roce-1:700:720 [0] NCCL INFO Assigned NET plugin IB to comm\n";
  log += Info("roce-1", 700, 0, "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0");
  log += Info("roce-1", 700, 0, "Channel 01/1 : 0[0] -> 1[0] [send] via NET/IB/1(3)/Shared");
  log += Info("roce-1", 700, 0, "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0");

  const NcclTransportSummary summary = SummariseNcclDebugText(log);

  EXPECT_EQ(summary.network, "IB");
  EXPECT_FALSE(summary.gpudirect_rdma);
  EXPECT_THAT(summary.ib_devices, ElementsAre(NcclIbDevice{"mlx5_0", 1, "RoCE"},
                                              NcclIbDevice{"mlx5_1", 1, "RoCE"}));
  EXPECT_THAT(summary.connections, ElementsAre(Pair("NET/IB", 3)));
  EXPECT_EQ(NcclTransportLabel(summary), "NET/IB (mlx5_0:1/RoCE, mlx5_1:1/RoCE)");
  // RDMA without GPUDirect is still RDMA: no fallback.
  EXPECT_EQ(RdmaFallbackReason(summary, /*asked_for_rdma=*/true), std::nullopt);
}

TEST(NcclTransportTest, ExtNetPluginAndPcieGpuDirectCountAsIb) {
  std::string log;
  log += Info("h1", 10, 0, "NET/IB : Using [0]ibp0:1/IB/SHARP [1]{mlx5_4:1/IB, mlx5_5:1/IB} [RO]; "
                           "OOB eth0:10.7.0.2<0>");
  log += Info("h1", 10, 0, "Using network IBext_v8");
  log += Info("h1", 10, 0, "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IBext_v8/1/GDRDMA(PCI)");

  const NcclTransportSummary summary = SummariseNcclDebugText(log);

  EXPECT_EQ(summary.network, "IBext_v8");
  EXPECT_THAT(summary.ib_devices, ElementsAre(NcclIbDevice{"mlx5_4", 1, "IB"},
                                              NcclIbDevice{"mlx5_5", 1, "IB"}));
  EXPECT_EQ(NcclTransportLabel(summary), "NET/IBext_v8 (mlx5_4:1, mlx5_5:1, GDRDMA)");
}

// What a job that asked for RDMA gets when the container sees no HCA.
std::string SocketFallback() {
  std::string log;
  log += Info("pod-0", 55, 0, "NCCL version 2.23.4+cuda12.6");
  log += Info("pod-0", 55, 0, "NET/IB : No device found.");
  log += Info("pod-0", 55, 0, "NET/Socket : Using [0]eth0:10.1.2.3<0> [1]net1:fe80::5%net1<0>");
  log += Info("pod-0", 55, 0, "Using network Socket");
  log += Info("pod-0", 55, 0, "Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0");
  log += Info("pod-0", 55, 0, "Channel 01/0 : 0[0] -> 1[0] [send] via NET/Socket/0");
  log += Info("pod-0", 55, 0, "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0");
  return log;
}

TEST(NcclTransportTest, SocketFallbackNamesTheInterface) {
  const NcclTransportSummary summary = SummariseNcclDebugText(SocketFallback());

  EXPECT_EQ(summary.network, "Socket");
  EXPECT_TRUE(summary.ib_found_no_device);
  EXPECT_TRUE(summary.ib_devices.empty());
  EXPECT_THAT(summary.socket_interfaces, ElementsAre(NcclSocketInterface{"eth0", "10.1.2.3"}));
  EXPECT_THAT(summary.connections, ElementsAre(Pair("NET/Socket", 3)));
  EXPECT_EQ(summary.socket_processes, 1);
  EXPECT_EQ(NcclTransportLabel(summary), "NET/Socket (eth0)");
}

TEST(NcclTransportTest, AskedForRdmaButGotSocketsIsReported) {
  const NcclTransportSummary summary = SummariseNcclDebugText(SocketFallback());

  const std::optional<std::string> reason = RdmaFallbackReason(summary, /*asked_for_rdma=*/true);
  ASSERT_TRUE(reason.has_value());
  EXPECT_THAT(*reason, HasSubstr("NET/Socket over eth0"));
  EXPECT_THAT(*reason, HasSubstr("1 of 1 processes"));
  EXPECT_THAT(*reason, HasSubstr("NET/IB found no device"));
  EXPECT_EQ(RdmaFallbackReason(summary, /*asked_for_rdma=*/false), std::nullopt);
}

TEST(NcclTransportTest, SocketsWithoutAnyIbLineSayNoDeviceWasListed) {
  std::string log;
  log += Info("pod-0", 55, 0, "NET/Socket : Using [0]eth0:10.1.2.3<0>");
  log += Info("pod-0", 55, 0, "Using network Socket");

  const std::optional<std::string> reason =
      RdmaFallbackReason(SummariseNcclDebugText(log), /*asked_for_rdma=*/true);
  ASSERT_TRUE(reason.has_value());
  EXPECT_THAT(*reason, HasSubstr("NCCL listed no IB device"));
}

TEST(NcclTransportTest, SingleNodeNamesP2pShmAndNvlsButNoNet) {
  // One process driving four GPUs (P2P/direct pointer) plus two processes on a PCIe-only pair
  // (IPC, and SHM in the older "Channel NN :" form). NCCL still picks a network at init.
  std::string log;
  log += Info("dgx", 9, 0, "NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.9<0>");
  log += Info("dgx", 9, 0, "Using network IB");
  log += Info("dgx", 9, 0, "NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)");
  log += Info("dgx", 9, 0, "NVLS comm 0x5600 headRank 0 nHeads 4 nvlsRanks 4 buffSize 1048576 "
                           "nvlsPerRankSize 201326592 nvlsTotalSize 805306368");
  for (int channel = 0; channel < 3; ++channel) {
    log += Info("dgx", 9, 0, "Channel 0" + std::to_string(channel) +
                                 "/0 : 0[0] -> 1[1] via P2P/direct pointer/read");
  }
  log += Info("dgx", 9, 1, "Channel 00/0 : 1[1] -> 2[2] via P2P/direct pointer");
  log += Info("pcie", 21, 0, "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/CE");
  log += Info("pcie", 22, 1, "Channel 00 : 1[1] -> 0[0] via SHM/direct/direct");
  log += Info("pcie", 22, 1, "Channel 01 : 1[1] -> 0[0] via SHM/CE/direct");

  const NcclTransportSummary summary = SummariseNcclDebugText(log);

  EXPECT_TRUE(summary.nvls_available);
  EXPECT_TRUE(summary.nvls_used);
  EXPECT_EQ(summary.NetConnections(), 0);
  EXPECT_THAT(summary.connections,
              ElementsAre(Pair("P2P/IPC/CE", 1), Pair("P2P/direct", 1), Pair("P2P/direct/read", 3),
                          Pair("SHM", 1), Pair("SHM/CE", 1)));
  EXPECT_EQ(NcclTransportLabel(summary), "P2P/direct/read + P2P/IPC/CE + NVLS");
  // A job alone on one node never touched the network: nothing to alert on.
  EXPECT_EQ(RdmaFallbackReason(summary, /*asked_for_rdma=*/true), std::nullopt);
}

TEST(NcclTransportTest, WithoutChannelLinesTheChosenNetworkIsTheLabel) {
  std::string log;
  log += Info("n", 1, 0, "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>");
  log += Info("n", 1, 0, "Using network IB");

  EXPECT_EQ(NcclTransportLabel(SummariseNcclDebugText(log)), "NET/IB (mlx5_0:1, mlx5_1:1)");
}

class NcclTransportFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("nccl_transport_test." + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }

  std::filesystem::path dir_;
};

TEST_F(NcclTransportFilesTest, PerProcessFilesAreMergedAndOneSocketFallbackIsReported) {
  // NCCL_DEBUG_FILE=<dir>/nccl.%h.%p: one file per process. gpu-b lost its HCAs.
  std::string a;
  a += Info("gpu-a", 3101, 0,
            "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>");
  a += Info("gpu-a", 3101, 0, "Using network IB");
  a += Info("gpu-a", 3101, 0, "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/1/GDRDMA");
  std::string b;
  b += Info("gpu-b", 4101, 0, "NET/IB : No device found.");
  b += Info("gpu-b", 4101, 0, "NET/Socket : Using [0]eth0:10.0.0.2<0>");
  b += Info("gpu-b", 4101, 0, "Using network Socket");
  b += Info("gpu-b", 4101, 0, "Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0");
  Write("nccl.gpu-a.3101", a);
  Write("nccl.gpu-b.4101", b);
  Write("summary.json", Info("gpu-c", 1, 0, "Using network Socket"));  // not an NCCL log

  const std::vector<std::filesystem::path> files = FindNcclDebugFiles(dir_, "nccl.", 16);
  ASSERT_THAT(files, ElementsAre(dir_ / "nccl.gpu-a.3101", dir_ / "nccl.gpu-b.4101"));
  const NcclTransportSummary summary = SummariseNcclDebugFiles(files);

  EXPECT_THAT(summary.networks, ElementsAre("IB", "Socket"));
  EXPECT_EQ(summary.processes, 2);
  EXPECT_EQ(summary.socket_processes, 1);
  EXPECT_THAT(summary.ib_devices, ElementsAre(NcclIbDevice{"mlx5_1", 1, "IB"}));
  EXPECT_EQ(NcclTransportLabel(summary), "NET/IB (mlx5_1:1, GDRDMA) + NET/Socket (eth0)");
  const std::optional<std::string> reason = RdmaFallbackReason(summary, /*asked_for_rdma=*/true);
  ASSERT_TRUE(reason.has_value());
  EXPECT_THAT(*reason, HasSubstr("in 1 of 2 processes"));
}

TEST_F(NcclTransportFilesTest, LinesWithoutAPrefixBelongToTheirFile) {
  // Two files whose lines carry no host:pid (a wrapper stripped it) are two processes still.
  Write("nccl.0",
        "NCCL INFO Using network Socket\nNCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n");
  Write("nccl.1", "NCCL INFO Using network IB\n");

  const NcclTransportSummary summary =
      SummariseNcclDebugFiles(FindNcclDebugFiles(dir_, "nccl.", 16));

  EXPECT_EQ(summary.processes, 2);
  EXPECT_EQ(summary.socket_processes, 1);
}

TEST_F(NcclTransportFilesTest, MissingFilesAndTooManyFilesSetTruncated) {
  Write("nccl.a", SocketFallback());
  Write("nccl.b", SocketFallback());
  NcclLogLimits limits;
  limits.max_files = 1;

  EXPECT_THAT(FindNcclDebugFiles(dir_, "nccl.", 1), ElementsAre(dir_ / "nccl.a"));
  EXPECT_TRUE(SummariseNcclDebugFiles({dir_ / "nccl.a", dir_ / "nccl.b"}, limits).truncated);
  const NcclTransportSummary missing = SummariseNcclDebugFiles({dir_ / "nope", dir_ / "nccl.a"});
  EXPECT_TRUE(missing.truncated);
  EXPECT_EQ(missing.network, "Socket");
  EXPECT_TRUE(FindNcclDebugFiles(dir_ / "no-such-dir", "nccl.", 16).empty());
}

TEST(NcclTransportTest, ChunkBoundariesDoNotMatter) {
  const std::string log = TwoNodesOverIb();
  NcclLogParser parser;
  for (char c : log) {
    parser.Feed(std::string_view(&c, 1), "stdout");
  }
  parser.EndSource();

  const NcclTransportSummary whole = SummariseNcclDebugText(log);
  const NcclTransportSummary bytes = parser.Summary();
  EXPECT_EQ(NcclTransportLabel(bytes), NcclTransportLabel(whole));
  EXPECT_EQ(bytes.connections, whole.connections);
  EXPECT_EQ(bytes.lines, whole.lines);
}

TEST(NcclTransportTest, GarbageIsIgnoredAndWhatFollowsStillCounts) {
  std::string log;
  log += Info("h", 1, 0, "Channel");
  log += Info("h", 1, 0, "Channel 00/0 : 0[0] -> ");
  log += Info("h", 1, 0, "Channel 99999999999999/0 : 0[0] -> 1[1] via P2P/CUMEM");
  log += Info("h", 1, 0, "Channel 00/0 : 0[0 -> 1[1] via P2P/CUMEM");
  log += Info("h", 1, 0, "Channel 00/0 : 0[0] -> 1[1] via NET/");
  log += Info("h", 1, 0, "Channel 00/0 : 0[0] -> 1[1] via NET/IB/x/GDRDMA");
  log += Info("h", 1, 0, "Channel 00/0 : 0[0] -> 1[1] via P2P/4");
  log += Info("h", 1, 0, "Channel 00 : 0[0] -> 1[1] via SHM/direct");
  log += Info("h", 1, 0, "Channel 00/0 : 0[0] -> 1[1] via TELEPATHY/1");
  log += Info("h", 1, 0, "NET/IB : Using [ [x]mlx5_0 [0] [1]:1/IB [2]mlx5_2:/IB [3]mlx5_3:1 {}");
  log += Info("h", 1, 0, "NET/Socket : Using [0]eth0 [1]:<0> [2]eth1:10.0.0.1");
  log += Info("h", 1, 0, "Using network ");
  log += Info("h", 1, 0, "Using network bad\x01name");
  log += Info("h", 1, 0, "NCCL version ");
  log += "NCCL INFO\n\n\r\n:::: [ NCCL INFO NCCL INFO\n";
  log += std::string(100000, 'x') + " NCCL INFO Using network Socket\n";  // one over-long line
  std::mt19937 random(17);
  for (int i = 0; i < 20000; ++i) {
    log.push_back(static_cast<char>(random() % 256));
  }
  log += "\n";

  const NcclTransportSummary garbage = SummariseNcclDebugText(log);
  EXPECT_TRUE(garbage.connections.empty());
  EXPECT_TRUE(garbage.networks.empty());
  EXPECT_TRUE(garbage.ib_devices.empty());
  EXPECT_TRUE(garbage.socket_interfaces.empty());
  EXPECT_TRUE(garbage.nccl_version.empty());
  EXPECT_TRUE(garbage.truncated);  // the over-long line
  EXPECT_EQ(NcclTransportLabel(garbage), "");
  EXPECT_EQ(RdmaFallbackReason(garbage, /*asked_for_rdma=*/true), std::nullopt);

  const NcclTransportSummary recovered = SummariseNcclDebugText(log + SocketFallback());
  EXPECT_EQ(NcclTransportLabel(recovered), "NET/Socket (eth0)");
}

TEST(NcclTransportTest, TheByteCapDropsTheLineItCut) {
  // Regression guard: a cap that ends mid-line must not turn "Using network IB" into network "I".
  const std::string line = Info("h", 1, 0, "Using network IB");
  NcclLogLimits limits;
  limits.max_bytes_per_file = line.size() - 2;

  const NcclTransportSummary summary = SummariseNcclDebugText(line + line, limits);
  EXPECT_TRUE(summary.truncated);
  EXPECT_TRUE(summary.networks.empty());
}

TEST(NcclTransportTest, EmptyInputSaysNothing) {
  const NcclTransportSummary summary = SummariseNcclDebugText("");
  EXPECT_EQ(summary.lines, 0u);
  EXPECT_FALSE(summary.truncated);
  EXPECT_EQ(NcclTransportLabel(summary), "");
  EXPECT_EQ(RdmaFallbackReason(summary, /*asked_for_rdma=*/true), std::nullopt);
}

TEST(NcclTransportTest, ManyDevicesAreElidedInTheLabel) {
  std::string list = "NET/IB : Using";
  for (int i = 0; i < 8; ++i) {
    list += " [" + std::to_string(i) + "]mlx5_" + std::to_string(i) + ":1/IB";
  }
  std::string log = Info("h", 1, 0, list + " [RO]; OOB eth0:10.0.0.1<0>");
  log += Info("h", 1, 0, "Using network IB");

  EXPECT_EQ(NcclTransportLabel(SummariseNcclDebugText(log)),
            "NET/IB (mlx5_0:1, mlx5_1:1, mlx5_2:1, mlx5_3:1, +4 more)");
}

}  // namespace
}  // namespace ringleader::collectives
