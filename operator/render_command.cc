// Offline planning of a TrainingJob file: validation errors, or the objects a fresh job gets.
#include "operator/render_command.h"

#include <openssl/rand.h>

#include <array>
#include <fstream>
#include <iostream>
#include <sstream>

#include "operator/api/trainingjob_schema.h"
#include "operator/api/validation.h"
#include "operator/planner/plan.h"
#include "operator/yaml/yaml_to_json.h"

namespace ringleader::cli {
namespace {

using nlohmann::json;

struct Options {
  std::string file;
  std::string port_range = "61000-65535";
  std::string sidecar_image = planner::PlannerConfig{}.sidecar_image;
  std::string cluster_domain = planner::PlannerConfig{}.cluster_domain;
  bool default_host_network = false;
};

constexpr std::string_view kUsage =
    "usage: ringleader-operator render|validate -f FILE [--port-range FIRST-LAST]\n"
    "                                   [--sidecar-image IMAGE] [--cluster-domain DOMAIN]\n"
    "                                   [--default-host-network true|false]\n";

bool ParseOptions(const std::vector<std::string>& args, Options* options, std::ostream& err) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&]() -> const std::string* {
      if (i + 1 >= args.size()) {
        err << "ringleader-operator: " << arg << " needs a value\n" << kUsage;
        return nullptr;
      }
      return &args[++i];
    };
    const std::string* v = nullptr;
    if (arg == "-f" || arg == "--filename") {
      if ((v = value()) == nullptr) return false;
      options->file = *v;
    } else if (arg == "--port-range") {
      if ((v = value()) == nullptr) return false;
      options->port_range = *v;
    } else if (arg == "--sidecar-image") {
      if ((v = value()) == nullptr) return false;
      options->sidecar_image = *v;
    } else if (arg == "--cluster-domain") {
      if ((v = value()) == nullptr) return false;
      options->cluster_domain = *v;
    } else if (arg == "--default-host-network") {
      if ((v = value()) == nullptr) return false;
      if (*v != "true" && *v != "false") {
        err << "ringleader-operator: --default-host-network must be true or false, got \"" << *v << "\"\n";
        return false;
      }
      options->default_host_network = *v == "true";
    } else {
      err << "ringleader-operator: unknown argument " << arg << "\n" << kUsage;
      return false;
    }
  }
  if (options->file.empty()) {
    err << "ringleader-operator: -f FILE is required\n" << kUsage;
    return false;
  }
  return true;
}

std::string RandomToken() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("OpenSSL could not produce random bytes for the job token");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char byte : bytes) {
    token += kHex[byte >> 4];
    token += kHex[byte & 0xf];
  }
  return token;
}

// Reads every TrainingJob document in the file; false (after saying why) on unreadable input.
bool LoadJobs(const std::string& file, std::vector<json>* jobs, std::ostream& err) {
  std::ifstream in(file);
  if (!in) {
    err << "ringleader-operator: cannot read " << file << "\n";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    for (json& document : yaml::ParseYamlDocuments(text.str())) {
      if (document.is_object() && document.value("kind", "") == api::kKind) {
        jobs->push_back(std::move(document));
      }
    }
  } catch (const std::exception& error) {
    err << "ringleader-operator: " << file << ": " << error.what() << "\n";
    return false;
  }
  if (jobs->empty()) {
    err << "ringleader-operator: " << file << " holds no TrainingJob\n";
    return false;
  }
  return true;
}

// Fills what the API server would: namespace, uid, generation, creation time.
void AsIfCreated(json& object, std::size_t index) {
  json& meta = object["metadata"];
  if (!meta.is_object()) {
    meta = json::object();
  }
  if (!meta.contains("namespace")) {
    meta["namespace"] = "default";
  }
  meta["uid"] = "00000000-0000-4000-8000-" + std::string(11 - std::to_string(index).size(), '0') +
                std::to_string(index) + "0";
  meta["generation"] = 1;
}

