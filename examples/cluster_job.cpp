// A simulated distributed job, for the Ascend cluster analysis: eight ranks
// (processes, as a launcher starts them) each run training steps of compute
// and an all-reduce, one rank's compute slower than the others'. Each rank
// records its own trace and database, named for its rank, and marks its
// communication as torch_npu marks HCCL operations: a range on the
// communication stream whose message is the operation as JSON. msprof-analyze
// then finds every rank's operations (mstx2commop) and times (mstx_sum):
//
//     build/examples/cluster_job [--ranks 8] [--steps 5] [--slow-rank 3] [--out DIR] [--only-rank R]
//     msprof-analyze cluster -d DIR -m mstx_sum
//     msprof-analyze cluster -d DIR -m mstx2commop
//
// The ranks wait for each other in the all-reduce, so the slow rank is the
// one whose all-reduce waits least. --only-rank runs one rank alone (a rank
// profiled again). Traces go under ./npuprof_traces/cluster unless --out or
// NPUPROF_OUTPUT_DIR says otherwise.
//
// There is no NPU here: the device work runs on npuprof's SIMULATED Ascend
// runtime, and the all-reduce is a barrier between the processes.

// npuprof's implementation comes from src/implementation.cpp, compiled once
// for the examples that link it (examples/meson.build).
#include <npuprof/session.hpp>
#if defined(NPUPROF_EXAMPLE_DATABASE)
#include <npuprof/database.hpp>
#endif

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <system_error>
#include <thread>

#include "simulated_acl.h"

struct train {
  static constexpr const char* name = "train";
};
struct comm {
  static constexpr const char* name = "communication";
};

namespace {

struct job {
  int ranks = 8;
  int steps = 5;
  int slow_rank = 3;
  int only_rank = -1;
  std::string out;
};

// An HCCL operation as torch_npu writes it into its mstx range: the message
// the cluster analysis turns into a communication operation.
// `stream_id` numbers the stream as the runtime does, the same on every rank.
std::string hccl_message(const char* op, int stream_id, long count, const char* data_type) {
  return std::string("{\"streamId\": \"") + std::to_string(stream_id) + "\",\"count\": \"" + std::to_string(count) +
         "\",\"dataType\": \"" + data_type + "\",\"groupName\": \"hccl_world_group\",\"opName\": \"" + op + "\"}";
}

void sleep_us(int us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); }

// The ranks' meeting point, in memory the processes share. A rank that
// waits longer than a minute gives up: another rank died.
struct barrier {
  int ranks = 0;
  std::atomic<int> arrived{0};
  std::atomic<int> generation{0};

  bool wait() {
    const int gen = generation.load();
    if (arrived.fetch_add(1) + 1 == ranks) {
      arrived.store(0);
      generation.fetch_add(1);
      return true;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (generation.load() == gen) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      sleep_us(20);
    }
    return true;
  }
};

// One rank: its own session, its steps, its trace.
int run_rank(const job& j, int rank, barrier* all_reduce) {
  npuprof::config cfg = npuprof::config::from_env();
  cfg.rank = rank;
  cfg.world_size = j.ranks;
  if (!j.out.empty()) cfg.output_dir = j.out;
  if (std::getenv("NPUPROF_OUTPUT_DIR") == nullptr && j.out.empty()) cfg.output_dir = "npuprof_traces/cluster";
  if (cfg.acl_library.empty()) cfg.acl_library = npuprof_sim_library_path();
#if defined(NPUPROF_EXAMPLE_DATABASE)
  cfg.export_type = {"text", "db"};
#endif
  npuprof::session session{cfg};
  // The job's layout, as training frameworks give it: data parallel only.
  session.add_metadata("distributed_args", {{"tensor_model_parallel_size", 1},
                                            {"pipeline_model_parallel_size", 1},
                                            {"data_parallel_size", j.ranks},
                                            {"context_parallel_size", 1},
                                            {"expert_model_parallel_size", 1},
                                            {"sequence_parallel", false},
                                            {"rank", rank},
                                            {"world_size", j.ranks}});
  session.start();
  npuprof::name_thread("rank " + std::to_string(rank));
  aclrtStream compute = nullptr, hccl = nullptr;
  aclrtCreateStream(&compute);
  aclrtCreateStream(&hccl);
  npuprof::name_stream(compute, "compute");
  npuprof::name_stream(hccl, "hccl");
  const std::string all_reduce_op = hccl_message("HcclAllreduce", 1, 1 << 20, "fp16");
  if (all_reduce != nullptr && !all_reduce->wait()) return 3;  // the job starts when every rank is up

  bool lost = false;
  for (int step = 0; step < j.steps; ++step) {
    {
      npuprof::scoped_range<train> r{"prepare batch"};  // host only
      sleep_us(200);
    }
    npuprof::mark<train>("forward_start", compute);  // a NAME_start/NAME_stop pair
    {
      npuprof::scoped_range<train> r{"matmul", compute};
      npuprof_sim_launch_kernel(compute, rank == j.slow_rank ? 6000 : 2000);
    }
    npuprof::mark<train>("forward_stop", compute);
    aclrtSynchronizeStream(compute);  // the gradients are ready
    {
      // The device waits in the all-reduce until every rank has come.
      npuprof::scoped_range<comm> r{all_reduce_op, hccl};
      if (all_reduce != nullptr && !all_reduce->wait()) {
        std::fprintf(stderr, "cluster job: rank %d: another rank is gone; stopping\n", rank);
        lost = true;
        break;
      }
      npuprof_sim_launch_kernel(hccl, 300);
      aclrtSynchronizeStream(hccl);
    }
    session.step();
  }
  const auto dir = session.stop();
  std::printf("npuprof: rank %d of %d: trace written to %s\n", rank, j.ranks, dir.c_str());
  aclrtDestroyStream(compute);
  aclrtDestroyStream(hccl);
  return lost ? 3 : 0;
}

