# Third-party libraries, all from Debian except prometheus-cpp (built by scripts/setup).
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
find_package(GTest REQUIRED)
# Boost.Asio (header-only) runs the rendezvous store's event loop.
find_package(Boost 1.74 REQUIRED)
# Gloo: the sidecar's CPU collectives over TCP.
find_package(Gloo CONFIG REQUIRED)
if(RINGLEADER_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()

# Debian's yaml-cpp 0.7 exports the plain target name; give it a namespaced alias.
if(TARGET yaml-cpp AND NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)
endif()

