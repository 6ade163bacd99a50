// The PET_* half of the trainer env contract, through BuildPod: the values torchrun reads as the
// defaults of --nnodes, --node-rank, --nproc-per-node, --master-addr and --master-port, and how
// they agree with the env:// variables of the same Pod.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "operator/planner/pod_builder.h"
#include "tests/operator/planner/fake_cluster.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using testing::EnvValue;
using testing::MinimalJob;

const api::JobPorts kPorts = {.master = 61040, .rendezvous = 61041, .metrics = 61042, .spare = 61043};

struct PetCase {
  std::string name = {};
  std::function<void(json& job)> edit = {};  // on MinimalJob("train", replicas)
  int replicas = 2;
  std::int64_t rank = 0;
  std::string cluster_domain = "cluster.local";
  // Expected.
  std::string nnodes = {};
  std::string node_rank = {};
  std::string nproc_per_node = {};
  std::string master_addr = {};
};

json Pod(const PetCase& c) {
  json object = MinimalJob("train", c.replicas);
  object["metadata"]["uid"] = "job-uid-1";
  if (c.edit) {
    c.edit(object);
  }
  api::FieldErrors errors;
  const api::TrainingJob job = api::TrainingJob::FromJson(object, &errors);
  EXPECT_TRUE(errors.empty()) << api::JoinErrors(errors);
  PlannerConfig config;
  config.cluster_domain = c.cluster_domain;
  return BuildPod(job, c.rank, 0, kPorts, config);
}

TEST(PetEnvTest, TorchrunsDefaultsNameTheJobsNodesRankProcessesAndRankZero) {
  const std::vector<PetCase> cases = {
      {.name = "cpu job, one process per Pod",
       .replicas = 4, .rank = 2, .cluster_domain = "cluster.local",
       .nnodes = "4", .node_rank = "2", .nproc_per_node = "1",
       .master_addr = "train-0.train.default.svc.cluster.local"},
      {.name = "rank 0 names itself as the master",
       .replicas = 3, .rank = 0, .cluster_domain = "cluster.local",
       .nnodes = "3", .node_rank = "0", .nproc_per_node = "1",
       .master_addr = "train-0.train.default.svc.cluster.local"},
      {.name = "one process per GPU",
       .edit = [](json& job) { job["spec"]["gpusPerReplica"] = 8; },
       .replicas = 2, .rank = 1, .cluster_domain = "cluster.local",
       .nnodes = "2", .node_rank = "1", .nproc_per_node = "8",
       .master_addr = "train-0.train.default.svc.cluster.local"},
      {.name = "processesPerReplica beats the GPU count",
       .edit = [](json& job) {
         job["spec"]["gpusPerReplica"] = 8;
         job["spec"]["processesPerReplica"] = 1;
       },
       .replicas = 2, .rank = 1, .cluster_domain = "cluster.local",
       .nnodes = "2", .node_rank = "1", .nproc_per_node = "1",
       .master_addr = "train-0.train.default.svc.cluster.local"},
      {.name = "cpu processes per Pod",
       .edit = [](json& job) { job["spec"]["processesPerReplica"] = 4; },
       .replicas = 5, .rank = 4, .cluster_domain = "cluster.local",
       .nnodes = "5", .node_rank = "4", .nproc_per_node = "4",
       .master_addr = "train-0.train.default.svc.cluster.local"},
      {.name = "the job's namespace and the cluster's domain",
       .edit = [](json& job) { job["metadata"]["namespace"] = "ml"; },
       .replicas = 2, .rank = 1, .cluster_domain = "corp.example",
       .nnodes = "2", .node_rank = "1", .nproc_per_node = "1",
       .master_addr = "train-0.train.ml.svc.corp.example"},
      {.name = "hostNetwork keeps rank 0's DNS name (ClusterFirstWithHostNet resolves it)",
       .edit = [](json& job) { job["spec"]["networking"] = {{"hostNetwork", true}}; },
       .replicas = 2, .rank = 1, .cluster_domain = "cluster.local",
       .nnodes = "2", .node_rank = "1", .nproc_per_node = "1",
       .master_addr = "train-0.train.default.svc.cluster.local"},
  };
  for (const PetCase& c : cases) {
    SCOPED_TRACE(c.name);
    const json pod = Pod(c);
    const json& trainer = pod["spec"]["containers"][0];
    EXPECT_EQ(EnvValue(trainer, "PET_NNODES"), c.nnodes);
    EXPECT_EQ(EnvValue(trainer, "PET_NODE_RANK"), c.node_rank);
    EXPECT_EQ(EnvValue(trainer, "PET_NPROC_PER_NODE"), c.nproc_per_node);
    EXPECT_EQ(EnvValue(trainer, "PET_MASTER_ADDR"), c.master_addr);
    EXPECT_EQ(EnvValue(trainer, "PET_MASTER_PORT"), "61040");
  }
}

