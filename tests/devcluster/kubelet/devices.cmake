# The kubelet as the device plugin: which container gets which of a Node's devices (pure).
ringleader_library(ringleader_devcluster_devices
  SOURCES device_allocator.cc
  DEPS ringleader_api nlohmann_json::nlohmann_json)
ringleader_test(device_allocator_test.cc DEPS ringleader_devcluster_devices)
