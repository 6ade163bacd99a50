// The contract file: its JSON, and the write-then-rename that keeps a reader from seeing half.
#include "sidecar/service/contract_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

namespace ringleader::sidecar {
namespace {

using nlohmann::json;

// The contract is a dozen short members; anything larger is not one.
constexpr std::streamsize kMaxContractBytes = 64 * 1024;

std::string SystemError(const std::string& path, std::string_view action, int error) {
  return path + ": " + std::string(action) + ": " + std::strerror(error);
}

// The directory holding `path`, for the temporary file and the fsync after the rename.
std::string DirectoryOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool WriteAll(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t wrote = ::write(fd, content.data(), content.size());
    if (wrote < 0 && errno == EINTR) {
      continue;
    }
    if (wrote <= 0) {
      return false;
    }
    content.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return true;
}

// Reads the members of one document, naming the path and member in every error.
class Reader {
 public:
  Reader(const json& document, const std::string& path) : document_(document), path_(path) {}

  int Int(const char* name, int minimum, int maximum) const {
    const json& value = Member(name);
    if (!value.is_number_integer() || value.get<std::int64_t>() < minimum ||
        value.get<std::int64_t>() > maximum) {
      Fail(name, "must be an integer in " + std::to_string(minimum) + "-" + std::to_string(maximum));
    }
    return value.get<int>();
  }

  std::string String(const char* name) const {
    const json& value = Member(name);
    if (!value.is_string() || value.get<std::string>().empty()) {
      Fail(name, "must be a non-empty string");
    }
    return value.get<std::string>();
  }

  [[noreturn]] void Fail(const char* name, const std::string& what) const {
    throw ContractFileError(path_ + ": " + name + ": " + what);
  }

 private:
  const json& Member(const char* name) const {
    const auto it = document_.find(name);
    if (it == document_.end()) {
      Fail(name, "missing");
    }
    return *it;
  }

  const json& document_;
  const std::string& path_;
};

}  // namespace

json ContractToJson(const ResolvedContract& contract) {
  return {{"version", kContractFileVersion},
          {"masterAddr", contract.master_addr},
          {"masterPort", contract.master_port},
          {"rendezvousPort", contract.rendezvous_port},
          {"metricsPort", contract.metrics_port},
          {"sparePort", contract.spare_port},
          {"rank", contract.rank},
          {"worldSize", contract.world_size},
          {"localWorldSize", contract.local_world_size},
          {"nodeRank", contract.node_rank},
          {"jobName", contract.job_name},
          {"jobNamespace", contract.job_namespace},
          {"backend", contract.backend}};
}

void WriteContractFile(const std::string& path, const ResolvedContract& contract) {
  WriteFileAtomically(path, ContractToJson(contract).dump(2) + "\n");
}

ResolvedContract ReadContractFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ContractFileError(SystemError(path, "cannot read", errno));
  }
  std::string text(static_cast<std::size_t>(kMaxContractBytes) + 1, '\0');
  in.read(text.data(), kMaxContractBytes + 1);
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad()) {
    throw ContractFileError(path + ": cannot read");
  }
  if (static_cast<std::streamsize>(text.size()) > kMaxContractBytes) {
    throw ContractFileError(path + ": larger than " + std::to_string(kMaxContractBytes) + " bytes");
  }
  const json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!document.is_object()) {
    throw ContractFileError(path + ": not a JSON object");
  }
  const Reader reader(document, path);
  if (reader.Int("version", 0, std::numeric_limits<int>::max()) != kContractFileVersion) {
    reader.Fail("version", "must be " + std::to_string(kContractFileVersion));
  }
  ResolvedContract contract;
  contract.master_addr = reader.String("masterAddr");
  contract.master_port = reader.Int("masterPort", 1, 65535);
  contract.rendezvous_port = reader.Int("rendezvousPort", 1, 65535);
  contract.metrics_port = reader.Int("metricsPort", 0, 65535);
  contract.spare_port = reader.Int("sparePort", 1, 65535);
  contract.world_size = reader.Int("worldSize", 1, std::numeric_limits<int>::max());
  contract.rank = reader.Int("rank", 0, contract.world_size - 1);
  contract.local_world_size = reader.Int("localWorldSize", 1, contract.world_size);
  contract.node_rank = reader.Int("nodeRank", 0, contract.world_size - 1);
  contract.job_name = reader.String("jobName");
  contract.job_namespace = reader.String("jobNamespace");
  contract.backend = reader.String("backend");
  return contract;
}

void WriteFileAtomically(const std::string& path, std::string_view content) {
  const std::string directory = DirectoryOf(path);
  std::string pattern = directory + "/." + BaseName(path) + ".tmp.XXXXXX";
  std::vector<char> temp(pattern.begin(), pattern.end());
  temp.push_back('\0');
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) {
    throw ContractFileError(SystemError(path, "cannot create a temporary file beside it", errno));
  }
  const std::string temp_path(temp.data());
  const auto fail = [&](std::string_view action, int error, bool close_fd) {
    if (close_fd) {
      ::close(fd);
    }
    ::unlink(temp_path.c_str());
    throw ContractFileError(SystemError(path, action, error));
  };
  if (::fchmod(fd, 0644) != 0) {
    fail("cannot set the mode", errno, true);
  }
  if (!WriteAll(fd, content)) {
    fail("cannot write", errno == 0 ? EIO : errno, true);
  }
  if (::fsync(fd) != 0) {
    fail("cannot fsync", errno, true);
  }
  if (::close(fd) != 0) {
    fail("cannot close", errno, false);
  }
  if (::rename(temp_path.c_str(), path.c_str()) != 0) {
    fail("cannot rename into place", errno, false);
  }
  // The rename is durable only once the directory is.
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace ringleader::sidecar