// torchrun sets each worker's MASTER_ADDR, MASTER_PORT, NODE_RANK, LOCAL_WORLD_SIZE and
// WORLD_SIZE (nnodes x nproc_per_node) from its PET_* defaults: a job must see the same numbers
// whether it starts with torchrun or reads env:// directly.
TEST(PetEnvTest, PetValuesAgreeWithTheEnvContractTorchrunWouldDeriveFromThem) {
  struct Shape {
    int gpus;       // spec.gpusPerReplica; 0 leaves it out
    int processes;  // spec.processesPerReplica; 0 leaves it out
  };
  for (const Shape shape : {Shape{0, 0}, Shape{0, 3}, Shape{4, 0}, Shape{8, 2}}) {
    SCOPED_TRACE("gpusPerReplica " + std::to_string(shape.gpus) + ", processesPerReplica " +
                 std::to_string(shape.processes));
    const PetCase c = {.name = "",
                       .edit =
                           [shape](json& job) {
                             if (shape.gpus > 0) {
                               job["spec"]["gpusPerReplica"] = shape.gpus;
                             }
                             if (shape.processes > 0) {
                               job["spec"]["processesPerReplica"] = shape.processes;
                             }
                           },
                       .replicas = 3,
                       .rank = 2,
                       .cluster_domain = "cluster.local"};
    const json pod = Pod(c);
    const json& trainer = pod["spec"]["containers"][0];
    EXPECT_EQ(EnvValue(trainer, "PET_MASTER_ADDR"), EnvValue(trainer, "MASTER_ADDR"));
    EXPECT_EQ(EnvValue(trainer, "PET_MASTER_PORT"), EnvValue(trainer, "MASTER_PORT"));
    EXPECT_EQ(EnvValue(trainer, "PET_NODE_RANK"), EnvValue(trainer, "NODE_RANK"));
    EXPECT_EQ(EnvValue(trainer, "PET_NPROC_PER_NODE"), EnvValue(trainer, "LOCAL_WORLD_SIZE"));
    EXPECT_EQ(std::stoi(EnvValue(trainer, "PET_NNODES")) * std::stoi(EnvValue(trainer, "PET_NPROC_PER_NODE")),
              std::stoi(EnvValue(trainer, "WORLD_SIZE")));
  }
}

TEST(PetEnvTest, EveryRankGetsItsOwnNodeRankAndTheSameMasterAndSize) {
  constexpr int kReplicas = 4;
  std::set<std::string> node_ranks;
  std::set<std::string> shared;
  for (std::int64_t rank = 0; rank < kReplicas; ++rank) {
    const json pod = Pod({.name = "", .replicas = kReplicas, .rank = rank, .cluster_domain = "cluster.local"});
    const json& trainer = pod["spec"]["containers"][0];
    node_ranks.insert(EnvValue(trainer, "PET_NODE_RANK"));
    shared.insert(EnvValue(trainer, "PET_MASTER_ADDR") + " " + EnvValue(trainer, "PET_MASTER_PORT") + " " +
                  EnvValue(trainer, "PET_NNODES") + " " + EnvValue(trainer, "PET_NPROC_PER_NODE"));
  }
  EXPECT_EQ(node_ranks, (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(shared, (std::set<std::string>{"train-0.train.default.svc.cluster.local 61040 4 1"}));
}

TEST(PetEnvTest, EveryTrainerContainerOfAPodGetsThePetValues) {
  const json pod = Pod({.name = "",
                        .edit =
                            [](json& job) {
                              job["spec"]["template"]["spec"]["containers"].push_back(
                                  {{"name", "data-loader"}, {"image", "example/loader:1"}});
                            },
                        .replicas = 2,
                        .rank = 1,
                        .cluster_domain = "cluster.local"});
  ASSERT_EQ(pod["spec"]["containers"].size(), 2u);
  for (const char* name : {"PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_MASTER_ADDR", "PET_MASTER_PORT"}) {
    EXPECT_EQ(EnvValue(pod["spec"]["containers"][1], name), EnvValue(pod["spec"]["containers"][0], name)) << name;
    EXPECT_NE(EnvValue(pod["spec"]["containers"][1], name), "<unset>") << name;
  }
  // Ringleader's own containers are not torchrun's: they get none.
  for (const json& init : pod["spec"]["initContainers"]) {
    EXPECT_EQ(EnvValue(init, "PET_MASTER_PORT"), "<unset>") << init["name"];
  }
}

}  // namespace
}  // namespace ringleader::planner
