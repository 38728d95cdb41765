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
#include <npuprof/session.hpp>
#if defined(NPUPROF_EXAMPLE_DATABASE)
#include <npuprof/database.hpp>
#endif

#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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
  return std::string("{\"streamId\": \"") + std::to_string(stream_id) +
         "\",\"count\": \"" + std::to_string(count) + "\",\"dataType\": \"" + data_type +
         "\",\"groupName\": \"hccl_world_group\",\"opName\": \"" + op + "\"}";
}

void sleep_us(int us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); }

// One rank: its own session, its steps, its trace.
int run_rank(const job& j, int rank, pthread_barrier_t* all_reduce) {
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
  if (all_reduce != nullptr) pthread_barrier_wait(all_reduce);  // the job starts when every rank is up

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
      if (all_reduce != nullptr) pthread_barrier_wait(all_reduce);
      npuprof_sim_launch_kernel(hccl, 300);
      aclrtSynchronizeStream(hccl);
    }
    session.step();
  }
  const auto dir = session.stop();
  std::printf("npuprof: rank %d of %d: trace written to %s\n", rank, j.ranks, dir.c_str());
  aclrtDestroyStream(compute);
  aclrtDestroyStream(hccl);
  return 0;
}

bool parse(int argc, char** argv, job& j) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (a == "--ranks") {
      j.ranks = std::atoi(v);
    } else if (a == "--steps") {
      j.steps = std::atoi(v);
    } else if (a == "--slow-rank") {
      j.slow_rank = std::atoi(v);
    } else if (a == "--only-rank") {
      j.only_rank = std::atoi(v);
    } else if (a == "--out") {
      j.out = v;
    } else {
      return false;
    }
  }
  return j.ranks > 0 && j.ranks <= 64 && j.steps > 0 && j.only_rank < j.ranks;
}

}  // namespace

int main(int argc, char** argv) {
  job j;
  if (!parse(argc, argv, j)) {
    std::fprintf(stderr,
                 "usage: %s [--ranks 1..64] [--steps N] [--slow-rank R] [--only-rank R] [--out DIR]\n", argv[0]);
    return 2;
  }
  if (j.only_rank >= 0) return run_rank(j, j.only_rank, nullptr);

  // The ranks' all-reduce: a barrier the processes share.
  void* shared = ::mmap(nullptr, sizeof(pthread_barrier_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 1;
  auto* barrier = static_cast<pthread_barrier_t*>(shared);
  pthread_barrierattr_t attr;
  pthread_barrierattr_init(&attr);
  pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(barrier, &attr, static_cast<unsigned>(j.ranks));
  std::fflush(stdout);
  for (int rank = 0; rank < j.ranks; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      const int rc = run_rank(j, rank, barrier);
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
