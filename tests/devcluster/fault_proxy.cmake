# The fault proxy: an HTTPS proxy in front of a real kube-apiserver that injects API faults for
# the client's reliability tests. Included from tests/devcluster/CMakeLists.txt.
ringleader_library(ringleader_devcluster_fault_proxy
  SOURCES fault_proxy.cc faults.cc
  DEPS Boost::headers cpprestsdk::cpprest OpenSSL::SSL OpenSSL::Crypto nlohmann_json::nlohmann_json
       Threads::Threads)
# The proxy's connections are C++20 coroutines. Boost 1.74's Asio looks for them under clang only
# in <experimental/coroutine>, which libstdc++ lacks; clang 14 has the standard ones.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  target_compile_definitions(ringleader_devcluster_fault_proxy PRIVATE
    BOOST_ASIO_HAS_CO_AWAIT=1 BOOST_ASIO_HAS_STD_COROUTINE=1)
endif()

# Against a small HTTPS upstream in the test itself, driven by raw requests and the operator's
# own client; the control plane's library makes the throwaway CA and server certificates.
ringleader_test(fault_proxy_test.cc
  DEPS ringleader_devcluster_fault_proxy ringleader_devcluster_control_plane ringleader_kube
       OpenSSL::SSL OpenSSL::Crypto)
