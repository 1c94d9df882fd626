// SPDX-License-Identifier: MIT
#pragma once
#include "blitz/detail/requires_cxx20.hpp"
// blitz::config: every tunable of the runtime, defaulting to the reference design's constants.

#include <chrono>
#include <csignal>
#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "blitz/detail/faults.hpp"
#include "blitz/stall.hpp"
#if BLITZ_FAULTS
#include "blitz/testing/runtime_faults.hpp"
#endif

namespace blitz {

// Raised by runtime construction when a configuration field is out of range. The message names
// the field, the value given and the allowed range.
class config_error : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// Where workers run (issue 5, INVARIANTS.md N1-N4).
//   none     no placement: threads float wherever the OS puts them (the default)
//   compact  fill one NUMA node before the next; inside a node one worker per core first, then
//            the cores' SMT siblings
//   scatter  spread over NUMA nodes, alternating packages, balanced (node counts differ by at
//            most one until a node is full); inside a node one worker per core first
//   list     topology_options::pus names each worker's PU
enum class placement_policy { none, compact, scatter, list };

// The topology and placement part of config (namespace level so it can be defaulted in place).
struct topology_options {
    // Where the machine description comes from: empty for this machine (hwloc discovery); an
    // hwloc synthetic string such as "pack:2 numa:2 core:8 pu:2"; or a file: *.xml (an hwloc
    // XML export, e.g. `lstopo m.xml`) or *.synth (a file holding one synthetic string). On a
    // synthetic or foreign topology nothing is bound: placement, memory nodes and victim order
    // are still computed and reported.
    std::string source;
    placement_policy policy = placement_policy::none;
    // policy list: one PU per worker, by operating-system index (as in taskset and
    // /proc/cpuinfo). workers = 0 takes the list's length.
    std::vector<unsigned> pus;
    // compact and scatter use only the first PU of each core (no SMT siblings).
    bool one_pu_per_core = false;
    // A worker that cannot bind to its PU is recorded in runtime::placement() instead of failing
    // the runtime's construction with topology_error.
    bool best_effort = false;
    // With a placement on a real machine with more than one NUMA node, each worker's state
    // (ring included) is allocated on its own node (N3).
    bool numa_memory = true;
    // Thieves try every worker on their own node (random start), then their package, then the
    // rest (N4). Needs a placement policy.
    bool numa_stealing = false;
    // Blocking-pool threads run on the process's CPU set even when workers are pinned (a thread
    // started from a pinned worker would otherwise inherit its one PU); with this set they run
    // on the union of the workers' PUs instead.
    bool pin_blocking_pool = false;
};

// The I/O driver's backend (issue 16, INVARIANTS O1; automatic's policy: issue 44).
//   automatic        the faster backend for the configuration: in io_mode = shared, epoll for
//                    sockets with file operations on an io_uring ring beside it (where io_uring
//                    sets up; the blocking pool otherwise), because this runtime's io_uring
//                    readiness path costs about twice epoll's CPU a request; in io_mode = busy,
//                    or with sqpoll_cpu set, what prefer_io_uring picks. The choice and why
//                    are in runtime_metrics::io_backend_reason
//   prefer_io_uring  io_uring if this kernel and process allow it (setup and the opcodes and
//                    features the driver needs), else epoll; the reason for falling back (the
//                    errno, and /proc/sys/kernel/io_uring_disabled) is in io_backend_reason
//   io_uring         io_uring or a config_error naming why it is unavailable
//   epoll            epoll, even where io_uring works (files on the blocking pool)
//   none             no I/O driver: sockets fail with a logic_error (a pure compute runtime)
enum class io_backend_kind { automatic, io_uring, epoll, none, prefer_io_uring };

// How idle workers wait (issue 20, IO.md 7.6).
//   shared  an idle worker parks: on its futex, or asleep in the I/O driver (the default)
//   busy    kernel-bypass style for machines given to one service: an idle worker does not
//           sleep while config::busy_poll_spin lasts; it spins over the run queues, the timers
//           and the I/O driver (on io_uring a look at the completion queue costs no syscall,
//           on epoll it is a zero-timeout epoll_wait), so the request path pays no futex wake
//           and no context switch. Needs a placement policy (pinned workers): spinning threads
//           the OS may stack on one CPU stall each other.
enum class io_mode_kind { shared, busy };
// "shared" or "busy", and back (config_error for any other name).
const char* to_string(io_mode_kind m) noexcept;
io_mode_kind parse_io_mode(const std::string& s);

// Which threads run a runtime's tasks (issue 47; Tokio's runtime flavours).
//   multi_thread    `workers` threads of its own, work stealing between them (the default)
//   current_thread  no thread of its own: every task, timer and I/O operation runs on the
//                   thread that calls block_on (or join on one of its handles), while it waits;
//                   spawns from other threads queue and wake it. One thread drives it at a time;
//                   another that calls block_on meanwhile waits for its task (the driver runs
//                   it) or for the runtime to be free. Needs workers 0 or 1, io_mode shared and
//                   no placement policy; its I/O goes through the shared ring (no ring per
//                   worker: the driving thread may change between calls).
enum class runtime_flavor { multi_thread, current_thread };
// "multi_thread" or "current_thread", and back (config_error for any other name).
const char* to_string(runtime_flavor f) noexcept;
runtime_flavor parse_flavor(const std::string& s);

// Runtime configuration. Defaults are the reference design's constants (seeds/004, "Key
// Constants"); tests and conformance negative controls change them. validate() is called by the
// runtime constructor.
struct config {
    // A config for a current-thread runtime (flavor current_thread, one worker: the caller).
    static config current_thread() {
        config c;
        c.flavor = runtime_flavor::current_thread;
        c.workers = 1;
        return c;
    }
    // Multi-threaded (the default) or current-thread: see runtime_flavor.
    runtime_flavor flavor = runtime_flavor::multi_thread;
    // Number of worker threads; 0 means one per CPU this process may use (its affinity mask and
    // its cgroup CPU quota, rounded up: blitz::read_cpu_budget), capped at max_workers.
    unsigned workers = 0;
    // Polls per tick before maintenance (BUDGET_PER_TICK, B1). Range [1, 65536].
    unsigned budget_per_tick = 128;
    // LIFO-slot polls allowed in a row (MAX_LIFO_POLLS_PER_TICK, L2; the count starts again at
    // each tick and after a task from another source). Range
    // [0, budget_per_tick - 1]: the cap must be reached within a tick, or a pair of tasks waking
    // each other through the slot starves the ring (L3). 0 disables the LIFO slot.
    unsigned lifo_polls_per_tick = 3;
    // Most tasks one steal may take (Q5). Range [1, 128].
    unsigned max_steal = 128;
    // Searcher limiting (I1): a worker may start searching only while 2 * searching < workers.
    bool limit_searchers = true;
    // Adaptive global-queue interval (G4, G5): bounds in polls, EWMA factor, target latency and
    // the initial average poll time. Bounds in [1, 255] with min <= max.
    unsigned global_interval_min = 8;
    unsigned global_interval_max = 255;
    double ewma_alpha = 0.1;  // (0, 1]
    std::chrono::nanoseconds global_target_latency = std::chrono::milliseconds(1);
    std::chrono::nanoseconds initial_avg_poll = std::chrono::microseconds(50);
    // Global batch fetch (G2): n = min(len, clamp(len / workers, min, max)). Range [1, 256].
    unsigned global_batch_min = 4;
    unsigned global_batch_max = 64;
    // Longest a parked worker sleeps before re-checking (PARK_TIMEOUT_NS, I5). Range [1 us, 1 h].
    std::chrono::nanoseconds park_timeout = std::chrono::milliseconds(10);
    // Bounded spinning before parking: the last searcher to find no work keeps searching for
    // up to park_spin before it parks. It still counts as a searcher, so a producer that queues
    // work meanwhile wakes nobody (I3) and the spinner takes the work itself; every other worker
    // parks at once. It saves the futex wakes of work that arrives in short gaps (a plain thread
    // feeding the runtime), at the price of a CPU kept busy while it spins. With
    // park_spin_adaptive (the default) park_spin is the most a spin lasts, and each worker
    // spins for a budget it learns from its idle spells, as KVM's halt polling does: two spells
    // in a row that ended with work within park_spin, after the spin gave up, double it (from
    // 4 us); a longer spell halves it (to 0 below 4 us), so a runtime whose work comes far
    // apart soon stops spinning. Without it every spin lasts park_spin. 0 (the default) parks
    // at once; results/epyc-2c-kvm/park-spin and results/epyc-2c-kvm/adaptive-spin have the
    // measurements behind the default. Range [0, 1 ms].
    std::chrono::nanoseconds park_spin = std::chrono::nanoseconds::zero();
    bool park_spin_adaptive = true;
    // Probe events (blitz/probe.hpp) recorded per worker for the conformance checkers. Off by
    // default: an off probe costs one predictable branch. probe_capacity events are kept per
    // worker between takes (power of two, [1024, 2^24]); further events are dropped and counted.
    bool probes = false;
    unsigned probe_capacity = 1u << 16;
    // Which probe kinds are recorded when probes are on: bit k stands for probe_kind k (all by
    // default). A checker that reads a few kinds keeps only those, so a wide runtime's streams
    // hold what it needs instead of every poll and tick.
    std::uint32_t probe_kinds = ~std::uint32_t{0};
    // Paused-time test mode (like Tokio's start_paused): the runtime's clock stands still and
    // moves only by runtime::advance(), which fires every timer it passes before returning.
    bool start_paused = false;
    // Seed of the workers' random victim choice (Q7, N4): worker i uses a mix of (seed + i).
    // 0 (the default) draws one from the clock and the runtime's address. A fixed seed makes
    // steal decisions replayable as far as thread timing allows (the conformance suite passes
    // its run's --seed).
    std::uint64_t seed = 0;
    // Worker thread names are this prefix plus the worker index (shown by top, gdb, perf).
    std::string thread_name = "blitz-w";
    // Cooperative budget (B2): awaits that complete at once on a ready resource (mutex,
    // semaphore, channel) count against this many per poll; past it the await yields first, so a
    // task looping on an always-ready channel cannot keep its worker. 0 disables it. Range
    // [0, 65536].
    unsigned coop_budget_per_poll = 128;
    // An exception that ends a task nobody can observe (detached, or its join handle dropped
    // before it finished) goes here, on the worker that ran the task; exceptions the handler
    // throws are ignored. Empty (the default): the exception is printed to stderr, once.
    std::function<void(std::exception_ptr)> on_unhandled_exception;
    // After the handler (or the print), std::abort() the process.
    bool abort_on_unhandled_exception = false;
    // Stall detector (issue 46): a watchdog thread samples the workers and reports a worker
    // whose current poll has run at least this long (stuck in user code, in a blocking call, or
    // spinning in busy mode), once per stall, with the task, its spawn site and the worker's
    // native stack (stall_report). It samples every stall_threshold / 16 (at least 1 ms), so a
    // stall is reported within stall_threshold plus one sample period and the stack signal's
    // round trip. It reads only the counters a poll already keeps; nothing is added to the
    // poll. 0 turns it off (no thread). Range 0 or [1 ms, 1 h].
    std::chrono::nanoseconds stall_threshold = std::chrono::milliseconds(50);
    // Where reports go, on the watchdog thread (exceptions it throws are ignored). Empty (the
    // default): stall_report::to_string() to stderr. Rate-limited either way: 16 reports at
    // once, then one a second; dropped reports are counted (runtime_metrics::stalls_suppressed,
    // and the next report's suppressed_before).
    std::function<void(const stall_report&)> on_stall;
    // The signal sent to a stalled worker to take its stack (its handler only copies frames and
    // chains to any handler installed before it for other threads). It interrupts a blocking
    // call the stalled poll is in: read(2) and the like resume (SA_RESTART), but calls Linux
    // never restarts (nanosleep, usleep, poll, epoll_wait) return early with EINTR, as under
    // Go's preemption signal; std::this_thread::sleep_for retries. SIGURG by default, as Go's
    // preemption uses: the kernel sends it only for TCP urgent data to an owner set with
    // F_SETOWN, and its default action is to ignore it. 0: no stacks (and no task ids).
    // Range 0 or [1, SIGRTMAX], not SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT.
    int stall_signal = SIGURG;
    // The inspect socket (issue 46; `blitz top --attach`, docs/guide/debugging.md): a Unix
    // stream socket at this path, served by one thread, answers one request per connection:
    // "metrics" (JSON), "openmetrics" (the text format, for Prometheus scrapers), "dump" (the
    // task dump as JSON), "dump text" and "lost" (runtime::find_lost's report); "GET /metrics"
    // and the like get the same as HTTP (curl --unix-socket, a scraper's proxy). The socket file is
    // made 0600 and each peer's credentials are checked: a process of another user (root included)
    // is refused. Empty (the default): no socket, no thread. "auto":
    // $XDG_RUNTIME_DIR/blitz-<pid>.sock, or /tmp/blitz-<uid>/blitz-<pid>.sock (a 0700 directory)
    // without it, which is where `blitz top --attach <pid>` looks. A path that exists and answers
    // is refused (config_error); a stale socket file is replaced. At most 107 bytes (sun_path).
    std::string inspect_socket;
    // A signal that writes the task dump (runtime_dump::to_string) to stderr, from the same
    // thread (its handler only wakes it). 0 (the default): none. SIGQUIT would replace the
    // default core dump; a real-time signal or SIGUSR1/SIGUSR2 are the usual choices. Range 0
    // or [1, SIGRTMAX], not SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, and not
    // stall_signal.
    int dump_signal = 0;
    // Blocking pool (spawn_blocking, X1): threads are created on demand up to this cap and exit
    // after keep-alive without work. Cap in [1, 65536]; keep-alive in [1 ms, 1 h].
    unsigned blocking_threads_max = 512;
    std::chrono::nanoseconds blocking_keep_alive = std::chrono::seconds(10);
    // Placement, pinning, NUMA memory and NUMA-aware stealing (see topology_options).
    topology_options topology;
    // The I/O driver (see io_backend_kind). io_entries: the io_uring submission queue size, a
    // power of two in [8, 32768]; epoll takes at most that many events per turn.
    io_backend_kind io_backend = io_backend_kind::automatic;
    unsigned io_entries = 256;
    // Pooled receives (stream_socket::read_pooled): on io_uring, a provided-buffer ring of
    // io_pool_buffers buffers of io_pool_buffer_size bytes that multishot receives fill (the
    // kernel picks a buffer only when data arrives, so idle connections pin none). Count: 0
    // (no ring: pooled reads are readiness reads into a heap buffer, as on epoll) or a power of
    // two in [2, 32768]; size in [64, 1 MiB]. io_pool_queue: how many filled buffers a
    // descriptor may hold before its multishot receive is paused (R7 backpressure), [1, 4096].
    unsigned io_pool_buffers = 256;
    unsigned io_pool_buffer_size = 4096;
    unsigned io_pool_queue = 16;
    // Child processes (blitz/process.hpp) are awaited on a pidfd registered with the I/O driver;
    // true forces the SIGCHLD path (a signal stream and waitpid) that kernels without pidfds use.
    bool process_wait_sigchld = false;
    // File operations (blitz/fs.hpp) run as io_uring operations when the driver is io_uring and
    // its probe found the opcode (each operation on its own); false runs every one on the
    // blocking pool, as the epoll backend does.
    bool fs_io_uring = true;
    // See io_mode_kind. busy_poll_spin: how long a busy worker keeps spinning after it last
    // found work before it parks as in shared mode; busy_poll_forever (the default) never
    // parks. Range [1 us, 1 h] or busy_poll_forever; ignored in shared mode.
    io_mode_kind io_mode = io_mode_kind::shared;
    static constexpr std::chrono::nanoseconds busy_poll_forever = std::chrono::nanoseconds::max();
    std::chrono::nanoseconds busy_poll_spin = busy_poll_forever;
    // On io_uring (either mode): each worker gets its own ring for the completion operations
    // it starts (owned reads and writes, stream reads by multishot receive into the ring's
    // buffer pool, pooled reads, file operations): SINGLE_ISSUER with DEFER_TASKRUN (Linux 6.1;
    // COOP_TASKRUN on 6.0), its descriptor registered with the worker, a sparse registered file
    // table. Readiness and operations of plain threads stay on the shared ring (readiness polls
    // armed when a task first waits). Only the owner can reap its ring: a busy worker with
    // operations in flight keeps spinning past busy_poll_spin, a parking one sleeps in its ring
    // (an unpark reaches it through an eventfd polled there). A kernel that refuses the rings
    // leaves every worker on the shared ring (runtime_metrics::io_rings says why). false: the
    // shared ring only (reads into caller spans are readiness reads).
    bool io_worker_rings = true;
    // With worker rings: a stream's write_all (up to 64 KiB left to send) goes out as a SEND
    // operation staged on the writing worker's ring, its bytes copied into a buffer the
    // operation owns, submitted with the tick's other operations by one io_uring_enter; the
    // task waits for the completion, so write_all still returns once the kernel has every byte.
    // Off by default: on the loopback TCP rows (results/epyc-2c-kvm/batched-sends) it saved
    // syscalls but not time against a send syscall per write, whose kernel work dominates.
    bool io_batched_sends = false;
    // On io_uring: a write_owned of at least this many bytes is sent by SEND_ZC (Linux 6.0),
    // the kernel reading the owned buffer in place instead of copying it, and the buffer comes
    // back once the kernel's notification says it is done with it. 0 (the default): never.
    // Zero-copy pays only on a real NIC and for large payloads: on loopback the kernel copies
    // anyway and the notification is pure cost (0.11x SEND at 4 KiB, 0.5x at 1 MiB:
    // results/epyc-2c-kvm/send-zc; bench/tools/send_zc_bench measures it on your host).
    std::size_t io_send_zc_threshold = 0;
    // On io_uring: a read_owned or write_owned started under blitz::timeout() (or timeout_at) is
    // submitted with a linked timeout at the same deadline, so the kernel ends it at the
    // deadline by itself and the timeout's timer finds it ended instead of sending a cancel (a
    // cross-thread hand-off when another worker's ring runs it). Ignored with start_paused (the
    // kernel cannot keep a virtual clock's deadlines). Off by default: each operation that does
    // not time out pays a second SQE, a second completion and a kernel timer (0.90x the round
    // trips of a ping-pong under timeout(1 s)), and on one worker the cancel it saves costs no
    // extra io_uring_enter anyway (results/epyc-2c-kvm/linked-timeouts).
    bool io_linked_timeouts = false;
    // io_uring submission-queue polling (IORING_SETUP_SQPOLL with SQ_AFF): a kernel thread bound
    // to this OS CPU submits what the workers stage, so a submission costs no syscall. -1 (the
    // default): off. Needs a placement policy, and the CPU must run no worker (a polling
    // kernel thread sharing a worker's CPU stalls it, IO.md 4.4): the runtime's constructor
    // refuses it with a config_error otherwise, and when the backend is forced to epoll. With
    // io_backend automatic falling back to epoll it is not applied
    // (runtime_metrics::io_backend_reason says so).
    int sqpoll_cpu = -1;
    // NIC busy polling (IO.md 4.2 and 7.6); both 0 (off) by default, range [0, 100 ms].
    //   napi_busy_poll    the I/O driver's waits first busy-poll the NIC receive queues (NAPI
    //                     contexts) its sockets' packets came through, for up to this long:
    //                     IORING_REGISTER_NAPI on io_uring, EPIOCSPARAMS on epoll (Linux 6.9).
    //                     A kernel that refuses it is a config_error naming the errno. The
    //                     kernel polls only inside a wait that would sleep (and in an SQPOLL
    //                     thread), so a busy-mode worker gets it only once it parks.
    //   socket_busy_poll  SO_BUSY_POLL on every TCP and UDP socket registered with the runtime
    //                     (accepted, connected or bound): a receive on it first polls its NIC
    //                     queue. A kernel that guards raising it above net.core.busy_read
    //                     refuses it without CAP_NET_ADMIN (EPERM; 6.18 does not); a socket
    //                     the kernel refuses is counted, not an error
    //                     (runtime_metrics::socket_busy_poll_failed and _error).
    // Both act on NIC receive queues only: loopback has no NAPI context, so over loopback
    // neither changes anything (docs/guide/io.md).
    std::chrono::microseconds napi_busy_poll{0};
    std::chrono::microseconds socket_busy_poll{0};

    // Deliberate faults and hooks for the conformance suite's negative controls and for tests.
    // Each fault breaks one invariant on purpose; never set them in production.
#if BLITZ_FAULTS
    // Negative controls of the conformance suite (blitz/testing/runtime_faults.hpp); only in
    // the faults build (blitz::runtime_faults).
    testing::runtime_faults debug;
#endif

    // The widest worker set the parked bitmap supports (I7): 64 words of 64 workers under one
    // summary word.
    static constexpr unsigned max_workers = 4096;
    // Capacity of each worker's local ring (Q1).
    static constexpr unsigned ring_capacity = 256;

    // Throws config_error naming the first field out of range.
    void validate() const;
    // `workers` with 0 resolved to the CPUs this process may use (read_cpu_budget().count,
    // capped at max_workers). With a placement policy the runtime resolves 0 from the topology
    // instead (the eligible PUs, capped by the cgroup quota; runtime::num_workers).
    unsigned resolved_workers() const;
};

}  // namespace blitz
