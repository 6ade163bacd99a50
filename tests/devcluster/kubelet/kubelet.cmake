# The kubelet itself: Pod status, the hosts file, one worker per Pod and the sync loop.
ringleader_library(ringleader_devcluster_kubelet
  SOURCES pod_status.cc hosts_file.cc pod_worker.cc kubelet.cc
  DEPS ringleader_devcluster_containers ringleader_devcluster_devices ringleader_devcluster_pod_network ringleader_devcluster_machinery
       ringleader_devcluster_store nlohmann_json::nlohmann_json Threads::Threads)
ringleader_test(kubelet_test.cc DEPS ringleader_devcluster_kubelet ringleader_test_support)
