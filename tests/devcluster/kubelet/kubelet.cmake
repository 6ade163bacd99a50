# The node agent (the kubelet stand-in, one per Node) and cluster DNS: clients of the real API
# server only. Pod status, volumes from the API, one worker per Pod, the Node's heartbeat, pods/log,
# and the hosts file that ClusterDns keeps.
find_package(cpprestsdk REQUIRED)
ringleader_library(ringleader_devcluster_kubelet
  SOURCES pod_status.cc hosts_file.cc object_feed.cc api_volumes.cc pod_worker.cc pod_status_writer.cc
          node_status.cc node_heartbeat.cc log_request.cc log_server.cc streaming_front.cc cluster_dns.cc kubelet.cc
  DEPS ringleader_devcluster_containers ringleader_devcluster_devices ringleader_devcluster_pod_network
       ringleader_kube ringleader_api ringleader_plain_http ringleader_devcluster_control_plane
       ringleader_test_support cpprestsdk::cpprest OpenSSL::SSL OpenSSL::Crypto nlohmann_json::nlohmann_json
       Threads::Threads)

# The pure parts, table-style.
foreach(test hosts_file_test node_status_test log_request_test api_volumes_test pod_status_test)
  ringleader_test(${test}.cc DEPS ringleader_devcluster_kubelet ringleader_test_support)
endforeach()
# Against a real control plane, started once per program (about 5 s, and as long to stop): one
# ctest entry each, COST its whole run.
ringleader_test(kubelet_test.cc DEPS ringleader_devcluster_kubelet ringleader_devcluster_control_plane
  ringleader_test_support COST 40 ONE_ENTRY)
ringleader_test(cluster_dns_test.cc DEPS ringleader_devcluster_kubelet ringleader_devcluster_control_plane
  ringleader_test_support COST 15 ONE_ENTRY)
