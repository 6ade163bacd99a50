# The Pod network: namespaces on a bridge, built with `ip`; its tests skip unless run as root.
ringleader_library(ringleader_devcluster_pod_network SOURCES pod_network.cc DEPS Threads::Threads)
ringleader_test(pod_network_test.cc DEPS ringleader_devcluster_pod_network)