// A rank, its errors said and turned into its exit status.
int run_rank_safely(const job& j, int rank, barrier* all_reduce) {
  try {
    return run_rank(j, rank, all_reduce);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cluster job: rank %d: %s\n", rank, e.what());
    return 1;
  }
}

// `text` as a whole number in [low, high].
bool number(const char* text, int low, int high, int& out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < low || v > high) return false;
  out = static_cast<int>(v);
  return true;
}

bool parse(int argc, char** argv, job& j) {
  bool slow_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    bool ok = true;
    if (a == "--ranks") {
      ok = number(v, 1, 64, j.ranks);
    } else if (a == "--steps") {
      ok = number(v, 1, 100000, j.steps);
    } else if (a == "--slow-rank") {
      ok = number(v, 0, 63, j.slow_rank);
      slow_given = true;
    } else if (a == "--only-rank") {
      ok = number(v, 0, 63, j.only_rank);
    } else if (a == "--out") {
      j.out = v;
      ok = !j.out.empty();
    } else {
      ok = false;
    }
    if (!ok) return false;
  }
  if (!slow_given && j.slow_rank >= j.ranks) j.slow_rank = j.ranks - 1;
  return j.slow_rank < j.ranks && j.only_rank < j.ranks;
}

}  // namespace

int main(int argc, char** argv) {
  job j;
  if (!parse(argc, argv, j)) {
    std::fprintf(stderr,
                 "usage: %s [--ranks 1..64] [--steps 1..100000] [--slow-rank R] [--only-rank R] [--out DIR]\n"
                 "       (R: a rank below --ranks, 8 by default)\n",
                 argv[0]);
    return 2;
  }
  if (!j.out.empty()) {  // checked once, before the ranks start
    std::error_code ec;
    std::filesystem::create_directories(j.out, ec);
    if (ec || !std::filesystem::is_directory(j.out)) {
      std::fprintf(stderr, "cluster job: cannot use '%s' for the traces: %s\n", j.out.c_str(),
                   ec ? ec.message().c_str() : "not a directory");
      return 1;
    }
  }
  if (j.only_rank >= 0) return run_rank_safely(j, j.only_rank, nullptr);

  // The ranks' all-reduce: a barrier the processes share.
  void* shared = ::mmap(nullptr, sizeof(barrier), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 1;
  auto* all_reduce = new (shared) barrier;
  all_reduce->ranks = j.ranks;
  std::fflush(stdout);
  for (int rank = 0; rank < j.ranks; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      const int rc = run_rank_safely(j, rank, all_reduce);
      std::fflush(stdout);
      ::_exit(rc);
    }
  }
  int failed = 0;
  for (int rank = 0; rank < j.ranks; ++rank) {
    int status = 0;
    if (::wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  if (failed != 0) std::fprintf(stderr, "cluster job: %d of %d ranks failed\n", failed, j.ranks);
  return failed == 0 ? 0 : 1;
}
