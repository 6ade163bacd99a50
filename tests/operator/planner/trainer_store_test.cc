// spec.communication.trainerStore through BuildPod: with Sidecar (the default) rank 0's sidecar
// serves the trainers' TCPStore on the master port and every trainer only connects; with Trainer
// the Pod is what it was before the sidecar could serve it. Both declare the same ports on every
// rank, so the scheduler's hostPort check keeps two jobs' Pods off each other's ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include "operator/planner/pod_builder.h"
#include "tests/operator/planner/fake_cluster.h"

namespace ringleader::planner {
namespace {

using nlohmann::json;
using testing::EnvValue;
using testing::MinimalJob;
using ::testing::ElementsAre;

const api::JobPorts kPorts = {.master = 61040, .rendezvous = 61041, .metrics = 61042, .spare = 61043};
constexpr char kMasterAddr[] = "train-0.train.default.svc.cluster.local";

// The names the operator adds for trainerStore Sidecar.
const std::vector<std::string> kStoreEnv = {"TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT",
                                            "PET_RDZV_BACKEND",             "PET_RDZV_ENDPOINT",
                                            "PET_RDZV_ID",                  "PET_RDZV_CONF",
                                            "PET_LOCAL_ADDR"};

struct Built {
  json pod;
  const json& Sidecar() const { return Init("ringleader-sidecar"); }
  const json& Preflight() const { return Init("ringleader-preflight"); }
  const json& Trainer(std::size_t i = 0) const { return pod["spec"]["containers"][i]; }
  const json& Init(const std::string& name) const {
    for (const json& container : pod["spec"]["initContainers"]) {
      if (container["name"] == name) {
        return container;
      }
    }
    throw std::runtime_error("no init container " + name);
  }
};

// Rank `rank`'s Pod of attempt `attempt` of a 3-rank job; `edit` changes the job's JSON first.
Built Build(std::int64_t rank, std::int64_t attempt, const std::function<void(json& job)>& edit = {},
            bool host_network = false) {
  json object = MinimalJob("train", 3);
  object["metadata"]["uid"] = "3f1c9a5e-2b7d-4e8a-9c61-0d2f4b6a8e10";
  if (host_network) {
    object["spec"]["networking"] = {{"hostNetwork", true}};
  }
  if (edit) {
    edit(object);
  }
  api::FieldErrors errors;
  const api::TrainingJob job = api::TrainingJob::FromJson(object, &errors);
  EXPECT_TRUE(errors.empty()) << api::JoinErrors(errors);
  return {BuildPod(job, rank, attempt, kPorts, PlannerConfig{})};
}

void SetTrainerStore(json& job, const std::string& who) { job["spec"]["communication"]["trainerStore"] = who; }

void SetTrainerEnv(json& job, json env) { job["spec"]["template"]["spec"]["containers"][0]["env"] = std::move(env); }

// How many entries of the container's env carry `name`.
int EnvCount(const json& container, const std::string& name) {
  int count = 0;
  for (const json& entry : container.value("env", json::array())) {
    count += entry.value("name", "") == name ? 1 : 0;
  }
  return count;
}

// The env entries whose names are not in `names`.
json Without(const json& env, const std::set<std::string>& names) {
  json kept = json::array();
  for (const json& entry : env) {
    if (!names.contains(entry["name"].get<std::string>())) {
      kept.push_back(entry);
    }
  }
  return kept;
}

// name -> containerPort of the ports the container declares.
std::map<std::string, int> Ports(const json& container) {
  std::map<std::string, int> ports;
  for (const json& port : container.value("ports", json::array())) {
    ports[port["name"]] = port["containerPort"];
  }
  return ports;
}

TEST(TrainerStoreTest, RankZerosSidecarServesTheStoreOnTheMasterPortByDefault) {
  const Built rank0 = Build(0, 0);
  EXPECT_EQ(EnvValue(rank0.Sidecar(), "RINGLEADER_TRAINER_STORE_PORT"), "61040");
  // The port trainers are told is the one the sidecar serves.
  EXPECT_EQ(EnvValue(rank0.Trainer(), "MASTER_PORT"), "61040");
  EXPECT_EQ(EnvValue(rank0.Trainer(), "PET_MASTER_PORT"), "61040");
  EXPECT_EQ(Ports(rank0.Sidecar()),
            (std::map<std::string, int>{{"rl-master", 61040}, {"rl-rendezvous", 61041}, {"rl-metrics", 61042}}));
  // The trainer binds nothing for the rendezvous.
  EXPECT_EQ(Ports(rank0.Trainer()), (std::map<std::string, int>{{"rl-spare", 61043}}));
  // Only the native sidecar serves it: the preflight exits before the trainers start.
  EXPECT_EQ(EnvValue(rank0.Preflight(), "RINGLEADER_TRAINER_STORE_PORT"), "<unset>");
}

TEST(TrainerStoreTest, OtherRanksOnlyConnectButDeclareTheSamePorts) {
  const Built rank0 = Build(0, 0);
  for (std::int64_t rank : {1, 2}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const Built other = Build(rank, 0);
    EXPECT_EQ(EnvValue(other.Sidecar(), "RINGLEADER_TRAINER_STORE_PORT"), "<unset>");
    EXPECT_EQ(Ports(other.Sidecar()), Ports(rank0.Sidecar()));
    EXPECT_EQ(Ports(other.Trainer()), Ports(rank0.Trainer()));
    for (const std::string& name : kStoreEnv) {
      EXPECT_EQ(EnvValue(other.Trainer(), name), EnvValue(rank0.Trainer(), name)) << name;
    }
  }
}

TEST(TrainerStoreTest, EveryTrainerIsAClientOfTheSidecarsStoreUnderItsAttempt) {
  for (std::int64_t attempt : {0, 3}) {
    for (std::int64_t rank : {0, 2}) {
      SCOPED_TRACE("rank " + std::to_string(rank) + ", attempt " + std::to_string(attempt));
      const Built built = Build(rank, attempt);
      const json& trainer = built.Trainer();
      const std::string attempt_text = std::to_string(attempt);
      // torch's env:// connects as a client iff this is exactly "True".
      EXPECT_EQ(EnvValue(trainer, "TORCHELASTIC_USE_AGENT_STORE"), "True");
      EXPECT_EQ(EnvValue(trainer, "TORCHELASTIC_RESTART_COUNT"), attempt_text);
      EXPECT_EQ(EnvValue(trainer, "TORCHELASTIC_RESTART_COUNT"), EnvValue(built.Sidecar(), "RINGLEADER_ATTEMPT"));
      EXPECT_EQ(EnvValue(trainer, "PET_RDZV_BACKEND"), "c10d");
      EXPECT_EQ(EnvValue(trainer, "PET_RDZV_ENDPOINT"), std::string(kMasterAddr) + ":61040");
      EXPECT_EQ(EnvValue(trainer, "PET_RDZV_ENDPOINT"),
                EnvValue(trainer, "MASTER_ADDR") + ":" + EnvValue(trainer, "MASTER_PORT"));
      EXPECT_EQ(EnvValue(trainer, "PET_RDZV_ID"), "3f1c9a5e-2b7d-4e8a-9c61-0d2f4b6a8e10-" + attempt_text);
      EXPECT_EQ(EnvValue(trainer, "PET_RDZV_CONF"), "is_host=false");
      // The agent's own address, where the rendezvous's rank 0 hosts its workers' store.
      EXPECT_EQ(EnvCount(trainer, "PET_LOCAL_ADDR"), 1);
      for (const json& entry : trainer["env"]) {
        if (entry["name"] == "PET_LOCAL_ADDR") {
          EXPECT_EQ(entry["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP");
        }
      }
    }
  }
}

TEST(TrainerStoreTest, TrainerSettingKeepsTheTrainerAsTheStoresHost) {
  const auto trainer_hosts = [](json& job) { SetTrainerStore(job, "Trainer"); };
  for (std::int64_t rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const Built built = Build(rank, 2, trainer_hosts);
    for (const std::string& name : kStoreEnv) {
      EXPECT_EQ(EnvValue(built.Trainer(), name), "<unset>") << name;
    }
    EXPECT_EQ(EnvValue(built.Sidecar(), "RINGLEADER_TRAINER_STORE_PORT"), "<unset>");
    EXPECT_EQ(EnvValue(built.Trainer(), "MASTER_PORT"), "61040");
    // As before the sidecar could serve it: the first trainer declares the master port it binds.
    EXPECT_EQ(Ports(built.Trainer()), (std::map<std::string, int>{{"rl-master", 61040}, {"rl-spare", 61043}}));
    EXPECT_EQ(Ports(built.Sidecar()), (std::map<std::string, int>{{"rl-rendezvous", 61041}, {"rl-metrics", 61042}}));
  }
  // Otherwise the same Pod: only the store's env and the master port's container differ.
  Built sidecar = Build(0, 2);
  Built trainer = Build(0, 2, trainer_hosts);
  const std::set<std::string> store_env(kStoreEnv.begin(), kStoreEnv.end());
  for (Built* built : {&sidecar, &trainer}) {
    json& pod = built->pod;
    for (json& container : pod["spec"]["containers"]) {
      container.erase("ports");
      container["env"] = Without(container["env"], store_env);
    }
    json& side = pod["spec"]["initContainers"][0];
    side.erase("ports");
    side["env"] = Without(side["env"], {"RINGLEADER_TRAINER_STORE_PORT"});
  }
  EXPECT_EQ(sidecar.pod, trainer.pod);
}

TEST(TrainerStoreTest, HostNetworkDeclaresEachJobPortOnceAsHostPortOnEveryRankWithEitherSetting) {
  for (const std::string who : {"Sidecar", "Trainer"}) {
    for (std::int64_t rank : {0, 1}) {
      SCOPED_TRACE(who + ", rank " + std::to_string(rank));
      const Built built = Build(rank, 0, [&](json& job) { SetTrainerStore(job, who); }, true);
      std::multiset<std::string> names;
      for (const json* container : {&built.Sidecar(), &built.Trainer()}) {
        for (const json& port : (*container)["ports"]) {
          EXPECT_EQ(port["hostPort"], port["containerPort"]) << port["name"];
          names.insert(port["name"]);
        }
      }
      EXPECT_EQ(names, (std::multiset<std::string>{"rl-master", "rl-metrics", "rl-rendezvous", "rl-spare"}));
      EXPECT_FALSE(built.Preflight().contains("ports"));
    }
  }
}

TEST(TrainerStoreTest, ANameTheContainerSetsItselfIsItsOwn) {
  const Built built = Build(0, 1, [](json& job) {
    SetTrainerEnv(job, json::array({{{"name", "TORCHELASTIC_RESTART_COUNT"}, {"value", "7"}},
                                    {{"name", "PET_RDZV_CONF"}, {"value", "is_host=false,join_timeout=1200"}},
                                    {{"name", "PET_RDZV_ID"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.uid"}}}}}}}));
  });
  const json& trainer = built.Trainer();
  for (const char* name : {"TORCHELASTIC_RESTART_COUNT", "PET_RDZV_CONF", "PET_RDZV_ID"}) {
    EXPECT_EQ(EnvCount(trainer, name), 1) << name;
  }
  EXPECT_EQ(EnvValue(trainer, "TORCHELASTIC_RESTART_COUNT"), "7");
  EXPECT_EQ(EnvValue(trainer, "PET_RDZV_CONF"), "is_host=false,join_timeout=1200");
  // The rest are still ringleader's.
  EXPECT_EQ(EnvValue(trainer, "TORCHELASTIC_USE_AGENT_STORE"), "True");
  EXPECT_EQ(EnvValue(trainer, "PET_RDZV_BACKEND"), "c10d");
  EXPECT_EQ(EnvValue(trainer, "PET_RDZV_ENDPOINT"), std::string(kMasterAddr) + ":61040");
  // Ours come first, so the container's own values may refer to them as $(NAME).
  std::vector<std::string> names;
  for (const json& entry : trainer["env"]) {
    names.push_back(entry["name"]);
  }
  EXPECT_THAT(std::vector<std::string>(names.end() - 3, names.end()),
              ElementsAre("TORCHELASTIC_RESTART_COUNT", "PET_RDZV_CONF", "PET_RDZV_ID"));
}

TEST(TrainerStoreTest, AContainerWithItsOwnTorchrunRendezvousGetsNoneOfOurs) {
  struct Case {
    std::string name;
    json env;
    bool ours;  // whether the operator still adds its endpoint, id and conf
  };
  const std::vector<Case> cases = {
      {"another backend", json::array({{{"name", "PET_RDZV_BACKEND"}, {"value", "static"}}}), false},
      {"its own endpoint", json::array({{{"name", "PET_RDZV_ENDPOINT"}, {"value", "$(MASTER_ADDR):29400"}}}), false},
      {"a backend from a ConfigMap key",
       json::array({{{"name", "PET_RDZV_BACKEND"},
                     {"valueFrom", {{"configMapKeyRef", {{"name", "launcher"}, {"key", "backend"}}}}}}}),
       false},
      {"c10d itself, the sidecar's endpoint kept", json::array({{{"name", "PET_RDZV_BACKEND"}, {"value", "c10d"}}}),
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Built built = Build(1, 0, [&](json& job) { SetTrainerEnv(job, c.env); });
    const json& trainer = built.Trainer();
    for (const char* name : {"PET_RDZV_BACKEND", "PET_RDZV_ENDPOINT", "PET_RDZV_ID", "PET_RDZV_CONF", "PET_LOCAL_ADDR"}) {
      const bool own = c.env[0]["name"] == name;
      EXPECT_EQ(EnvCount(trainer, name), own || c.ours ? 1 : 0) << name;
    }
    // env:// is not torchrun's rendezvous: it still connects to the sidecar's store.
    EXPECT_EQ(EnvValue(trainer, "TORCHELASTIC_USE_AGENT_STORE"), "True");
    EXPECT_EQ(EnvValue(trainer, "TORCHELASTIC_RESTART_COUNT"), "0");
  }
}

TEST(TrainerStoreTest, EachTrainerContainerIsJudgedByItsOwnEnv) {
  const Built built = Build(0, 0, [](json& job) {
    json& containers = job["spec"]["template"]["spec"]["containers"];
    containers.push_back({{"name", "launcher"},
                          {"image", "example/trainer:1"},
                          {"env", json::array({{{"name", "PET_RDZV_BACKEND"}, {"value", "static"}}})}});
  });
  EXPECT_EQ(EnvValue(built.Trainer(0), "PET_RDZV_BACKEND"), "c10d");
  EXPECT_EQ(EnvValue(built.Trainer(0), "PET_RDZV_ENDPOINT"), std::string(kMasterAddr) + ":61040");
  EXPECT_EQ(EnvValue(built.Trainer(1), "PET_RDZV_BACKEND"), "static");
  EXPECT_EQ(EnvValue(built.Trainer(1), "PET_RDZV_ENDPOINT"), "<unset>");
  EXPECT_EQ(EnvValue(built.Trainer(1), "TORCHELASTIC_USE_AGENT_STORE"), "True");
  // Only the first container declares the job's trainer-side ports.
  EXPECT_FALSE(built.Trainer(1).contains("ports"));
}

}  // namespace
}  // namespace ringleader::planner
