# The kubelet's container side: launch specs from Pod JSON, container processes and probes.
ringleader_library(ringleader_devcluster_containers
  SOURCES container_spec.cc container_process.cc probe_runner.cc container_log.cc
  DEPS nlohmann_json::nlohmann_json OpenSSL::Crypto Threads::Threads)

foreach(test container_spec_test container_process_test probe_runner_test)
  ringleader_test(${test}.cc DEPS ringleader_devcluster_containers)
endforeach()
ringleader_test(container_log_test.cc DEPS ringleader_devcluster_containers ringleader_test_support)