bool Configure(const Options& options, planner::PlannerConfig* config, std::ostream& err) {
  std::string error;
  const std::optional<ports::PortRange> range = ports::ParsePortRange(options.port_range, &error);
  if (!range) {
    err << "ringleader-operator: --port-range " << options.port_range << ": " << error << "\n";
    return false;
  }
  config->sidecar_image = options.sidecar_image;
  config->cluster_domain = options.cluster_domain;
  config->default_host_network = options.default_host_network;
  config->validation.port_range_first = range->first;
  config->validation.port_range_last = range->last;
  return true;
}

// Validates each job, printing "<namespace>/<name>: <field>: <problem>" lines; true if all valid.
// A field the CRD does not declare is an error ("spec.bogusField: unknown field"), as it is to
// kubectl apply.
bool ValidateAll(const std::vector<json>& jobs, const planner::PlannerConfig& config,
                 std::ostream& err) {
  bool valid = true;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    json object = jobs[i];
    AsIfCreated(object, i);
    api::TrainingJob job;
    // Unknown fields first, as kubectl's strict field validation refuses them before any rule.
    api::FieldErrors errors = api::UnknownTrainingJobFields(object);
    for (api::FieldError& error : api::ParseAndValidate(object, config.validation, &job)) {
      errors.push_back(std::move(error));
    }
    for (const api::FieldError& error : errors) {
      err << "TrainingJob " << job.Key() << ": " << error.ToString() << "\n";
    }
    valid = valid && errors.empty();
  }
  return valid;
}

}  // namespace

int RunValidate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Options options;
  planner::PlannerConfig config;
  std::vector<json> jobs;
  if (!ParseOptions(args, &options, err) || !Configure(options, &config, err) ||
      !LoadJobs(options.file, &jobs, err)) {
    return 2;
  }
  if (!ValidateAll(jobs, config, err)) {
    return 1;
  }
  out << options.file << ": " << jobs.size() << " valid TrainingJob(s)\n";
  return 0;
}

int RunRender(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Options options;
  planner::PlannerConfig config;
  std::vector<json> jobs;
  if (!ParseOptions(args, &options, err) || !Configure(options, &config, err) ||
      !LoadJobs(options.file, &jobs, err)) {
    return 2;
  }
  if (!ValidateAll(jobs, config, err)) {
    return 1;
  }
  ports::PortLedger ledger(*ports::ParsePortRange(options.port_range, nullptr));
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    json object = jobs[i];
    AsIfCreated(object, i);
    api::FieldErrors errors;
    planner::Observed observed;
    observed.job = api::TrainingJob::FromJson(object, &errors);
    observed.ledger = &ledger;
    observed.fresh_token = RandomToken();
    observed.now = std::chrono::system_clock::now();
    // As on a cluster that runs the job's gang-scheduling provider: the PodGroup and Pods it gets.
    observed.providers = {.coscheduling = true, .volcano = true, .kueue = true, .kubernetes = true};
    // Plan until the job has all it asks for, applying status and reserving ports as the
    // operator would; print the job with its status, then every object created for it.
    std::vector<json> created;
    for (int round = 0; round < 4; ++round) {
      const planner::Plan plan = planner::MakePlan(observed, config);
      if (plan.reserve_ports) {
        ledger.Reserve(observed.job.metadata.uid, *plan.reserve_ports);
      }
      for (const planner::Action& action : plan.actions) {
        if (const auto* status = std::get_if<planner::UpdateStatus>(&action)) {
          observed.job.status = api::StatusFromJson(status->status, &errors);
        } else if (const auto* create = std::get_if<planner::CreateObject>(&action)) {
          created.push_back(create->object);
          const std::string kind = create->object.value("kind", "");
          if (kind == "Service") {
            observed.service = create->object;
          } else if (kind == "Secret") {
            observed.secret = create->object;
          } else if (kind == "NetworkPolicy") {
            observed.network_policy = create->object;
          } else if (kind == "Pod") {
            observed.pods.push_back(create->object);
          }
        }
      }
      if (plan.empty()) {
        break;
      }
    }
    out << "---\n" << yaml::JsonToYaml(observed.job.ToJson());
    for (const json& child : created) {
      out << "---\n" << yaml::JsonToYaml(child);
    }
  }
  return 0;
}

}  // namespace ringleader::cli
