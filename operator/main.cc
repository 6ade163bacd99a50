// ringleader-operator: the TrainingJob operator. Subcommands: render and validate work offline
// on TrainingJob files.
#include <iostream>
#include <string>
#include <vector>

#include "operator/render_command.h"
#include "operator/run_command.h"

namespace {

constexpr std::string_view kHelp =
    "ringleader-operator: runs distributed training jobs (TrainingJob, ringleader.dev/v1alpha1)\n"
    "\n"
    "  ringleader-operator run [FLAGS]        run the operator against a cluster (run --help)\n"
    "  ringleader-operator validate -f FILE   check TrainingJobs, naming each bad field\n"
    "  ringleader-operator render -f FILE     print the status, Service, Secret, NetworkPolicy\n"
    "                                         and Pods the operator would create for them\n"
    "Options: --port-range FIRST-LAST (default 61000-65535), --sidecar-image IMAGE,\n"
    "         --cluster-domain DOMAIN (default cluster.local),\n"
    "         --default-host-network true|false (for jobs that leave hostNetwork unset; default false)\n";

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kHelp;
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (args[0] == "run") {
      return ringleader::cli::RunOperator(rest);
    }
    if (args[0] == "render") {
      return ringleader::cli::RunRender(rest, std::cout, std::cerr);
    }
    if (args[0] == "validate") {
      return ringleader::cli::RunValidate(rest, std::cout, std::cerr);
    }
  } catch (const std::exception& error) {
    std::cerr << "ringleader-operator: " << error.what() << "\n";
    return 2;
  }
  std::cerr << "ringleader-operator: unknown command \"" << args[0] << "\"\n" << kHelp;
  return 2;
}
